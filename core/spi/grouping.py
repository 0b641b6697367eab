"""The custom grouping SPI (``squall.groupings``; named in ``custom_grouping``)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any


class Grouping(ABC):
    """Chooses the target tasks of each tuple on one subscribed stream.

    Constructed with no arguments when named by entry point (or passed as an instance);
    ``prepare`` is called once per emitting task before any tuple, from the worker's loop;
    ``choose_tasks`` is called per tuple on the hot path and must be cheap and non-blocking.
    """

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: Sequence[int]) -> None:
        """``stream`` is ``(component_id, stream_id)``; ``target_tasks`` sorted task ids."""
        self.target_tasks = list(target_tasks)

    @abstractmethod
    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        """Return the task ids (a subset of ``target_tasks``) that receive the tuple."""
