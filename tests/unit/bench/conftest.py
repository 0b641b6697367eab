"""The benchmarks (``bench/``) are a package of the repository, not of the installed
distribution: their tests import it from the checkout."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
