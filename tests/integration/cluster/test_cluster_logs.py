"""Logs on a real cluster: rotated worker logs served by the supervisor's logviewer,
``squall logs`` (and ``--follow``), ``squall set-log-level`` with its timeout, the metrics log
kept apart, tracebacks of component errors, daemon log files, and cleanup after a kill."""
from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from squall.daemon.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
TARGET = str(Path(__file__).resolve().parent.parent / "topologies" / "chatty_logging.py") + \
    ":topology"
MAX_BYTES = 20000


def worker_logs(local: Path) -> dict[str, str]:
    """The chatty topology's log files by name; one the worker's rotation renames between the
    listing and the read is left out (the callers wait on what they look for)."""
    logs = {}
    for p in (local / "logs").glob("chatty-*"):
        try:
            logs[p.name] = p.read_text(errors="replace")
        except FileNotFoundError:
            continue
    return logs


def current_log(local: Path) -> str:
    """The worker's current log ("" in the instant a rotation has renamed it and not yet
    opened the next)."""
    found = [t for n, t in worker_logs(local).items() if re.search(r"-\d+\.log$", n)]
    assert len(found) <= 1, f"more than one current worker log: {len(found)}"
    return found[0] if found else ""


def rotated_log(local: Path) -> str:
    """The worker log with its backups before it, oldest first (``.log.2``, ``.log.1``,
    ``.log``)."""
    logs = {n: t for n, t in worker_logs(local).items() if re.search(r"-\d+\.log(\.\d+)?$", n)}
    order = sorted(logs, key=lambda n: -int(n.rsplit(".", 1)[1]) if n[-1].isdigit() else 0)
    return "".join(logs[n] for n in order)


