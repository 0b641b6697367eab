import pytest
from squall.plugins.transport_nng import NngTransport
from squall.testing.contracts.transport import TransportContract

class TestNng(TransportContract):
    @pytest.fixture
    def transport_factory(self):
        return NngTransport
