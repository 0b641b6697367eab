"""squall's built-in transport and the wire framing that transports share.

* :mod:`squall.transports.local`: the in-process transport ``local`` (LocalCluster's default);
* :mod:`squall.transports.framing`: the frame format for a batch of ``(task_id, payload)``
  messages, public API for transport plugins (the zmq, nng and grpc transports use it).

``local`` is registered in the ``squall.transports`` entry-point group like any third-party
transport, and is chosen the same way, by name, with ``squall.transport``.
"""
