"""The multi-lang framing (JSON with ``end`` lines, msgpack back to back) however the bytes
are cut into reads, the handshake's context, and where a shell command runs."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import msgpack
import pytest

from squall import ConfigError, MultilangError
from squall.api.context import TopologyContext
from squall.multilang.link import ShellMetric, code_root
from squall.multilang.protocol import (
    JsonCodec, MsgpackCodec, codec_class, handshake_context, tuple_message,
)

MESSAGES = [
    {"command": "emit", "tuple": ["the cow", 1], "anchors": ["7"], "need_task_ids": False},
    [3, 4],
    {"command": "log", "msg": "line one\nline two", "level": 3},
    {"command": "sync"},
]


def _cut(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("size", [1, 3, 7, 64, 100000])
def test_json_messages_survive_any_cut(size: int) -> None:
    data = b"".join(JsonCodec().encode(m) for m in MESSAGES)
    codec = JsonCodec()
    got = [m for chunk in _cut(data, size) for m in codec.feed(chunk)]
    assert got == MESSAGES


def test_json_is_storms_framing() -> None:
    assert JsonCodec().encode({"command": "sync"}) == b'{"command":"sync"}\nend\n'
    # a pretty-printed message over several lines, as other adapters may send
    text = json.dumps({"command": "ack", "id": "12"}, indent=2).encode() + b"\nend\n"
    assert JsonCodec().feed(text) == [{"command": "ack", "id": "12"}]


def test_json_garbage_is_one_clear_error() -> None:
    with pytest.raises(MultilangError, match="not a JSON message"):
        JsonCodec().feed(b"hello there\nend\n")


@pytest.mark.parametrize("size", [1, 5, 100000])
def test_msgpack_messages_survive_any_cut(size: int) -> None:
    data = b"".join(msgpack.packb(m) for m in MESSAGES)
    codec = MsgpackCodec()
    got = [m for chunk in _cut(data, size) for m in codec.feed(chunk)]
    assert got == MESSAGES
    assert msgpack.unpackb(MsgpackCodec().encode({"a": [1]})) == {"a": [1]}


def test_serializer_names() -> None:
    assert codec_class("json") is JsonCodec and codec_class("msgpack") is MsgpackCodec
    with pytest.raises(ConfigError, match="json, msgpack.*'xml'"):
        codec_class("xml")


def test_handshake_context_has_storms_keys() -> None:
    ctx = TopologyContext(topology_id="t-1", topology_name="t", component_id="split",
                          task_id=3, task_to_component={1: "spout", 2: "split", 3: "split"},
                          this_worker_port=6700, outputs={"default": ("word",)},
                          inputs={"spout": {"default": ("sentence",)}})
    hc = handshake_context(ctx)
    assert hc["taskid"] == 3 and hc["componentid"] == "split"
    assert hc["task->component"] == {"1": "spout", "2": "split", "3": "split"}
    assert hc["stream->outputfields"] == {"default": ["word"]}
    assert hc["source->stream->fields"] == {"spout": {"default": ["sentence"]}}
    assert json.loads(json.dumps(hc)) == hc


def test_tuple_message() -> None:
    message = {"id": "5", "comp": "spout", "stream": "default", "task": 2, "tuple": ["a", 1]}
    assert tuple_message("5", "spout", "default", 2, ("a", 1)) == message
    for codec in (JsonCodec(), MsgpackCodec()):
        for _ in range(2):          # the second from the cached head
            data = codec.encode_tuple("5", "spout", "default", 2, ("a", 1))
            assert codec.feed(data) == [message]
    weird = JsonCodec().encode_tuple("6", 'sp"out', "é", -1, ("x\n", None))
    assert JsonCodec().feed(weird) == [{"id": "6", "comp": 'sp"out', "stream": "é",
                                        "task": -1, "tuple": ["x\n", None]}]


def test_code_root_is_the_folder_above_the_module_package() -> None:
    assert code_root(ShellMetric) == str(Path(sys.modules["squall"].__file__).parent.parent)


def test_shell_metric_adds_numbers_and_refuses_others() -> None:
    m = ShellMetric()
    m.update(2)
    m.update(1.5)
    with pytest.raises(TypeError):
        m.update("x")
    assert m.get_value_and_reset() == 3.5
    assert m.get_value_and_reset() == 0


def test_a_message_without_an_end_past_the_limit_is_a_protocol_error(monkeypatch) -> None:
    import squall.multilang.protocol as protocol
    monkeypatch.setattr(protocol, "MAX_MESSAGE_BYTES", 1000)
    codec = JsonCodec()
    assert codec.feed(b'{"command": "log", "msg": "') == []
    for _ in range(9):
        assert codec.feed(b"x" * 100) == []
    with pytest.raises(MultilangError, match="a message longer than 1000 bytes"):
        codec.feed(b"x" * 100)


def test_a_long_message_in_many_reads_is_joined_once_whole() -> None:
    message = {"command": "emit", "tuple": ["x" * 3_000_000]}
    data = JsonCodec().encode(message)
    codec = JsonCodec()
    got = [m for i in range(0, len(data), 1 << 16) for m in codec.feed(data[i:i + (1 << 16)])]
    assert got == [message]


def test_bytes_without_an_end_are_no_heartbeat(tmp_path) -> None:
    import logging
    import sys
    import threading
    import time as clock

    from squall.multilang.process import ShellProcess
    from squall.testing import wait_until
    script = tmp_path / "chatter.py"
    script.write_text("import sys, time\nsys.stdin.readline()\n"
                      "sys.stdout.write('{\"pid\": 1}\\nend\\n'); sys.stdout.flush()\n"
                      "while True:\n    sys.stdout.write('x' * 100); sys.stdout.flush()\n"
                      "    time.sleep(0.01)\n")
    exited = threading.Event()
    proc = ShellProcess([sys.executable, str(script)], str(tmp_path), JsonCodec(),
                        logging.getLogger("chatter"), lambda p, m: None,
                        lambda p, r: exited.set())
    try:
        proc.send(b"go\n")
        wait_until(lambda: proc.codec._parts_len > 1000, 10)    # it chatters
        heard = proc.last_heard
        wait_until(lambda: proc.codec._parts_len > 5000, 10)
        assert proc.last_heard == heard and clock.monotonic() > heard
    finally:
        proc.kill("test over")
        assert exited.wait(10)


CRLF = [{"pid": 7}, {"command": "log", "msg": "a\r\nb", "level": 2}, [3], {"command": "sync"}]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 100000])
def test_json_lines_may_end_with_crlf(size: int) -> None:
    # as Storm's readLine reads them: a writer in text mode on Windows, a .NET adapter
    data = b"".join(json.dumps(m).encode() + b"\r\nend\r\n" for m in CRLF)
    codec = JsonCodec()
    got = [m for chunk in _cut(data, size) for m in codec.feed(chunk)]
    assert got == CRLF and codec.pending() == 0
    # pretty-printed over several CRLF lines
    text = json.dumps({"command": "ack", "id": "12"}, indent=2).replace("\n", "\r\n")
    assert JsonCodec().feed(text.encode() + b"\r\nend\r\n") == [{"command": "ack", "id": "12"}]


def test_pending_counts_the_bytes_of_a_message_without_its_end() -> None:
    codec = JsonCodec()
    assert codec.feed(b'{"command": "sync"}\nend\n{"command": ') == [{"command": "sync"}]
    assert codec.pending() == len(b'{"command": ')
    assert codec.feed(b'"sync"}\n') == [] and codec.pending() == len(b'{"command": "sync"}\n')
    assert codec.feed(b"end\n") == [{"command": "sync"}] and codec.pending() == 0
    packed = msgpack.packb({"command": "sync"})
    mp = MsgpackCodec()
    assert mp.feed(packed[:4]) == [] and mp.pending() == 4
    assert mp.feed(packed[4:]) == [{"command": "sync"}] and mp.pending() == 0


@pytest.mark.parametrize("ending", [b"\n", b"\nend"])
def test_a_handshake_answer_without_its_end_line_says_so(tmp_path, ending: bytes) -> None:
    import logging

    from squall.multilang.process import ShellProcess
    script = tmp_path / "no_end.py"
    script.write_text("import os, sys\nsys.stdin.readline()\n"
                      f"sys.stdout.buffer.write(b'{{\"pid\": 1}}' + {ending!r}); "
                      "sys.stdout.flush()\nsys.stdin.read()\n")
    proc = ShellProcess([sys.executable, str(script)], str(tmp_path), JsonCodec(),
                        logging.getLogger("no_end"), lambda p, m: None, lambda p, r: None)
    try:
        proc.send(b"go\n")
        with pytest.raises(MultilangError) as caught:
            proc.answered(2.0)
        held = len(b'{"pid": 1}' + ending)
        assert str(caught.value).endswith(f"did not answer the handshake within 2 s; it sent "
                                          f"{held} bytes but no line 'end' after them")
    finally:
        proc.kill("test over")


def test_what_a_decoder_raises_is_one_protocol_error() -> None:
    # a map with a list for a key (unhashable: TypeError), a list nested past Python's
    # recursion limit (RecursionError)
    with pytest.raises(MultilangError, match="TypeError"):
        MsgpackCodec().feed(msgpack.packb({"command": "log", (1, 2): 3}))
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(MultilangError, match="not a JSON message"):
        JsonCodec().feed(deep + b"\nend\n")
    with pytest.raises(MultilangError, match="not a JSON message"):
        JsonCodec().feed(b'{"command": "sync"}\nend\n' + deep + b"\nend\n")


def test_a_msgpack_message_past_the_limit_is_a_protocol_error(monkeypatch) -> None:
    # the protocol's limit, not msgpack's own (100 MiB, BufferFull from its feed)
    import squall.multilang.protocol as protocol
    monkeypatch.setattr(protocol, "MAX_MESSAGE_BYTES", 1 << 20)
    message = msgpack.packb({"command": "emit", "tuple": ["x" * (1 << 19)]})
    codec = MsgpackCodec()
    assert codec.feed(message) == [msgpack.unpackb(message)]
    with pytest.raises(MultilangError, match=f"a message longer than {1 << 20} bytes"):
        codec.feed(msgpack.packb({"command": "emit", "tuple": ["x" * (3 << 19)]}))
    monkeypatch.undo()
    big = msgpack.packb({"command": "emit", "tuple": ["x" * (110 << 20)]})
    assert len(MsgpackCodec().feed(big)[0]["tuple"][0]) == 110 << 20


def test_a_lone_surrogate_is_sent_as_an_escape() -> None:
    # a string a subprocess sent as "\ud800" (JSON.stringify writes it), on to the next
    codec = JsonCodec()
    data = codec.encode_tuple("7", "split", "default", 3, ["a\ud800b", 1])
    assert data.endswith(b"\nend\n")
    assert json.loads(data[:-5]) == tuple_message("7", "split", "default", 3, ["a\ud800b", 1])
    assert json.loads(codec.encode({"x": "\udc80"})[:-5]) == {"x": "\udc80"}
    # the others keep their characters as they are
    assert codec.encode_tuple("8", "split", "default", 3, ["é"]) == \
        '{"id":"8","comp":"split","stream":"default","task":3,"tuple":["é"]}\nend\n'.encode()


class _Raising(JsonCodec):
    """A codec whose decoder raises what no codec should let through."""

    def feed(self, data: bytes) -> list:
        raise KeyError("decoder bug")


def test_a_reader_whose_decoder_raises_kills_and_reports_the_subprocess(tmp_path) -> None:
    import logging
    import threading

    from squall.multilang.process import ShellProcess
    script = tmp_path / "talker.py"
    script.write_text("import sys\nsys.stdin.readline()\nsys.stdout.write('hello')\n"
                      "sys.stdout.flush()\nsys.stdin.read()\n")
    reasons: list[str] = []
    exited = threading.Event()

    def on_exit(proc: ShellProcess, reason: str) -> None:
        reasons.append(reason)
        exited.set()

    proc = ShellProcess([sys.executable, str(script)], str(tmp_path), _Raising(),
                        logging.getLogger("talker"), lambda p, m: None, on_exit)
    try:
        proc.send(b"go\n")
        assert exited.wait(10), "the reader died without a word"
        assert reasons == ["broke the protocol: KeyError: 'decoder bug'"]
        assert not proc.alive and proc.proc.poll() is not None
    finally:
        proc.kill("test over")
