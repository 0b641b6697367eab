"""The grouping SPI (``squall.groupings``; every built-in grouping and any named in
``custom_grouping``).

A grouping's life, once per emitting task and subscription, all on the thread that builds the
emitting task's routes (the worker's loop):

1. constructed with no arguments (from its entry point), or copied from the instance given to
   ``custom_grouping``;
2. :meth:`Grouping.configure` with the :class:`GroupingDeclaration` (declared fields, the
   subscribed stream's fields, the topology's conf);
3. :meth:`Grouping.prepare` with the target tasks;
4. per tuple: :meth:`Grouping.choose_tasks`, or, for a :class:`SingleTargetGrouping`, the fast
   paths :meth:`~SingleTargetGrouping.choose_one` / :meth:`~SingleTargetGrouping.choose_many`;
5. for a :class:`LoadAwareGrouping`, :meth:`~LoadAwareGrouping.refresh_load` every
   ``LOAD_INTERVAL`` (0.5 s) with what the worker knows of its targets' load.

The optional parts are declared by subclassing :class:`SingleTargetGrouping` (a grouping that
does not is asked ``choose_tasks`` for every tuple, whatever other methods it has) and
:class:`LoadAwareGrouping` (which, as the README has always promised, also counts any grouping
with a ``refresh_load`` method: ``isinstance(g, LoadAwareGrouping)`` says so).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from squall.api.groupings import LoadMapping


@dataclass(frozen=True)
class GroupingDeclaration:
    """What the topology declared about one subscription, as :meth:`Grouping.configure` is
    told it.

    ``fields``: the fields the grouping was declared with (``fields_grouping``,
    ``partial_key_grouping``), in declaration order; empty for the others.
    ``source_fields``: the fields of the subscribed stream, in its declared order (the
    positions of a tuple's ``values``); every one of ``fields`` is among them (checked when the
    topology is built). ``conf``: the topology's effective configuration, read only.
    """

    fields: tuple[str, ...] = ()
    source_fields: tuple[str, ...] = ()
    conf: Mapping[str, Any] = field(default_factory=dict)


class Grouping(ABC):
    """Chooses the target tasks of each tuple on one subscribed stream.

    Constructed with no arguments when named by entry point (or passed as an instance, which
    is copied per emitting task); ``configure`` then ``prepare`` are called once per emitting
    task before any tuple, from the worker's loop; ``choose_tasks`` is called per tuple on the
    hot path, from the thread that runs the emitting task (the worker's loop, or the task's
    own thread for a ``dedicated_thread`` component), and must be cheap and non-blocking.
    """

    #: Whether the runtime checks every choice against ``target_tasks``: a task id that is
    #: none of them (another component's, an index, None) makes the emit raise, as a
    #: ``choose_tasks`` that raises does, and is never delivered. It costs a call and a set
    #: lookup a tuple; squall's own groupings, which choose among their targets by
    #: construction, turn it off, and so may any grouping that does the same. Read once,
    #: after ``prepare``.
    check_choices: bool = True

    def configure(self, declaration: GroupingDeclaration) -> None:
        """Take what the topology declared (optional; the default ignores it).

        Called once, before :meth:`prepare`, from the worker's loop. A grouping that needs
        the declared fields, the stream's fields or settings from the conf reads them here.
        May raise :class:`squall.TopologyError` or :class:`squall.ConfigError` for a
        declaration it cannot serve. It is called once more at submit, with the submitted
        conf, so such a topology is refused there with one line naming the subscription.
        """

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        """``stream`` is ``(component_id, stream_id)``; ``target_tasks`` sorted task ids.

        Called once per emitting task, after :meth:`configure`, before any tuple.
        """
        self.target_tasks = list(target_tasks)

    @abstractmethod
    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        """Return the task ids (a subset of ``target_tasks``) that receive the tuple."""


class SingleTargetGrouping(Grouping):
    """A grouping that sends every tuple to exactly one task, and so gets the emit fast path.

    The runtime reads the bound methods ``choose_one`` and ``choose_many`` once, after
    :meth:`prepare`, and calls them instead of ``choose_tasks`` per tuple (an implementation
    may therefore install specialised functions as instance attributes in ``prepare``; one
    installed later is not seen). Both run on the thread of the emitting task, like
    ``choose_tasks``, and must be cheap and non-blocking.
    """

    #: The index (into ``values``) of the one field whose value alone decides the task, or
    #: None. When set, the runtime may remember the task chosen for a ``str`` value at that
    #: index and send later tuples with an equal value there to it without asking
    #: ``choose_one``: so the choice for such a value must stay the same for the grouping's
    #: life after ``prepare``, whatever the other fields and however often it is asked.
    #: Read once, after ``prepare``.
    key_index: int | None = None

    @abstractmethod
    def choose_one(self, values: Sequence[Any]) -> int:
        """The one task id (of ``target_tasks``) that receives the tuple of ``values``."""

    def choose_many(self, values_list: Sequence[Sequence[Any]]) -> list[int]:
        """``choose_one`` for each of ``values_list`` in order, in one call (one task id per
        item). Called for a batch emit; override it where whole-list work beats a Python step
        per item (C loops, a cache lookup per item)."""
        one = self.choose_one
        return [one(values) for values in values_list]

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return [self.choose_one(values)]


class LoadAwareGrouping(Grouping):
    """A grouping that steers by the load of its target tasks.

    The worker calls :meth:`refresh_load` on each such grouping of its emitting tasks every
    ``LOAD_INTERVAL`` (0.5 s), from the worker's loop. An emitting task on a thread of its own
    may be choosing at that moment, so a refresh must leave the grouping usable at every
    instant: build the new state aside and install it with one attribute store.

    A :class:`Grouping` with a callable ``refresh_load`` is an instance of this class whether
    or not it subclasses it.
    """

    @classmethod
    def __subclasshook__(cls, other: type) -> bool:
        # Grouping's own ABC check asks this hook about every candidate: read the MRO
        if cls is LoadAwareGrouping and Grouping in getattr(other, "__mro__", ()):
            return callable(getattr(other, "refresh_load", None)) or NotImplemented
        return NotImplemented

    @abstractmethod
    def refresh_load(self, load: LoadMapping) -> None:
        """Take the targets' current load and locality (:class:`squall.api.groupings.
        LoadMapping`); returns nothing. An exception is logged once and the grouping keeps
        its previous choices."""
