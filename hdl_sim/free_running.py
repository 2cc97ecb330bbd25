"""The shell's free-running registers as the Verilated model names them: the blank partitions' junk
sources (rm_blank's xorshift register, one per slot) and the cycle counter. The harness advances them
over the cycles it skips the shell during a load (shell_harness.cpp, "the fast path of a load"); this
writes their addresses into a header the harness is compiled with.
"""

from __future__ import annotations

import re
from pathlib import Path

#: The shell's free-running registers, as Verilator names them in its root class: the blank partition's
#: junk source (rm_blank's xorshift register), one per slot, and the cycle counter. shell_harness.cpp
#: advances them over the cycles it skips the shell.
JUNK_SOURCE = re.compile(r"IData/\*31:0\*/ (shell__DOT__g_slot__BRA__(\d+)__KET____DOT__u_slot__DOT__"
                         r"g_rm__BRA__0__KET____DOT__\w*__DOT__u_rm__DOT__x);")
CYCLE_COUNTER = re.compile(r"QData/\*63:0\*/ (shell__DOT__cycles_q);")


def write_junk_sources(obj: Path) -> None:
    """junk_sources.h in the model's folder: FS_JUNK_SOURCES(root), the addresses of the slots' junk
    sources in slot order, FS_JUNK_COUNT, and FS_CYCLE_COUNTER(root), the cycle counter's (0 and
    nullptr if not all are found: the harness then never skips the shell, see its fast path)."""
    header = (obj / "Vshell___024root.h").read_text()
    found = {int(m.group(2)): m.group(1) for m in JUNK_SOURCE.finditer(header)}
    counter = CYCLE_COUNTER.search(header)
    names = [found[k] for k in range(len(found))] if counter and sorted(found) == list(range(len(found))) else []
    body = ", ".join(f"&(root)->{name}" for name in names)
    count = f"&(root)->{counter.group(1)}" if names and counter else "nullptr"
    (obj / "junk_sources.h").write_text(f"#pragma once\n#define FS_JUNK_COUNT {len(names)}\n"
                                        f"#define FS_JUNK_SOURCES(root) {{{body}}}\n"
                                        f"#define FS_CYCLE_COUNTER(root) {count}\n")
