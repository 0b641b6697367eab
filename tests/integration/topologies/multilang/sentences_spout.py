"""A pystorm 3.1.4 spout (run by ShellSpout): emits ``[sentence, i]`` with tuple id ``i`` for
the ids of its task (``test.sentences`` in all), replays what fails, and appends each acked id
to ``acks-<task>.txt`` in ``test.output.dir`` (the format acked_wordcount.read_acks reads). A
restarted subprocess skips the ids already acked. ``test.spout.hang.after: K`` blocks the
subprocess forever in the ``next`` after its K-th emit, once per run of the topology."""
from __future__ import annotations

import collections
import os
import time

from pystorm import Spout

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


class Sentences(Spout):
    def initialize(self, storm_conf, context):
        self.dir = storm_conf["test.output.dir"]
        total = int(storm_conf["test.sentences"])
        task = context["taskid"]
        component = context["componentid"]
        tasks = sorted(int(t) for t, c in context["task->component"].items() if c == component)
        k, n = tasks.index(task), len(tasks)
        self.ack_file = os.path.join(self.dir, f"acks-{task}.txt")
        done = set()
        if os.path.exists(self.ack_file):
            with open(self.ack_file) as f:
                done = {int(x) for x in f.read().split()}
        self.todo = collections.deque(i for i in range(k, total, n) if i not in done)
        self.hang_after = storm_conf.get("test.spout.hang.after")
        self.emitted = 0

    def next_tuple(self):
        if self.hang_after is not None and self.emitted >= self.hang_after:
            marker = os.path.join(self.dir, "spout-hang.marker")
            if not os.path.exists(marker):
                open(marker, "w").close()
                time.sleep(3600)
        if self.todo:
            self.emitted += 1
            i = self.todo.popleft()
            self.emit([SENTENCES[i % len(SENTENCES)], i], tup_id=i)

    def ack(self, tup_id):
        with open(self.ack_file, "a") as f:
            f.write(f"{tup_id}\n")

    def fail(self, tup_id):
        self.todo.append(tup_id)


if __name__ == "__main__":
    Sentences(serializer=os.environ.get("MULTILANG_SERIALIZER", "json")).run()
