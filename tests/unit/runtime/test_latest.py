"""A setting handed to the loop without waiting (``squall.runtime.latest.Latest``): the value
set last before the loop got to it is applied, once; a change made while an apply runs is not
lost; with no loop running it applies on the caller's thread."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from squall.runtime.latest import Latest


class FakeLoop:
    """The parts of a Loop that Latest uses; ``run_commands`` plays one of its passes."""

    def __init__(self) -> None:
        self.running = True
        self.commands: list[Callable[[], Any]] = []

    def on_loop_thread(self) -> bool:
        return False

    def submit(self, fn: Callable[[], Any]) -> None:
        self.commands.append(fn)

    def run_commands(self) -> None:
        while self.commands:
            self.commands.pop(0)()


def test_changes_before_the_loop_gets_to_them_collapse_to_the_last() -> None:
    loop, applied = FakeLoop(), []
    active = Latest(loop, applied.append)
    active.set(False)
    active.set(True)        # deactivate then activate, quickly: ends active
    assert applied == [] and len(loop.commands) == 1
    loop.run_commands()
    assert applied == [True]
    loop.run_commands()
    assert applied == [True]        # nothing applied twice


def test_a_change_made_while_an_apply_runs_is_applied_next() -> None:
    loop, applied = FakeLoop(), []
    entered, release = threading.Event(), threading.Event()

    def apply(value: bool) -> None:
        applied.append(value)
        if len(applied) == 1:
            entered.set()
            release.wait(10)
    active = Latest(loop, apply)
    active.set(False)
    runner = threading.Thread(target=loop.run_commands)
    runner.start()
    assert entered.wait(10)
    active.set(True)        # the first apply has read its value: this one is queued again
    release.set()
    runner.join(10)
    loop.run_commands()
    assert applied == [False, True]


def test_without_a_running_loop_it_applies_here() -> None:
    loop, applied = FakeLoop(), []
    active = Latest(loop, applied.append)
    active.set(False)
    loop.running = False        # stopped before it ran what was queued
    active.set(True)
    assert applied == [True]
