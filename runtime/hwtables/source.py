"""Read and check tables.toml, the one source of the numbers the runtime and the RTL share.

The checks are what the generated code relies on: names are identifiers, the values of one table are
distinct (an error code or module id means one thing), every value fits the width the hardware gives
it (a module id in MODULE_ID_BITS, a section id in SECTION_ID_BITS, a field inside 32 bits), and the
fields of one register do not overlap. A table that breaks one is refused with a message naming it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from fpgashare.errors import FpgashareError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (PYNQ images)
    import tomli as tomllib

SOURCE = Path(__file__).resolve().parent / "tables.toml"
_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_MODULE_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


class TableError(FpgashareError, ValueError):
    """tables.toml is malformed or inconsistent; the message names the table and the entry."""


@dataclass(frozen=True)
class Field:
    """A register field: bits [lsb + width - 1 : lsb]."""

    lsb: int
    width: int

    @property
    def mask(self) -> int:
        """The field's bits in place."""
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class HardwareTables:
    """Every table of tables.toml, checked. Dicts keep the file's order."""

    shell: dict[str, int]                 #: MODULE_WINDOW, SLOT_REG_BASE, ...
    shell_registers: dict[str, int]       #: register name -> word index
    slot_registers: dict[str, int]        #: name -> offset in a slot's group
    fields: dict[str, Field]
    cfg_states: dict[str, int]
    slot_states: dict[str, int]
    port: dict[str, int]                  #: SYNC, NOP, RM_MAGIC, MODULE_ID_BITS
    port_registers: dict[str, int]
    writable: tuple[int, ...]
    commands: dict[str, int]
    errors: dict[str, tuple[int, str]]    #: name -> (code, description)
    modules: dict[str, int]               #: module name -> id
    module_registers: dict[str, int]
    dnn: dict[str, int]                   #: SECTION_ID_BITS
    dnn_sections: dict[str, int]


def load_tables(path: Path = SOURCE) -> HardwareTables:
    """Read ``path`` and check it (TableError names what is wrong)."""
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise TableError(f"{path}: not valid TOML: {exc}") from None
    return tables_from(raw, str(path))


def tables_from(raw: dict, where: str = "tables") -> HardwareTables:
    """Check a parsed tables.toml; ``where`` prefixes every error message."""

    def table(dotted: str) -> dict:
        node = raw
        for key in dotted.split("."):
            node = node.get(key) if isinstance(node, dict) else None
            if not isinstance(node, dict):
                raise TableError(f"{where}: missing table [{dotted}]")
        return node

    def ints(dotted: str, bits: int = 32, distinct: bool = True, names: re.Pattern = _NAME) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, value in table(dotted).items():
            if isinstance(value, dict):
                continue   # a sub-table, read on its own
            if not names.match(name):
                raise TableError(f"{where}: [{dotted}] {name!r} is not a valid name")
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << bits:
                raise TableError(f"{where}: [{dotted}] {name} = {value!r} is not an integer in 0..2**{bits}-1")
            if distinct and value in out.values():
                other = next(k for k, v in out.items() if v == value)
                raise TableError(f"{where}: [{dotted}] {name} and {other} are both {value}")
            out[name] = value
        return out

    port = ints("config_port", distinct=False)
    dnn = ints("dnn", distinct=False)
    for name, section, key in (("MODULE_ID_BITS", "config_port", port), ("SECTION_ID_BITS", "dnn", dnn)):
        if not 1 <= key.get(name, 0) <= 16:
            raise TableError(f"{where}: [{section}] {name} must be 1..16")
    fields = _fields(table("shell.fields"), where)
    errors = _errors(table("config_port.errors"), where)
    writable = table("config_port.writable").get("registers")
    if not isinstance(writable, list) or not all(isinstance(r, int) and 0 <= r < 32 for r in writable):
        raise TableError(f"{where}: [config_port.writable] registers must be a list of 5-bit register numbers")
    port_registers = ints("config_port.registers", bits=5)
    unwritable = sorted(set(port_registers.values()) - set(writable))
    if unwritable:
        raise TableError(f"{where}: configuration registers {unwritable} are used but not writable")
    modules = ints("modules", bits=port["MODULE_ID_BITS"], names=_MODULE_NAME)
    if modules.get("blank") != 0:
        raise TableError(f"{where}: [modules] blank must be module 0 (a slot with no module)")
    return HardwareTables(
        shell=ints("shell", distinct=False), shell_registers=ints("shell.registers", bits=16),
        slot_registers=ints("shell.slot_registers", bits=8), fields=fields,
        cfg_states=ints("shell.cfg_states", bits=fields["CFG_STATUS_STATE"].width),
        slot_states=ints("shell.slot_states", bits=fields["SLOT_STATUS_STATE"].width),
        port=port, port_registers=port_registers, writable=tuple(sorted(set(writable))),
        commands=ints("config_port.commands"), errors=errors, modules=modules,
        module_registers=ints("module_registers", distinct=False), dnn=dnn,
        dnn_sections=ints("dnn.sections", bits=dnn["SECTION_ID_BITS"]))


def _fields(raw: dict, where: str) -> dict[str, Field]:
    out: dict[str, Field] = {}
    for name, value in raw.items():
        if not _NAME.match(name):
            raise TableError(f"{where}: [shell.fields] {name!r} is not a valid name")
        if (not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, int) for v in value)
                or value[1] < 1 or value[0] < 0 or value[0] + value[1] > 32):
            raise TableError(f"{where}: [shell.fields] {name} = {value!r} is not [lsb, width] inside 32 bits")
        out[name] = Field(value[0], value[1])
    # Fields of one register share the name's first word (ROUTE_*, SLOT_STATUS_*): they must not overlap.
    by_register: dict[str, list[tuple[str, Field]]] = {}
    for name, field in out.items():
        register = name.rsplit("_", 1)[0]
        for other, seen in by_register.get(register, []):
            if field.mask & seen.mask:
                raise TableError(f"{where}: [shell.fields] {name} overlaps {other}")
        by_register.setdefault(register, []).append((name, field))
    return out


def _errors(raw: dict, where: str) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for name, value in raw.items():
        if (not _NAME.match(name) or not isinstance(value, list) or len(value) != 2
                or not isinstance(value[0], int) or not 0 <= value[0] < 256 or not isinstance(value[1], str)):
            raise TableError(f"{where}: [config_port.errors] {name} = {value!r} is not [8-bit code, description]")
        if value[0] in {code for code, _ in out.values()}:
            raise TableError(f"{where}: [config_port.errors] {name}: code {value[0]} is used twice")
        out[name] = (value[0], value[1])
    if out.get("OK", (None,))[0] != 0:
        raise TableError(f"{where}: [config_port.errors] OK must be code 0")
    return out
