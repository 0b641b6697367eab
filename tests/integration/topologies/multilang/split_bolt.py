"""A pystorm 3.1.4 bolt (run by ShellBolt): splits ``[sentence, sid]`` into
``[word, sid, position]`` (auto-anchored, auto-acked). Fault injection from the conf, each
once per run of the topology (a marker file in ``test.output.dir`` remembers it):
``test.split.die.on: SID`` exits the subprocess on that sentence, ``test.split.hang.on: SID``
blocks it forever there."""
from __future__ import annotations

import os
import sys
import time

from pystorm import Bolt


class Split(Bolt):
    def initialize(self, storm_conf, context):
        self.dir = storm_conf.get("test.output.dir", ".")
        self.die_on = storm_conf.get("test.split.die.on")
        self.hang_on = storm_conf.get("test.split.hang.on")
        self.logger.warning("split task %s ready", context["taskid"])

    def _first_time(self, what, sid):
        marker = os.path.join(self.dir, f"{what}-{sid}.marker")
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True

    def process(self, tup):
        sentence, sid = tup.values
        if sid == self.die_on and self._first_time("die", sid):
            print(f"split dies on sentence {sid}", file=sys.stderr, flush=True)
            os._exit(3)
        if sid == self.hang_on and self._first_time("hang", sid):
            time.sleep(3600)
        for pos, word in enumerate(sentence.split()):
            self.emit([word, sid, pos])


if __name__ == "__main__":
    Split(serializer=os.environ.get("MULTILANG_SERIALIZER", "json")).run()
