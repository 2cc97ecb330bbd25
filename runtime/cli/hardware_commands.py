"""What the hardware commands run: ``bitstream build|inspect``, ``board package``, ``rtl tables|synth``,
``sim run`` (the parser is cli/main.py)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np
from fpgashare.cli.output import emit
from fpgashare.errors import FpgashareError

log = logging.getLogger("fpgashare")



def cmd_bitstream_build(args: argparse.Namespace) -> int:
    from fpgashare.bitstream.registry import build_all
    from fpgashare.catalogue.platform import load_platform

    platform = load_platform(args.platform)
    if args.relocatable:
        return _bitstream_build_relocatable(platform, Path(args.out), args.json)
    entries = build_all(platform, Path(args.out))
    lines = [f"{e.path}  {e.size:>9} B  {e.slot:<18} {e.module:<12} sha256 {e.sha256[:16]}" for e in entries]
    lines.append(f"{len(entries)} partial bitstreams for {platform.name}, index {Path(args.out) / 'index.json'}")
    emit({"platform": platform.name, "files": [str(e.path) for e in entries]}, args.json, lines)
    return 0


def _bitstream_build_relocatable(platform, out: Path, as_json: bool) -> int:
    """One partial per module (per slot shape), moved to the slot it goes into at load time."""
    from fpgashare.bitstream.registry import build_all

    entries = build_all(platform, out, relocatable=True)
    pairs = sum(len(e.slots) for e in entries)
    lines = [f"{e.path}  {e.size:>9} B  {e.module:<12} built for {e.slot}, serves {', '.join(e.slots)}"
             for e in entries]
    lines.append(f"{len(entries)} relocatable partial bitstreams for {platform.name} serve {pairs} (slot, module) "
                 f"pairs; index {out / 'index.json'}")
    emit({"platform": platform.name, "relocatable": True, "files": [str(e.path) for e in entries],
           "pairs": pairs}, as_json, lines)
    return 0


def _platform_for_part(part: str, explicit: str | None, design: str = ""):
    from fpgashare.bitstream.registry import part_field
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.catalogue.resources import names

    if explicit:
        return load_platform(explicit)
    # The design field names the shell (``zcu104-x4_shell;...``): several platforms share a part, and
    # their regions differ (a fused region's partial spans several slots).
    named = design.split(";", 1)[0].removesuffix("_shell")
    for name in sorted(names("platform"), key=lambda n: n != named):
        platform = load_platform(name)
        if part_field(platform) == part:
            return platform
    raise FpgashareError(f"no shipped platform ({', '.join(names('platform'))}) is for part {part!r}; pass --platform")


def cmd_bitstream_inspect(args: argparse.Namespace) -> int:
    from fpgashare.bitstream.bitfile import parse_bit
    from fpgashare.bitstream.registry import inspect_bytes

    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FpgashareError(f"{path}: cannot read: {exc.strerror}") from None
    header, _ = parse_bit(data)
    platform = _platform_for_part(header.part, args.platform, header.design)
    report = inspect_bytes(data, platform)
    info = {"file": str(path), "platform": platform.name, **report.as_dict()}
    lines = [f"{k:>16}: {v}" for k, v in info.items()]
    emit(info, args.json, lines)
    if not report.verdict.ok:
        sys.stderr.write(f"error: {path}: {report.verdict.message()}\n")
        return 1
    return 0


def _read_image(path: str, rgb: bool) -> np.ndarray:
    import cv2

    if not Path(path).is_file():
        raise FpgashareError(f"--in {path}: no such file")
    image = cv2.imread(path, cv2.IMREAD_COLOR if rgb else cv2.IMREAD_GRAYSCALE)
    if image is None:
        raise FpgashareError(f"--in {path}: not an image OpenCV can read")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB) if rgb else image


def cmd_board_package(args: argparse.Namespace) -> int:
    """The folder that goes under /etc/fpgashare on a board (runtime/vivado/package.py)."""
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.vivado.package import package

    result = package(load_platform(args.platform), Path(args.out),
                     partials=Path(args.partials) if args.partials else None,
                     shell=Path(args.shell) if args.shell else None,
                     relocatable=args.relocatable, dfx_mgr=args.dfx_mgr)
    lines = [f"{result.platform}: {result.partials} {result.origin} partial bitstream files, "
             f"shell overlay {'included' if result.shell else 'not included'}, in {result.out}"]
    if result.dfx_mgr:
        lines.append(f"  dfx-mgr firmware folder: {result.dfx_mgr}")
    lines += [f"  still needed: {m}" for m in result.missing]
    lines.append(f"  install: sudo cp -r {result.out}/. /etc/fpgashare/")
    emit(result.as_dict(), args.json, lines)
    return 0


def cmd_sim_run(args: argparse.Namespace) -> int:
    import cv2
    from fpgashare.backends.simrun import chain_board, parse_overrides, resolve_chain, run_chain
    from fpgashare.catalogue.platform import load_platform

    platform = load_platform(args.platform)
    chain = [c.strip() for c in args.chain.split(",") if c.strip()]
    stages = resolve_chain(chain, parse_overrides(args.set or [], chain))
    frame = _read_image(args.input, rgb=stages[0].kind.channels_in == 3)
    if stages[0].kind.channels_in == 2:      # absdiff, bg_update: the frame and its reference side by side
        if not args.ref:
            raise FpgashareError(f"{stages[0].name} compares two frames: give the reference with --ref")
        ref = _read_image(args.ref, rgb=False)
        if ref.shape != frame.shape:
            raise FpgashareError(f"--ref {args.ref}: {ref.shape[1]}x{ref.shape[0]}, but --in is "
                                 f"{frame.shape[1]}x{frame.shape[0]}")
        frame = np.dstack([frame, ref])
    out_path = Path(args.output)
    if out_path.suffix.lower() not in (".png", ".pgm", ".bmp", ".tif", ".tiff"):
        raise FpgashareError(f"--out {out_path}: use a lossless format (.png, .pgm, .bmp, .tif)")
    result = run_chain(chain_board(platform, stages), stages, frame)
    if not cv2.imwrite(str(out_path), result.output):
        raise FpgashareError(f"--out {out_path}: could not write the image")
    info = {"platform": platform.name, "chain": chain, "out": str(out_path), **result.as_dict()}
    lines = [f"{platform.name}: {' -> '.join(chain)} on a {frame.shape[1]}x{frame.shape[0]} frame",
             *(f"  pass {n + 1}: " + ", ".join(f"{st} in slot {sl}" for st, sl in p.items())
               for n, p in enumerate(result.passes)),
             f"  loads: {result.load_words} words, {result.load_cycles} port cycles = "
             f"{result.load_s * 1e3:.3f} ms at {platform.config_port.clock_hz / 1e6:.0f} MHz",
             f"  compute: {result.compute_cycles} cycles = {result.compute_s * 1e3:.3f} ms at "
             f"{platform.fabric_clock_hz / 1e6:.0f} MHz",
             *(f"  {st:<14} registers after the frame: " + ", ".join(f"{k}={v}" for k, v in regs.items())
               for st, regs in result.results.items()),
             f"  simulated in {result.wall_s:.2f} s wall ({result.load_wall_s:.2f} s loading); streaming "
             f"{result.pixels_per_s / 1e6:.2f} M px/s wall, {result.pixels_per_cpu_s / 1e6:.2f} M per CPU s; "
             f"wrote {out_path}"]
    emit(info, args.json, lines)
    return 0


def cmd_rtl_tables(args: argparse.Namespace) -> int:
    from fpgashare.hwtables.generate import run

    code, lines = run(args.check)
    emit({"exit": code, "lines": lines}, False, lines)      # the command has no --json
    return code


def cmd_rtl_synth(args: argparse.Namespace) -> int:
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.cli.synth import RESOURCES, SHELL, report, synth_platform

    platform = load_platform(args.platform)
    names = None
    if args.module:
        names = [args.module] if args.module == SHELL else [platform.module(args.module).name]
    result = report(platform, synth_platform(platform, names, jobs=args.jobs))
    if args.update_manifest:
        from fpgashare.cli.synth import manifest_figures, update_manifest

        stale = {row["module"]: manifest_figures(row["synthesized"]) for row in result["modules"]
                 if row["module"] != SHELL and not row["headroom_ok"]}
        if stale:
            platform.path.write_text(update_manifest(platform.path.read_text(), stale))
            log.info("%s: resources of %s now from synthesis", platform.path, ", ".join(sorted(stale)))
            result = report(load_platform(platform.path), synth_platform(load_platform(platform.path), names,
                                                                          jobs=args.jobs))

    def cols(fig: dict[str, int]) -> str:
        return " ".join(f"{fig[r]:>6}" for r in RESOURCES)

    head = " ".join(f"{r:>6}" for r in RESOURCES)
    lines = [f"{platform.name}: Yosys synth_xilinx ({result['modules'][0]['tool']}); manifest = synthesized x1..1.5",
             f"{'module':<12} {'':<11} {head}  fits"]
    for row in result["modules"]:
        lines.append(f"{row['module']:<12} {'synthesized':<11} {cols(row['synthesized'])}")
        if "manifest" in row:
            over = sorted({f"{slot}: {', '.join(s['over'])}" for slot, s in row["slots"].items() if s["over"]})
            lines.append(f"{'':<12} {'manifest':<11} {cols(row['manifest'])}  "
                         f"{'yes' if row['fits'] else 'NO (' + '; '.join(over) + ')'}"
                         f"{'' if row['headroom_ok'] else '  (manifest outside 1x..1.5x)'}")
    emit(result, args.json, lines)
    return 0
