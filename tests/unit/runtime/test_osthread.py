"""Worker threads carry names the operating system shows (top -H, ps -L, /proc)."""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from squall.runtime import osthread


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names threads on Linux only")
def test_a_thread_is_named_as_asked_and_cut_to_the_kernels_15_bytes() -> None:
    seen: dict[str, str] = {}

    def run(name: str) -> None:
        osthread.set_name(name)
        seen[name] = Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()

    for name in ("squall-loop", "sq-a-very-long-component-name"):
        t = threading.Thread(target=run, args=(name,))
        t.start()
        t.join()
    assert seen == {"squall-loop": "squall-loop", "sq-a-very-long-component-name": "sq-a-very-long-"}
