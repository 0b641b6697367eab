"""Two supervisors configured with different transports, a topology choosing none: its workers
could never exchange a tuple, so nimbus says why in ``squall list`` and in one error line."""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_supervisors_with_different_transports_are_named_in_squall_list(squall_cluster):
    c = squall_cluster
    nimbus = c.start_nimbus()
    c.start_supervisor("s1", slots=1, overrides={"squall.transport": "zmq"})
    c.start_supervisor("s2", slots=1, overrides={"squall.transport": "nng"})
    c.wait_ready(supervisors=2)
    c.squall("submit", c.wordcount_target, "--name", "wc", "-c", "topology.workers=2",
             "-c", "test.sentences=20", "-c", "test.emit.per.sec=20")
    said = "use different squall.transport: "
    c.wait(lambda: said in c.squall("list").stdout, 45, "squall list never named the clash")
    listed = c.squall("list").stdout
    assert ("zmq" in listed and "nng" in listed
            and "set the same squall.transport in every supervisor's config" in listed), listed
    lines = [line for line in nimbus.log_text().splitlines()
             if " ERROR " in line and said in line]
    assert len(lines) == 1, lines
