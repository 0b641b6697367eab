"""squall's built-in serializers.

* :mod:`squall.serializers.msgpack`: ``msgpack``, the default;
* :mod:`squall.serializers.json`: ``json``, readable and slower.

Both are registered in the ``squall.serializers`` entry-point group like any third-party
serializer, and are chosen the same way, by name, with ``squall.serializer``.
"""
