"""Generated gRPC/protobuf code for ``plugins/transport_grpc/transport.proto``. Do not edit.

Regenerate from the repository root with::

    .venv/bin/python -m grpc_tools.protoc -Iplugins/transport_grpc \
        --python_out=plugins/transport_grpc/_proto --grpc_python_out=plugins/transport_grpc/_proto \
        --pyi_out=plugins/transport_grpc/_proto plugins/transport_grpc/transport.proto

then change ``import transport_pb2`` in ``transport_pb2_grpc.py`` to
``from squall.plugins.transport_grpc._proto import transport_pb2``. The generated code needs
``protobuf>=7.35.1`` and ``grpcio>=1.85.1`` (grpcio-tools 1.85.1 generated it).
"""
