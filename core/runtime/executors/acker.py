"""The acker executor: feeds the acker's system streams (inits, acks, fails, and bolts' timeout
resets) that reach its tasks' queues to the configured :class:`squall.Acker` (acks for an
acker task of the same worker skip the queue: :class:`squall.runtime.acks.AckLedger`), and
rotates its trees every message timeout (with ``topology.enable.message.timeouts: false`` it
sweeps them instead: a tree then waits for its acks however long, and only what acks left
for trees no init comes for any more is dropped)."""
from __future__ import annotations

import logging
import time

from squall.runtime.executors.base import Executor, Services
from squall.runtime.streams import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET
from squall.runtime.task import TaskState

log = logging.getLogger("squall.runtime.executors")


class AckerExecutor(Executor):
    """Runs acker tasks."""

    kind = "acker"

    def __init__(self, services: Services, component_id: str, tasks: list[TaskState]) -> None:
        super().__init__(services, component_id, tasks)
        conf = tasks[0].conf
        self.timeout = float(conf.get("topology.message.timeout.secs", 30))
        #: ``topology.enable.message.timeouts``: without, no tree expires (as the spout's)
        self.timeouts = bool(conf.get("topology.enable.message.timeouts", True))
        self.next_rotate = time.monotonic() + self.timeout
        self.malformed = 0

    def run_once(self) -> int:
        done = 0
        complete = self.services.acks.complete_tree
        sys_src = self.services.sources.ack
        ack_src, init_src, fail_src = sys_src[ACK_ACK], sys_src[ACK_INIT], sys_src[ACK_FAIL]
        reset_src = sys_src[ACK_RESET]
        for ts in self.tasks:
            acker = ts.instance
            q = ts.queue
            n = min(len(q), self.batch * 4)
            for _ in range(n):
                tup = q.popleft()
                v = tup.values
                src = tup.src
                try:
                    if src is ack_src:
                        res = acker.ack(v[0], v[1])
                    elif src is init_src:
                        res = acker.init(v[0], v[1], v[2])
                    elif src is fail_src:
                        res = acker.fail(v[0])
                    elif src is reset_src:      # a bolt's reset_timeout: passed on
                        self.services.acks.reset_at(ts, v[0])
                        continue
                    else:
                        continue
                except (TypeError, IndexError, ValueError) as exc:
                    # not a system tuple's shape: from the network
                    self.malformed += 1
                    if self.malformed == 1 or self.malformed % 1000 == 0:
                        log.warning("acker task %d dropped a malformed %s tuple %.80r: %s "
                                    "(%d so far)", ts.task, src.stream, v, exc, self.malformed)
                    continue
                except Exception as exc:    # the acker plugin's bug: the loop goes on
                    self.services.acks.acker_raised(ts, src.stream, exc)
                    continue
                if res is not None:
                    complete(ts, v[0], res[0], res[1])
            ts.executed += n
            done += n
        return done

    def on_timer(self, now: float) -> None:
        if now < self.next_rotate:
            return
        self.next_rotate = now + self.timeout
        for ts in self.tasks:
            try:
                if self.timeouts:
                    ts.instance.rotate()
                else:
                    ts.instance.sweep()
            except Exception as exc:    # the acker plugin's bug: the loop goes on
                self.services.acks.acker_raised(
                    ts, "rotate" if self.timeouts else "sweep", exc)
