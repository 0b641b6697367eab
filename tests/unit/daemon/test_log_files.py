"""Log files: which topology a file belongs to, cleanup after a grace, the metrics log kept
apart, stdout/stderr into the log, rotation."""
from __future__ import annotations

import logging
import shutil
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from squall.daemon import log_files


def test_worker_file_topology() -> None:
    f = log_files.worker_file_topology
    assert f("wc-3-1700000000-6700.log") == "wc-3-1700000000"
    assert f("wc-3-1700000000-6700.log.2") == "wc-3-1700000000"
    assert f("wc-3-1700000000-6700.out") == "wc-3-1700000000"
    assert f("wc-3-1700000000-6700.metrics.log") == "wc-3-1700000000"
    assert f("supervisor.log") is None and f("supervisor.log.1") is None


def test_dead_topologies_logs_go_after_the_grace(tmp_path: Path) -> None:
    old, fresh = 1_000.0, 10_000.0
    for name, mtime in (("dead-1-1-6700.log", old), ("dead-1-1-6700.log.1", old),
                        ("dead-1-1-6700.out", old), ("recent-2-2-6700.log", fresh),
                        ("live-3-3-6701.log", old), ("supervisor.log", old)):
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (mtime, mtime))
    removed = log_files.remove_dead_worker_logs(tmp_path, {"live-3-3"}, 600, now=10_100.0)
    assert removed == ["dead-1-1-6700.log", "dead-1-1-6700.log.1", "dead-1-1-6700.out"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "live-3-3-6701.log", "recent-2-2-6700.log", "supervisor.log"]


def test_a_killed_topologys_logs_stay_together_until_the_newest_is_past_the_grace(
        tmp_path: Path) -> None:
    """Its old backups and the .out (written at the worker's start) stay as long as its
    newest file, then all of them go at once."""
    now = 200_000.0
    ages = {"wc-1-100-6700.log": 10, "wc-1-100-6700.log.1": 1800, "wc-1-100-6700.log.2": 7200,
            "wc-1-100-6700.out": 2 * 86400, "wc-1-100-6700.metrics.log.1": 5000,
            "wc-1-100-6701.log": 90_000, "wc-1-100-6701.out": 2 * 86400}
    for name, age in ages.items():
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (now - age, now - age))
    assert log_files.remove_dead_worker_logs(tmp_path, set(), 3600, now=now) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(ages)
    removed = log_files.remove_dead_worker_logs(tmp_path, set(), 3600, now=now + 3600)
    assert removed == sorted(ages) and not list(tmp_path.iterdir())


@pytest.fixture
def clean_logging() -> Iterator[None]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    metrics = logging.getLogger(log_files.METRICS_LOGGER)
    saved_metrics = list(metrics.handlers)
    import sys
    out, err = sys.stdout, sys.stderr
    yield
    sys.stdout, sys.stderr = out, err
    for h in list(root.handlers) + list(metrics.handlers):
        h.close()
    root.handlers[:], root.level = saved
    metrics.handlers[:] = saved_metrics


def test_worker_log_rotates_and_takes_prints_and_keeps_metrics_apart(
        tmp_path: Path, clean_logging: None) -> None:
    log_file = tmp_path / "t-1-1-6700.log"
    log_files.setup_worker_logging(log_file, 2000, 2, 6700)
    log_files.separate_metrics_log(tmp_path / "t-1-1-6700.metrics.log", 2000, 2)
    print("printed by a component")
    logging.getLogger("squall.metrics").info("1700000000\th:1\t3:count\t__emit-count\t7")
    logging.getLogger("squall.metrics.consumer_bolt").warning("a consumer problem")
    for h in logging.getLogger().handlers:
        h.flush()
    text = log_file.read_text()
    assert "[worker 6700] STDOUT: printed by a component" in text
    assert "a consumer problem" in text and "__emit-count" not in text
    assert "__emit-count\t7" in (tmp_path / "t-1-1-6700.metrics.log").read_text()
    for i in range(200):
        logging.getLogger("squall.worker").info("filler line %d %s", i, "x" * 40)
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("t-1-1-6700.log"))
    assert names == ["t-1-1-6700.log", "t-1-1-6700.log.1", "t-1-1-6700.log.2"]
    assert all(p.stat().st_size <= 2000 for p in tmp_path.glob("t-1-1-6700.log*"))


def test_a_workers_stdout_is_a_text_stream_libraries_can_use(
        tmp_path: Path, clean_logging: None) -> None:
    """click, tqdm, rich read sys.stdout.encoding, write bytes to .buffer, call writelines:
    each raised AttributeError in a cluster worker (they work under `squall local`)."""
    import io
    import sys
    log_file = tmp_path / "t-1-1-6700.log"
    log_files.setup_worker_logging(log_file, 0, 0, 6700)
    out, err = sys.stdout, sys.stderr
    assert isinstance(out, io.TextIOBase) and isinstance(err, io.TextIOBase)
    assert out.encoding == "utf-8" and err.errors == "backslashreplace"
    assert out.writable() and not out.isatty() and not out.closed
    assert out.fileno() == sys.__stdout__.fileno()     # the worker's .out, as before
    out.writelines(["first line\n", "second ", "line\n"])
    assert out.buffer.write(b"raw \xff bytes \xc3") == 13
    out.buffer.write(b"\xa9 end\n")                  # "\xc3\xa9" split between two writes
    out.buffer.flush()
    for h in logging.getLogger().handlers:
        h.flush()
    text = log_file.read_text(encoding="utf-8")
    assert "STDOUT: first line\n" in text and "STDOUT: second line\n" in text
    assert "STDOUT: raw \\xff bytes \u00e9 end\n" in text


