"""``python -m squall``: the ``squall`` command."""
from __future__ import annotations

import sys

from squall.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
