"""The README's Python examples run as shown, in order, in one fresh interpreter, and print
what the README says they print (the ```text block after a ```python block)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"```(python|text)\n(.*?)```", re.S)


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(README.read_text())]


def test_readme_python_blocks_run_and_print_what_it_claims(tmp_path: Path) -> None:
    found = blocks()
    assert sum(kind == "python" for kind, _ in found) >= 4
    marker = "=== squall-readme-block ==="
    script = "".join(f"print({marker!r})\n{code}\n" for kind, code in found if kind == "python")
    (tmp_path / "readme_blocks.py").write_text(script)
    done = subprocess.run([sys.executable, str(tmp_path / "readme_blocks.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = done.stdout.split(marker + "\n")[1:]
    claimed = []
    python_seen = -1
    for kind, text in found:
        if kind == "python":
            python_seen += 1
        else:
            claimed.append((python_seen, text))
    assert claimed, "the README shows no output"
    for index, text in claimed:
        assert outputs[index] == text, f"python block {index + 1} printed {outputs[index]!r}"
    assert outputs[0].strip(), "the first example prints nothing"
