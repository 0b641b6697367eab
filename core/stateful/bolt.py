"""The bolt class users subclass for exactly-once state: :class:`StatefulBolt`."""
from __future__ import annotations

from squall.api.component import Bolt
from squall.stateful.state import KeyValueState

__all__ = ["StatefulBolt"]


class StatefulBolt(Bolt):
    """A bolt whose :class:`~squall.stateful.state.KeyValueState` is checkpointed (API.md
    section 11).

    ``init_state(state)`` is called before the first tuple and again after every rollback,
    with the state as of the last committed checkpoint; keep the object and change it from
    ``process``. Tuples arrive one by one in ``process`` (``process_batch`` is not used).
    An input is acked only once the checkpoint holding its changes has committed (with
    ``auto_ack``, or when the bolt calls ``ack``). A tuple failed in ``process`` (it raised,
    or the bolt called ``fail``) is replayed by its spout, and the changes made since the
    last checkpoint are dropped: the task returns to the last committed state (``init_state``
    again) and the inputs since then are replayed too, as Storm rolls a stateful bolt back
    when its executor dies. ``process_tick`` is called only while the task has its state: a
    tick that comes before the first ``init_state`` or while a rollback is due is dropped,
    and an exception in it rolls the task back as one in ``process`` does. The topology
    needs ackers (``topology.acker.executors`` not 0).
    """

    def init_state(self, state: KeyValueState) -> None:
        """Take the state (see the class docstring). Called on the worker's loop thread."""