def test_a_record_utf8_cannot_hold_is_escaped_not_lost(
        tmp_path: Path, clean_logging: None) -> None:
    """A str decoded with surrogateescape (a file name, an environment variable) was lost
    from the worker log, replaced by a '--- Logging error ---' dump."""
    log_file = tmp_path / "t-1-1-6700.log"
    log_files.setup_worker_logging(log_file, 0, 0, 6700)
    name = b"a\xffb".decode("utf-8", "surrogateescape")
    logging.getLogger("mymodule").warning("file %s end", name)
    for h in logging.getLogger().handlers:
        h.flush()
    text = log_file.read_text(encoding="utf-8")
    assert "mymodule: file a\\udcffb end" in text and "Logging error" not in text


def test_a_log_with_no_backups_is_emptied_at_the_max_not_grown(tmp_path: Path) -> None:
    # worker.log.backup.count: 0 kept appending past worker.log.max.bytes for ever
    handler = log_files.rotating_handler(tmp_path / "nimbus.log", 2000, 0)
    logger = logging.getLogger("test.no_backups")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for i in range(200):
            logger.warning("filler line %d %s", i, "x" * 40)
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert [p.name for p in tmp_path.iterdir()] == ["nimbus.log"]
    text = (tmp_path / "nimbus.log").read_text()
    assert 0 < len(text) <= 2000 and "filler line 199" in text


def test_a_daemon_log_deleted_under_it_is_written_again_where_it_belongs(
        tmp_path: Path) -> None:
    # storm.local.dir removed by a /tmp cleaner: the supervisor's log went on into the
    # deleted file until it restarted
    conf = {"storm.local.dir": str(tmp_path / "local"), "worker.log.max.bytes": 10**6,
            "worker.log.backup.count": 2}
    handler = log_files.add_daemon_log(conf, "supervisor")
    logger = logging.getLogger("test.daemon_log")
    try:
        logger.warning("before the deletion")
        shutil.rmtree(tmp_path / "local")
        logger.warning("after the deletion")
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    text = (tmp_path / "local" / "logs" / "supervisor.log").read_text()
    assert "after the deletion" in text and "before the deletion" not in text


# -- a worker's .out file, written through file descriptors no handler sees ----------------------
def test_a_growing_out_file_is_capped_in_place_and_its_writer_goes_on_at_its_start(
        tmp_path: Path) -> None:
    out = tmp_path / log_files.worker_out_name("wc-1-1", 6700)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND)   # as the worker's stdout
    try:
        for round_ in range(3):
            for i in range(40):
                os.write(fd, f"round {round_} line {i:02d} {'x' * 20}\n".encode())
            assert log_files.cap_out_file(out, 500, 2)
            assert out.stat().st_size == 0
        os.write(fd, b"after\n")
    finally:
        os.close(fd)
    assert out.read_bytes() == b"after\n"              # at its start: no hole before it
    newest = (tmp_path / f"{out.name}.1").read_text()
    assert 450 <= len(newest) <= 500 and newest.startswith("round 2 line ")
    assert newest.endswith("round 2 line 39 " + "x" * 20 + "\n")
    assert (tmp_path / f"{out.name}.2").read_text().startswith("round 1 line ")
    assert not (tmp_path / f"{out.name}.3").exists()  # worker.log.backup.count: 2
    assert not log_files.cap_out_file(out, 500, 2)    # under the max: left alone
    assert not log_files.cap_out_file(out, 0, 2)      # 0: never


def test_no_backups_empties_the_out_file_all_the_same(tmp_path: Path) -> None:
    out = tmp_path / "wc-1-1-6700.out"
    out.write_bytes(b"y" * 1000)
    assert log_files.cap_out_file(out, 100, 0)
    assert out.stat().st_size == 0 and sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_worker_log_lines_name_the_component_that_made_them(
        tmp_path: Path, clean_logging: None) -> None:
    # a user logger's line or a print says which component's call made it: its turn on the
    # worker's loop thread, or its own thread; the worker's own lines name none
    from squall import Bolt, LocalCluster, Spout, TopologyBuilder
    from squall.testing import wait_until

    class Talker(Spout):
        outputs = ["n"]

        def initialize(self, conf: object, context: object) -> None:
            self.said = False

        def next_tuple(self) -> None:
            if not self.said:
                self.said = True
                logging.getLogger("user.talker").info("talker says hello")
                self.emit([1])

    class Printer(Bolt):
        dedicated_thread = True

        def process(self, tup: object) -> None:
            print("printer got a tuple")

    log_file = tmp_path / "t-1-1-6700.log"
    log_files.setup_worker_logging(log_file, 0, 0, 6700)

    def text() -> str:
        for h in logging.getLogger().handlers:
            h.flush()
        return log_file.read_text()

    b = TopologyBuilder()
    b.set_spout("talker", Talker)
    b.set_bolt("printer", Printer).shuffle_grouping("talker")
    with LocalCluster() as cluster:
        cluster.submit_topology("talk", {}, b.create_topology())
        wait_until(lambda: "printer got a tuple" in text(), timeout=20)
    logging.getLogger("squall.worker").info("not a component's")
    lines = text().splitlines()
    assert any("[worker 6700 talker] user.talker: talker says hello" in x for x in lines), lines
    assert any("[worker 6700 printer] STDOUT: printer got a tuple" in x for x in lines), lines
    assert any("[worker 6700] squall.worker: not a component's" in x for x in lines), lines
