"""``squall.transport.grpc.max.message.mb`` takes any number of MiB above 0 and below 2048,
fractions included, as the grpc transport's check and its error say."""
from __future__ import annotations

import pytest

from squall import config
from squall.errors import ConfigError
from squall.plugins.transport_grpc.hooks import max_message_bytes

KEY = "squall.transport.grpc.max.message.mb"


@pytest.mark.parametrize("value", [0.5, 1, 256, 2047.5])
def test_a_number_of_mib_in_range_is_accepted(value: float) -> None:
    config.validate({"squall.transport": "grpc", KEY: value}, warn=False)
    assert max_message_bytes({KEY: value}) == int(value * (1 << 20))


@pytest.mark.parametrize("value", [0, -1, 2048, "big", True])
def test_anything_else_is_one_clear_error(value: object) -> None:
    with pytest.raises(ConfigError, match=KEY.replace(".", r"\.")):
        config.validate({KEY: value}, warn=False)


def test_a_fractional_limit_reaches_the_transport() -> None:
    from squall.plugins.transport_grpc import GrpcTransport
    with GrpcTransport({KEY: 0.5}) as transport:
        limit = transport.max_frame_bytes
        assert limit is not None and (1 << 19) - 8192 < limit < 1 << 19
