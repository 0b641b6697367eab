import pytest
from squall.plugins.transport_zmq import ZmqTransport
from squall.testing.contracts.transport import TransportContract

class TestZmq(TransportContract):
    @pytest.fixture
    def transport_factory(self):
        return ZmqTransport
