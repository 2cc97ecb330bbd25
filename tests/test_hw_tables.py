"""The hardware tables: one source (runtime/hwtables/tables.toml), two generated files that are
current, both sides reading the same numbers, and a source that breaks a rule refused."""

from __future__ import annotations

import copy
import re
import sys

import pytest
from fpgashare.hdl_sim.build import RTL_DIR
from fpgashare.hwtables import generate, tables
from fpgashare.hwtables.source import SOURCE, TableError, tables_from
from hypothesis import given, settings
from hypothesis import strategies as st

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def raw_tables() -> dict:
    return tomllib.loads(SOURCE.read_text())


def test_generated_files_are_current():
    wanted = generate.outputs()
    assert set(wanted) == {generate.SV_OUT, generate.PY_OUT}
    for path, text in wanted.items():
        assert path.read_text() == text, f"{path} is stale: run `fpgashare rtl tables`"
        assert "GENERATED from runtime/hwtables/tables.toml" in text.splitlines()[0]


def test_check_mode_reports_a_stale_file(tmp_path, monkeypatch):
    monkeypatch.setattr(generate, "PY_OUT", tmp_path / "tables.py")
    monkeypatch.setattr(generate, "SV_OUT", tmp_path / "pkg.sv")
    assert generate.run(check=True)[0] == 1
    assert generate.run(check=False)[0] == 0
    assert generate.run(check=True)[0] == 0
    (tmp_path / "pkg.sv").write_text("// edited by hand\n")
    assert generate.stale() == [tmp_path / "pkg.sv"]


def test_a_passing_check_says_what_it_checked(tmp_path, monkeypatch, capsys):
    """``fpgashare rtl tables --check`` that finds nothing stale prints a line naming both files
    and the source they match: silence could be a check that never ran."""
    from fpgashare.cli.main import main

    monkeypatch.setattr(generate, "PY_OUT", tmp_path / "tables.py")
    monkeypatch.setattr(generate, "SV_OUT", tmp_path / "pkg.sv")
    assert main(["rtl", "tables"]) == 0
    capsys.readouterr()
    assert main(["rtl", "tables", "--check"]) == 0
    out = capsys.readouterr().out
    assert "match" in out and str(tmp_path / "pkg.sv") in out and str(tmp_path / "tables.py") in out
    assert str(SOURCE) in out


def test_the_runtime_reads_the_tables():
    from fpgashare.backends.shell_map import slot_module_of, slot_reg
    from fpgashare.bitstream.packets import PortError
    from fpgashare.catalogue.modules import COMMON_REGS, KINDS
    from fpgashare.dnn import tile_format

    assert PortError is tables.PortError
    assert {k.name: k.module_id for k in KINDS.values()} == {n: i for n, i in tables.MODULE_IDS.items() if i}
    assert COMMON_REGS["FRAMES"] == tables.MREG_FRAMES
    assert tile_format.SEC_SHIFT == tables.SEC_SHIFT
    assert slot_reg(2, tables.SLOT_ROUTE) == tables.SLOT_REG_BASE + 2 * tables.SLOT_REG_STRIDE + tables.SLOT_ROUTE
    top_module = (1 << tables.MODULE_ID_BITS) - 1
    assert slot_module_of(top_module << tables.SLOT_STATUS_MODULE_LSB) == top_module


def test_the_rtl_reads_the_tables():
    """Every module id has its case in rm_library, and the files that used to keep their own copies
    of a table now name the package's constants instead."""
    library = (RTL_DIR / "rm_library.sv").read_text()
    for name in tables.MODULE_IDS:
        assert re.search(rf"\bMOD_{name.upper()}: begin : g_{name}\b", library), name
    port = (RTL_DIR / "config_port.sv").read_text()
    assert "PORT_ERR_UNKNOWN_MODULE" in port and "8'd11" not in port and "32'hAA995566" not in port
    assert "MODULE_ID_BITS" in port


def _rendered_py(raw: dict) -> dict:
    namespace: dict = {}
    exec(compile(generate.render_py(tables_from(raw)), "<tables>", "exec"), namespace)
    return namespace


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True), st.integers(1, 31),
                       max_size=12).filter(lambda d: len(set(d.values())) == len(d) and "blank" not in d))
def test_any_valid_module_table_renders_to_both_sides(modules):
    raw = raw_tables()
    raw["modules"] = {"blank": 0, **modules}
    t = tables_from(raw)
    assert _rendered_py(raw)["MODULE_IDS"] == {"blank": 0, **modules}
    sv = generate.render_sv(t)
    for name, value in modules.items():
        assert f"localparam int MOD_{name.upper()} = {value};" in sv


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 12), st.integers(0, 1 << 12))
def test_a_module_id_must_fit_the_port(bits_less, extra):
    raw = raw_tables()
    bits = raw["config_port"]["MODULE_ID_BITS"] - bits_less
    if bits < 1:
        return
    raw["config_port"]["MODULE_ID_BITS"] = bits
    raw["modules"] = {"blank": 0, "wide": (1 << bits) + extra}
    with pytest.raises(TableError, match="wide"):
        tables_from(raw)
    raw["modules"]["wide"] = (1 << bits) - 1
    assert tables_from(raw).modules["wide"] == (1 << bits) - 1


def _broken(edit) -> dict:
    raw = copy.deepcopy(raw_tables())
    edit(raw)
    return raw


@pytest.mark.parametrize("edit, says", [
    (lambda r: r["config_port"]["errors"].update(NEW=[12, "again"]), "code 12 is used twice"),
    (lambda r: r["modules"].update(again=16), "again and template_match are both 16"),
    (lambda r: r["shell"]["fields"].update(ROUTE_WIDE=[6, 4]), "overlaps"),
    (lambda r: r["shell"]["fields"].update(ROUTE_HIGH=[30, 4]), "inside 32 bits"),
    (lambda r: r["dnn"]["sections"].update(SEC_LATE=16), "SEC_LATE"),
    (lambda r: r["config_port"]["writable"].update(registers=[0, 1, 2, 4]), "not writable"),
    (lambda r: r["modules"].update(blank=3), "blank"),
    (lambda r: r["shell"]["registers"].update(bad_name=20), "not a valid name"),
    (lambda r: r.pop("dnn"), r"missing table \[dnn\]"),
])
def test_a_broken_table_is_refused_by_name(edit, says):
    with pytest.raises(TableError, match=says):
        tables_from(_broken(edit))
