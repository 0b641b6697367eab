import pytest
from squall.plugins.transport_grpc import GrpcTransport
from squall.testing.contracts.transport import TransportContract

class TestGrpc(TransportContract):
    @pytest.fixture
    def transport_factory(self):
        return GrpcTransport
