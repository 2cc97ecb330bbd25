"""How a command answers on stdout: JSON for programs (``--json``), lines for people."""

from __future__ import annotations

import json
import sys


def emit(obj: dict, as_json: bool, lines: list[str]) -> None:
    """``obj`` as JSON with ``--json``, else ``lines``."""
    if as_json:
        sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
    else:
        sys.stdout.write("\n".join(lines) + "\n")
