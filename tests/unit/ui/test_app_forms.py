"""The UI page's forms read what the CLI reads: the rebalance form's executors, run through
node on the function app.js ships."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import squall.ui

APP_JS = Path(squall.ui.__file__).parent / "static" / "app.js"
NODE = shutil.which("node")


def parse_executors(*texts: str) -> list[Any]:
    """What app.js's ``parseExecutors`` gives for each text: its object, or ``{"error": ...}``."""
    source = APP_JS.read_text(encoding="utf-8")
    found = re.search(r"^function parseExecutors\(text\) \{$.*?^\}$", source, re.S | re.M)
    assert found, "app.js has no parseExecutors function"
    script = found.group() + """
const out = [];
for (const text of JSON.parse(process.argv[1])) {
  try { out.push(parseExecutors(text)); } catch (err) { out.push({ error: err.message }); }
}
console.log(JSON.stringify(out));
"""
    assert NODE is not None
    done = subprocess.run([NODE, "-e", script, json.dumps(texts)], capture_output=True,
                          text=True, timeout=30, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.skipif(NODE is None, reason="needs node to run app.js")
def test_the_rebalance_form_names_component_ids_with_comma_and_equals() -> None:
    # it split at every ',' then at the first '=': "a,b=2" and "a=b=2" named no component
    assert parse_executors("split=4, count=2", " split = 4 ,", "a,b=2", "a=b=3",
                           "x=1,a,b=2,c=d=3", "") == [
        {"split": 4, "count": 2}, {"split": 4}, {"a,b": 2}, {"a=b": 3},
        {"x": 1, "a,b": 2, "c=d": 3}, {}]


@pytest.mark.skipif(NODE is None, reason="needs node to run app.js")
def test_the_rebalance_form_says_what_is_not_component_equals_n() -> None:
    assert parse_executors("split", "split=4,count", "a=2,a=3") == [
        {"error": "bad executors entry split: expected comp=N,..."},
        {"error": "bad executors entry count: expected comp=N,..."},
        {"error": "executors names a twice"}]
