"""Render tables.toml into the SV package the RTL imports and the Python module the runtime imports.

Both outputs are pure functions of the checked tables, so "current" means byte-equal to what
:func:`render_sv` / :func:`render_py` give now; ``fpgashare rtl tables --check`` (and
tests/test_hw_tables.py) compare, ``fpgashare rtl tables`` writes. Run as
``python -m fpgashare.hwtables.generate [--check]`` too.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from fpgashare.hdl_sim.build import RTL_DIR
from fpgashare.hwtables.source import SOURCE, HardwareTables, load_tables

log = logging.getLogger(__name__)

PACKAGE = "fpgashare_pkg"
SV_OUT = RTL_DIR / f"{PACKAGE}.sv"
PY_OUT = Path(__file__).resolve().parent / "tables.py"
_WHAT = "GENERATED from runtime/hwtables/tables.toml by fpgashare.hwtables.generate"
_HOW = "do not edit: change tables.toml and run `fpgashare rtl tables` (docs/hardware-tables.md)"


def _sv_hex(value: int, bits: int) -> str:
    return f"{bits}'h{value:X}" if bits > 8 else f"{bits}'d{value}"


def render_sv(t: HardwareTables) -> str:
    """The SV package: one localparam per number, typed to the width the hardware gives it."""
    mid, sid = t.port["MODULE_ID_BITS"], t.dnn["SECTION_ID_BITS"]
    out = [f"// {_WHAT};", f"// {_HOW}.", "`resetall", "`timescale 1ns / 1ps", "`default_nettype none", "",
           f"package {PACKAGE};",
           "    // A table: each importer uses some of its names, none uses all of them.",
           "    /* verilator lint_off UNUSEDPARAM */"]

    def block(title: str, rows: list[tuple[str, str, str]]) -> None:
        out.append(f"    // {title}")
        out.extend(f"    localparam {kind} {name} = {value};" for kind, name, value in rows)
        out.append("")

    block("shell", [("int", n, str(v)) for n, v in t.shell.items()])
    block("shell register word indices", [("int", f"REG_{n}", str(v)) for n, v in t.shell_registers.items()])
    block("offsets in a slot's register group", [("int", n, str(v)) for n, v in t.slot_registers.items()])
    rows = []
    for n, f in t.fields.items():
        rows += [("int", f"{n}_LSB", str(f.lsb)), ("int", f"{n}_W", str(f.width))]
    block("register fields: bits [LSB + W - 1 : LSB]", rows)
    block("CFG_STATUS states", [("logic [1:0]", n, f"2'd{v}") for n, v in t.cfg_states.items()])
    block("SLOT_STATUS states", [("logic [1:0]", n, f"2'd{v}") for n, v in t.slot_states.items()])
    block("configuration port", [("logic [31:0]", n, _sv_hex(v, 32)) for n, v in t.port.items()
                                 if n != "MODULE_ID_BITS"] + [("int", "MODULE_ID_BITS", str(mid))])
    block("configuration registers", [("logic [4:0]", n, f"5'd{v}") for n, v in t.port_registers.items()])
    block("allowed commands", [("logic [31:0]", n, f"32'd{v}") for n, v in t.commands.items()])
    block("load error codes", [("logic [7:0]", f"PORT_ERR_{n}", f"8'd{code}") for n, (code, _) in t.errors.items()])
    # ints, as module ids are parameters (rm_library's MODULE_ID); a port holds MODULE_ID_BITS of one
    block("module ids", [("int", f"MOD_{n.upper()}", str(v)) for n, v in t.modules.items()])
    block("registers every vision module has", [("int", n, str(v)) for n, v in t.module_registers.items()])
    block("dnn_tile load-stream sections", [("int", "SECTION_ID_BITS", str(sid))]
          + [(f"logic [{sid - 1}:0]", n, f"{sid}'d{v}") for n, v in t.dnn_sections.items()])
    writable = ", ".join(f"5'd{r}" for r in t.writable)
    allowed = ", ".join(f"32'd{c}" for c in t.commands.values())
    out += ["    // a partial bitstream may write configuration register r",
            "    function automatic logic cfg_reg_writable(input logic [4:0] r);",
            "        case (r)", f"            {writable}: return 1'b1;", "            default: return 1'b0;",
            "        endcase", "    endfunction", "",
            "    // a partial bitstream may issue command c (anything else could touch logic outside the slot)",
            "    function automatic logic cmd_allowed(input logic [31:0] c);",
            "        case (c)", f"            {allowed}: return 1'b1;", "            default: return 1'b0;",
            "        endcase", "    endfunction", "    /* verilator lint_on UNUSEDPARAM */",
            f"endpackage : {PACKAGE}", "", "`resetall", ""]
    return "\n".join(out)


def render_py(t: HardwareTables) -> str:
    """The Python module: the same names as the SV package (modules by name in MODULE_IDS)."""
    out = [f'"""{_WHAT};', f'{_HOW}."""', "", "from __future__ import annotations", "",
           "from enum import IntEnum", ""]

    def block(title: str, rows: list[tuple[str, str]]) -> None:
        out.append(f"# {title}")
        out.extend(f"{name} = {value}" for name, value in rows)
        out.append("")

    block("shell", [(n, hex(v) if v > 255 else str(v)) for n, v in t.shell.items()])
    block("shell register word indices", [(f"REG_{n}", str(v)) for n, v in t.shell_registers.items()])
    block("offsets in a slot's register group", [(n, str(v)) for n, v in t.slot_registers.items()])
    rows = []
    for n, f in t.fields.items():
        rows += [(f"{n}_LSB", str(f.lsb)), (f"{n}_W", str(f.width)), (f"{n}_MASK", hex(f.mask))]
    block("register fields: bits [LSB + W - 1 : LSB]; MASK is the field in place", rows)
    block("CFG_STATUS states", [(n, str(v)) for n, v in t.cfg_states.items()])
    block("SLOT_STATUS states", [(n, str(v)) for n, v in t.slot_states.items()])
    block("configuration port", [(n, hex(v) if v > 255 else str(v)) for n, v in t.port.items()])
    block("configuration registers", [(n, str(v)) for n, v in t.port_registers.items()])
    block("allowed commands", [(n, str(v)) for n, v in t.commands.items()])
    out += [f"WRITABLE_REGS = frozenset({{{', '.join(map(str, t.writable))}}})",
            f"ALLOWED_CMDS = frozenset({{{', '.join(map(str, t.commands.values()))}}})", "", "",
            "class PortError(IntEnum):", '    """Load error codes of the configuration port (SV PORT_ERR_*)."""', ""]
    out += [f"    {n} = {code}" for n, (code, _) in t.errors.items()]
    out += ["", "    @property", "    def description(self) -> str:", '        """What the code means."""',
            "        return PORT_ERROR_DESCRIPTIONS[self]", "", "",
            "PORT_ERROR_DESCRIPTIONS = {"]
    out += [f"    PortError.{n}: {desc!r}," for n, (_, desc) in t.errors.items()]
    out += ["}", "", "# module ids (SV MOD_<NAME>)", "MODULE_IDS = {"]
    out += [f"    {n!r}: {v}," for n, v in t.modules.items()]
    out += ["}", ""]
    block("registers every vision module has", [(n, str(v)) for n, v in t.module_registers.items()])
    block("dnn_tile load-stream sections", [("SECTION_ID_BITS", str(t.dnn["SECTION_ID_BITS"]))]
          + [(n, str(v)) for n, v in t.dnn_sections.items()])
    return "\n".join(out).rstrip("\n") + "\n"


def outputs(source: Path = SOURCE) -> dict[Path, str]:
    """Each generated file and the text it should hold."""
    tables = load_tables(source)
    return {SV_OUT: render_sv(tables), PY_OUT: render_py(tables)}


def stale(source: Path = SOURCE) -> list[Path]:
    """Generated files that differ from what ``source`` renders to."""
    return [path for path, text in outputs(source).items()
            if not path.exists() or path.read_text() != text]


def write(source: Path = SOURCE) -> list[Path]:
    """Write every stale generated file; return the ones written."""
    changed = stale(source)
    wanted = outputs(source)
    for path in changed:
        path.write_text(wanted[path])
        log.info("wrote %s", path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files (exit 1 if any)")
    args = parser.parse_args(argv)
    code, lines = run(args.check)
    sys.stdout.write("\n".join(lines) + "\n")
    return code


def run(check: bool) -> tuple[int, list[str]]:
    """``fpgashare rtl tables``: write (or with ``check`` only list) the stale generated files.
    Returns the exit code and the lines to show; a run that finds nothing stale says so, since
    silence cannot be told from a check that did not run."""
    paths = stale() if check else write()
    if check and paths:
        return 1, [f"stale: {path} (run `fpgashare rtl tables`)" for path in paths]
    if paths:
        return 0, [f"wrote {path}" for path in paths]
    return 0, [f"current: {SV_OUT} and {PY_OUT} match what {SOURCE} renders to"]


if __name__ == "__main__":
    sys.exit(main())