def test_logs_rotation_follow_levels_and_cleanup(squall_cluster):
    c = squall_cluster
    c.start_nimbus()
    lv_port = free_port()
    sup = c.start_supervisor("sup1", slots=1, overrides={
        "logviewer.port": lv_port, "worker.log.max.bytes": MAX_BYTES,
        "worker.log.backup.count": 2, "worker.log.cleanup.grace.secs": 0})
    c.wait_ready(supervisors=1)
    record = c.state.supervisors()
    assert [r.get("logviewer_port") for r in record.values()] == [lv_port]
    c.squall("submit", TARGET, "--name", "chatty", "-c", "test.emit.per.sec=100",
             "-c", "topology.metrics.consumer.register=[{class: log}]",
             "-c", "topology.builtin.metrics.bucket.size.secs=1")
    tid = c.state.find_topology_id("chatty")
    port = sup.ports[0]
    c.wait(lambda: "printed tick" in "".join(worker_logs(sup.local_dir).values()), 60,
           "the worker log shows no print")

    # the component's print and the bolt's error (with its traceback) are in the worker log;
    # the metrics consumer's data points are not: they have their own file
    c.wait(lambda: f"{tid}-{port}.metrics.log" in worker_logs(sup.local_dir), 30,
           "no metrics log")
    logs = worker_logs(sup.local_dir)
    text = "".join(t for n, t in logs.items() if ".metrics" not in n and ".events" not in n)
    assert "STDOUT: printed tick" in text
    assert "Traceback (most recent call last)" in text and "ValueError: fussy about" in text
    assert "__emit-count" not in text
    c.wait(lambda: "__emit-count" in worker_logs(sup.local_dir)[f"{tid}-{port}.metrics.log"],
           30, "no data points in the metrics log")
    assert "ticking" not in text                       # DEBUG is off

    # squall logs prints the worker's log through the logviewer
    out = c.squall("logs", "chatty").stdout
    assert out.startswith(f"==> 127.0.0.1:{port} <==\n")
    assert "printed tick" in out or "fussy" in out

    # follow, then raise the chatty logger to DEBUG for a while: lines appear, rotate, stop
    follow = subprocess.Popen([sys.executable, "-m", "squall.cli.main", "--config",
                               str(c.config_file), "logs", "chatty", "--follow", "--tail", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []

    def read() -> None:
        for line in follow.stdout:
            lines.append(line)
    threading.Thread(target=read, daemon=True).start()
    try:
        # 5 s of DEBUG lines: two rotations take some 3 s of them (at INFO, later ones
        # would come too, only slower)
        done = c.squall("set-log-level", "chatty", "chatty=DEBUG", "--timeout", "5")
        assert "chatty" in done.stdout and "5 s" in done.stdout
        c.wait(lambda: any("DEBUG [worker" in x and "chatty: ticking" in x
                           for x in list(lines)), 60, "squall logs --follow printed no DEBUG line")
    finally:
        follow.terminate()
        follow.wait(10)
    c.wait(lambda: f"{tid}-{port}.log.2" in worker_logs(sup.local_dir), 60, "no rotation")
    names = set(worker_logs(sup.local_dir))
    assert f"{tid}-{port}.log.3" not in names                     # two backups kept
    assert all(p.stat().st_size <= MAX_BYTES for p in (sup.local_dir / "logs").glob("chatty-*.log*"))
    # the timeout runs out: the worker restores the level by itself (the line may have rotated
    # into a backup by the time it is read: look across them)
    c.wait(lambda: "log level of chatty back to NOTSET" in rotated_log(sup.local_dir), 60,
           "the log level was not restored")
    seen: list[str] = []

    def ticks_after_revert() -> bool:
        # what the worker logged from the revert to the ticker's next print (100 ticks), read
        # across the backups too: the log may rotate between the two lines
        text = rotated_log(sup.local_dir).split("log level of chatty back to NOTSET", 1)
        if len(text) == 2 and "printed tick" in text[1]:
            seen.append(text[1].split("printed tick", 1)[0])
        return bool(seen)
    c.wait(ticks_after_revert, 30, "the worker stopped logging after the revert")
    # (a DEBUG line already under way when the level changed may follow the revert line)
    assert "ticking" not in "\n".join(seen[0].split("\n")[2:])

    bad = c.squall("set-log-level", "chatty", "chatty=LOUD", check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "LOUD" in bad.stderr
    missing = c.squall("logs", "nosuch", check=False)        # one line: no ZooKeeper chatter
    assert missing.returncode == 2 and "nosuch" in missing.stderr
    assert missing.stderr.count("\n") == 1, missing.stderr

    # squall debug: a share of the ticker's emits into the events log, shown via logviewer
    done = c.squall("debug", "chatty", "ticker", "--enable", "--sampling", "50")
    assert "50% of the emits of component 'ticker'" in done.stdout
    c.wait(lambda: "\tticker\t" in c.squall("debug", "chatty", "--show").stdout, 30,
           "no sampled emits in the events log")
    shown = c.squall("debug", "chatty", "--show").stdout
    assert shown.startswith(f"==> 127.0.0.1:{port} <==\n")
    assert "\tfussy\t" not in shown                        # only the component asked for
    c.squall("debug", "chatty", "--disable")
    c.wait(lambda: "stopped" in c.squall("debug", "chatty", "--disable").stdout and
           "sampled into the events log: none" in rotated_log(sup.local_dir), 30,
           "sampling did not stop")

    def events_size() -> int:
        # the events log with its backups (one renamed between the listing and the stat is
        # left out: only a log still written to rotates)
        total = 0
        for p in (sup.local_dir / "logs").glob(f"{tid}-{port}.events.log*"):
            try:
                total += p.stat().st_size
            except FileNotFoundError:
                continue
        return total

    def last_tick() -> int:
        ticks = re.findall(r"printed tick (\d+)", current_log(sup.local_dir))
        return int(ticks[-1]) if ticks else 0
    # the worker says "none" when it hands the change to its loop, which may sample an emit
    # or two more before its next pass takes it: 50 ticks later that is written
    since = last_tick()
    c.wait(lambda: last_tick() >= since + 50, 30, "the ticker stopped")
    size = events_size()
    since = last_tick()
    c.wait(lambda: last_tick() >= since + 200, 30, "the ticker stopped")
    assert events_size() == size                   # it emitted, nothing recorded
    bad = c.squall("debug", "chatty", "nosuch", "--enable", check=False)
    assert bad.returncode == 2 and "nosuch" in bad.stderr and bad.stderr.count("\n") == 1

    # daemons write their own log files under storm.local.dir/logs
    assert "supervisor" in (sup.local_dir / "logs" / "supervisor.log").read_text()
    assert (c.daemons[0].local_dir / "logs" / "nimbus.log").read_text()

    # kill: the topology's logs are removed (grace 0 here), the supervisor's stays
    c.squall("kill", "chatty", "--wait", "0")
    c.wait(lambda: not worker_logs(sup.local_dir), 60, "the killed topology's logs remain")
    assert (sup.local_dir / "logs" / "supervisor.log").exists()
