"""squall's built-in acker.

* :mod:`squall.ackers.xor`: ``xor``, Storm's constant-memory XOR tracking of tuple trees.

It is registered in the ``squall.ackers`` entry-point group like any third-party acker, and is
chosen the same way, by name, with ``squall.acker``.
"""
