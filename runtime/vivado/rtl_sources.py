"""The RTL a Vivado build reads, found in the package's sources: which files define which module or
package, the closure a top needs (packages first), and Tcl quoting of the names that go into
the generated scripts (runtime/vivado/flow.py)."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from fpgashare.errors import FpgashareError


def rtl_dir() -> Path:
    """The package's synthesizable RTL (hdl_sim/rtl)."""
    return Path(str(resources.files("fpgashare.hdl_sim"))) / "rtl"


def template_dir() -> Path:
    """The Vivado templates shipped with the package (hdl_sim/vivado)."""
    return Path(str(resources.files("fpgashare.hdl_sim"))) / "vivado"


_MODULE_DECL = re.compile(r"^\s*(?:module|package)\s+(\w+)", re.M)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_INCLUDE = re.compile(r'`include\s+"([^"]+)"')


def modules_in(folder: Path) -> dict[str, Path]:
    """Module and package name -> the file that defines it, for every .sv file in ``folder``."""
    found = {}
    for path in sorted(folder.glob("*.sv")):
        for name in _MODULE_DECL.findall(_COMMENTS.sub("", path.read_text())):
            found[name] = path
    return found


def rtl_closure(top: str, library: dict[str, Path]) -> list[Path]:
    """The files ``top`` needs from ``library`` (module or package name -> file): every module a
    file instantiates (``name #(`` or ``name inst (``) and every package it names (``name::``),
    transitively; the packages first (a file must come after the packages it imports), then ``top``'s."""
    order: list[Path] = []
    todo = [top]
    seen = set()
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name not in library:
            raise FpgashareError(f"RTL module {name} is instantiated but no file defines it")
        path = library[name]
        if path not in order:
            order.append(path)
        text = _text_with_includes(path)
        for other in library:
            if other != name and re.search(rf"(?<![\w.]){other}(\s*(#\s*\(|\w+\s*\()|::)", text):
                todo.append(other)
    packages = [p for p in order if p.name.endswith("_pkg.sv")]
    return packages + [p for p in order if p not in packages]


def _text_with_includes(path: Path, seen: frozenset[Path] = frozenset()) -> str:
    """``path``'s text without comments, each header it includes in its place: a module a header
    instantiates (the slot's decoupler, rp_decoupled.svh) is the including file's need. Headers
    are looked up beside the file, then in the RTL folder, as the builds' include paths do."""
    text = _COMMENTS.sub("", path.read_text())

    def expand(match: re.Match) -> str:
        for folder in (path.parent, rtl_dir()):
            header = folder / match.group(1)
            if header.exists() and header not in seen:
                return _text_with_includes(header, seen | {path})
        return ""

    return _INCLUDE.sub(expand, text)


def tcl_word(text: str) -> str:
    """``text`` as one Tcl word (braced if need be); text Tcl could not take is refused."""
    if re.fullmatch(r"[\w./:\-]+", text):
        return text
    if "{" in text or "}" in text or "\\" in text:
        raise FpgashareError(f"cannot quote {text!r} for Tcl")
    return "{" + text + "}"


def tcl_list(items) -> str:
    """``items`` as Tcl words separated by spaces."""
    return " ".join(tcl_word(str(i)) for i in items)


