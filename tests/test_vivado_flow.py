"""The Vivado build, checked without Vivado: the generated Tcl runs in a plain Tcl interpreter with
Vivado's commands recorded instead of executed, and every slot, module, pblock, file and output
name it uses must exist and agree with the manifest and the registry; the RTL it reads must
elaborate (pyslang), and fail to when a file is missing. Then ``fpgashare board package``."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from fpgashare.backends.pynq_board import PynqBackend
from fpgashare.bitstream.bitfile import BitHeader, write_bit
from fpgashare.bitstream.registry import Registry, file_name, part_field, relocatable_file_name
from fpgashare.bitstream.relocate import shape_groups
from fpgashare.catalogue.platform import load_platform
from fpgashare.cli.main import main
from fpgashare.errors import BitstreamError
from fpgashare.vivado.flow import BOARDS, write_flow

PLATFORMS = ["pynq-z2", "zcu104"]

#: Vivado commands the flow may call, and what the stand-in answers.
VIVADO = ["create_project", "set_property", "current_project", "current_fileset", "add_files", "read_verilog",
          "update_compile_order", "create_bd_design", "create_bd_cell", "apply_bd_automation", "connect_bd_net",
          "connect_bd_intf_net", "get_bd_pins", "get_bd_intf_pins", "get_bd_cells", "get_bd_addr_segs",
          "get_bd_addr_spaces", "assign_bd_address", "validate_bd_design", "save_bd_design", "get_files",
          "generate_target", "make_wrapper", "synth_design", "write_checkpoint", "close_project",
          "report_utilization", "open_checkpoint", "get_cells", "read_checkpoint", "update_design",
          "create_pblock", "resize_pblock", "get_pblocks", "add_cells_to_pblock", "opt_design", "place_design",
          "route_design", "write_bitstream", "lock_design", "close_design", "pr_verify"]


def partition_cell(k: int) -> str:
    return f"fpgashare_bd_i/shell_ctrl/inst/u_shell/g_slot[{k}].u_slot/u_rm"


class DryRun:
    """build.tcl in a Tcl interpreter; every Vivado command recorded as (name, args)."""

    def __init__(self, folder: Path, slots: int) -> None:
        tkinter = pytest.importorskip("tkinter")
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.hwh = folder / "fake.hwh"
        self.hwh.write_text("<hwh/>")
        self.tcl = tkinter.Tcl()
        for name in VIVADO:
            self.tcl.createcommand(name, self._recorder(name, slots))
        self.tcl.eval(f"set argv {{{folder / 'out'}}}")
        self.tcl.eval(f"source {{{folder / 'build.tcl'}}}")

    def _recorder(self, name: str, slots: int):
        def call(*args):
            self.calls.append((name, args))
            if name == "get_cells" and "-hierarchical" in args:
                return " ".join("{" + partition_cell(k) + "}" for k in range(slots))
            if name == "get_files" and "-all" in args:
                return str(self.hwh)
            if name == "make_wrapper":
                return "fpgashare_bd_wrapper.v"
            return args[-1] if args else ""
        return call

    def of(self, name: str) -> list[tuple[str, ...]]:
        return [args for n, args in self.calls if n == name]


@pytest.fixture(scope="module", params=PLATFORMS)
def flow(request, tmp_path_factory):
    platform = load_platform(request.param)
    folder = tmp_path_factory.mktemp(request.param)
    summary = write_flow(platform, folder)
    return platform, folder, summary, DryRun(folder, len(platform.slots))


def test_every_file_the_tcl_reads_exists(flow):
    _, folder, summary, run = flow
    read = [a[-1] for a in run.of("read_verilog")] + [f for a in run.of("add_files") for f in a[0].split()]
    assert read, "the flow reads no RTL"
    for name in read:
        if name != "fpgashare_bd_wrapper.v":          # written by Vivado's make_wrapper
            assert (folder / name).is_file(), name
    assert json.loads((folder / "flow.json").read_text()) == summary
    assert (folder / "out" / "shell.hwh").read_text() == "<hwh/>"


def test_slots_pblocks_and_configurations_agree_with_the_manifest(flow):
    platform, _, _, run = flow
    pblocks = {a[0] for a in run.of("create_pblock")}
    assert pblocks == {f"pblock_{s.name.replace('/', '_')}" for s in platform.slots}
    ranges = [a[-1] for a in run.of("resize_pblock")]
    assert ranges == [" ".join(BOARDS[platform.name].pblocks[s.name]) for s in platform.slots]
    # each module's configuration puts its checkpoint into exactly the slots the manifest allows
    loaded: dict[str, set[int]] = {}
    for args in run.of("read_checkpoint"):
        cell, dcp = args[1], Path(args[2]).stem
        loaded.setdefault(dcp.removeprefix("rm_"), set()).add(int(cell.split("g_slot[")[1].split("]")[0]))
    assert loaded == {m: {s.index for s in platform.slots_for(m)} for m in platform.modules}
    ooc = [a for a in run.of("synth_design") if "out_of_context" in a]
    assert len(ooc) == len(platform.modules)
    reconfigurable = [a for a in run.of("set_property") if a[0] == "HD.RECONFIGURABLE"]
    assert len(reconfigurable) == len(platform.slots)
    assert len(run.of("lock_design")) == 1 and run.of("pr_verify")


def test_outputs_are_named_as_the_registry_names_them(flow):
    platform, _, summary, run = flow
    written = {Path(a[-1]).name for a in run.of("write_bitstream")}
    natives = {file_name(s, m) for m in platform.modules for s in platform.slots_for(m)}
    movable = {relocatable_file_name(platform, m, g[0]) for m in platform.modules for g in shape_groups(platform, m)}
    assert written == natives | movable | {"shell.bit"}
    assert set(summary["partials"]) == natives and set(summary["relocatable"]) == movable
    assert all("-bin_file" in a for a in run.of("write_bitstream"))
    partial_cells = [a[a.index("-cell") + 1] for a in run.of("write_bitstream") if "-cell" in a]
    assert set(partial_cells) == {partition_cell(s.index) for s in platform.slots}


def test_block_design_names_what_the_pynq_backend_looks_for(flow):
    platform, _, _, run = flow
    cells = {a[-1]: a for a in run.of("create_bd_cell")}
    defaults = inspect.signature(PynqBackend.__init__).parameters
    assert defaults["shell_ip"].default in cells and defaults["dma_ip"].default in cells
    assert cells["shell_ctrl"][cells["shell_ctrl"].index("-reference") + 1] == "fpgashare_shell_top"
    ps = cells["ps"][cells["ps"].index("-vlnv") + 1]
    assert ps.endswith("processing_system7" if platform.family == "zynq7000" else "zynq_ultra_ps_e")
    assert ("board_part", BOARDS[platform.name].board_part) in [a[:2] for a in run.of("set_property")]


def _elaborate(folder: Path, files: list[str], top: str) -> list[str]:
    driver_mod = pytest.importorskip("pyslang.driver")
    driver = driver_mod.Driver()
    driver.addStandardArgs()
    args = " ".join(["slang", "-I", str(folder / "rtl"), "--top", top, *(str(folder / f) for f in files)])
    assert driver.parseCommandLine(args, driver_mod.CommandLineOptions()) and driver.processOptions()
    assert driver.parseAllSources()
    compilation = driver.createCompilation()
    return [str(d.code) for d in compilation.getAllDiagnostics() if d.isError()]


def test_the_rtl_it_reads_elaborates(flow):
    _, folder, summary, _ = flow
    assert _elaborate(folder, summary["static_sources"], "fpgashare_shell_top") == []
    for module, files in summary["rm_sources"].items():
        assert _elaborate(folder, files, "fpgashare_rm") == [], module
    without = [f for f in summary["static_sources"] if not f.endswith("dfx_decoupler.sv")]
    assert _elaborate(folder, without, "fpgashare_shell_top"), "a missing file must be an error"


def test_the_rtl_it_reads_lints_clean(flow):
    """verilator -Wall, as every simulation module: the board's top, its rp_slot and every partition."""
    import subprocess

    from fpgashare.hdl_sim.toolchain import setup_environment, verilator_binary

    _, folder, summary, _ = flow
    setup_environment()
    tops = [("fpgashare_shell_top", summary["static_sources"])]
    tops += [("fpgashare_rm", files) for files in summary["rm_sources"].values()]
    for top, files in tops:
        result = subprocess.run([str(verilator_binary()), "--lint-only", "-Wall", "-Irtl", "--top-module", top,
                                 *files], cwd=folder, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


# -- fpgashare board package

def _vivado_like(platform, folder: Path) -> Path:
    """Files shaped like the Vivado build's output (headers as Vivado writes them)."""
    bits = folder / "bit"
    bits.mkdir(parents=True)
    for module in platform.modules:
        for slot in platform.slots_for(module):
            config = f"{slot.name}/{module}".encode().ljust(64, b"\0")    # stands in for real frames
            header = BitHeader("fpgashare_bd_wrapper;COMPRESS=TRUE;PARTIAL=TRUE;UserID=0XFFFFFFFF;Version=2024.2",
                               part_field(platform), "2026/12/03", "12:00:00")
            (bits / file_name(slot, module)).write_bytes(write_bit(header, config))
    shell = folder / "shell.bit"
    shell.write_bytes(write_bit(BitHeader("fpgashare_bd_wrapper;UserID=0XFFFFFFFF;Version=2024.2",
                                          part_field(platform), "2026/12/03", "12:00:00"), b"\0\0\0\0" * 64))
    (folder / "shell.hwh").write_text("<hwh/>")
    return folder


@pytest.mark.parametrize("name", PLATFORMS)
def test_board_package_with_vivado_outputs(tmp_path, capsys, name):
    platform = load_platform(name)
    build = _vivado_like(platform, tmp_path / "vivado")
    out = tmp_path / "etc"
    assert main(["board", "package", "--platform", name, "--out", str(out), "--partials", str(build / "bit"),
                 "--shell", str(build / "shell.bit"), "--dfx-mgr", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["origin"] == "vivado" and report["shell"]
    for path in ("platform.toml", "fpgashare.service", "shell.bit", "shell.hwh", "bitstreams/index.json"):
        assert (out / path).is_file(), path
    unit = (out / "fpgashare.service").read_text()
    assert "/etc/fpgashare/bitstreams" in unit and "/etc/fpgashare/shell.bit" in unit
    registry = Registry(out / "bitstreams", platform)
    assert registry.vivado and len(registry.pairs()) == sum(len(m.slots) for m in platform.modules.values())
    base = out / "dfx-mgr" / f"{name.replace('-', '_')}_shell"
    assert json.loads((base / "shell.json").read_text())["num_pl_slots"] == len(platform.slots)
    slot_dirs = sorted(p.parent.name for p in base.glob("*/*/accel.json"))
    assert len(slot_dirs) == len(registry.pairs())
    listed = json.loads((out / "package.json").read_text())["files"]
    assert "bitstreams/index.json" in listed and "shell.bit" in listed


def test_board_package_refuses_what_the_daemon_would(tmp_path, capsys, pynq_z2, zcu104):
    build = _vivado_like(pynq_z2, tmp_path / "vivado")
    missing = build / "bit" / file_name(pynq_z2.slots[1], "threshold")
    missing.unlink()
    assert main(["board", "package", "--platform", "pynq-z2", "--out", str(tmp_path / "a"),
                 "--partials", str(build / "bit")]) == 2
    assert "composable_pr_1__threshold.bit is missing" in capsys.readouterr().err
    foreign = tmp_path / "zcu" / "shell.bit"
    foreign.parent.mkdir()
    foreign.write_bytes(write_bit(BitHeader("top", part_field(zcu104), "2026/12/03", "12:00:00"), b"\0" * 64))
    (foreign.parent / "shell.hwh").write_text("<hwh/>")
    assert main(["board", "package", "--platform", "pynq-z2", "--out", str(tmp_path / "b"),
                 "--shell", str(foreign)]) == 2
    assert "built for part" in capsys.readouterr().err
    assert main(["board", "package", "--platform", "pynq-z2", "--out", str(tmp_path / "c"), "--relocatable"]) == 0
    out = capsys.readouterr().out
    # relocatable: one file per module (the PYNQ-Z2's two slots share one shape)
    assert f"{len(pynq_z2.modules)} simulated partial bitstream files" in out and "shell overlay not included" in out
    registry = Registry(tmp_path / "c" / "bitstreams", pynq_z2)
    entry = next(iter(json.loads((tmp_path / "c" / "bitstreams" / "index.json").read_text())["bitstreams"]))
    path = tmp_path / "c" / "bitstreams" / entry["file"]
    path.write_bytes(path.read_bytes()[:-4] + b"\0\0\0\1")
    with pytest.raises(BitstreamError, match="SHA-256 differs"):
        Registry(tmp_path / "c" / "bitstreams", pynq_z2).bitfile(pynq_z2.slots[0], entry["module"])
    assert registry.relocatable
