"""The windowed executor's one-line error for a tuple without an int timestamp (the input's
fault: no traceback of squall's code)."""
from __future__ import annotations

# squall.runtime.executors imports squall.windowing.executor, which imports it back:
# importing the windowed executor first is an import cycle
import squall.runtime.executors  # noqa: F401
from squall.api.tuple import Source, Tuple
from squall.windowing.executor import stamp_error


def test_a_bad_or_missing_timestamp_is_one_line_naming_the_field_and_value():
    src = Source("rows", "default", ("n", "ts"))
    assert stamp_error("w", "ts", Tuple([1, "1200"], 3, src)) == (
        "windowed bolt 'w': timestamp field 'ts' must be an int (ms since the epoch), got "
        "str '1200'; the tuple fails")
    assert stamp_error("w", "ts", Tuple([1, None], 3, src)).endswith("got NoneType None; "
                                                                     "the tuple fails")
    # a missing field (create_topology refuses it; a tuple could only come from a stream
    # declared otherwise where it was emitted)
    assert stamp_error("w", "tss", Tuple([1, 2], 3, src)) == (
        "windowed bolt 'w': stream rows:default has no timestamp field 'tss' (its fields: "
        "['n', 'ts']); the tuple fails")
    long = stamp_error("w", "ts", Tuple([1, "x" * 1000], 3, src))
    assert "\n" not in long and len(long) < 200
