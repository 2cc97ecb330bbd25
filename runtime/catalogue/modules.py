"""The catalogue of reconfigurable modules (RMs): ids, register maps and named presets.

A module id is what a partial bitstream's frame data names and what the configuration port
activates in a slot (its number is in the hardware tables, runtime/hwtables/tables.toml). A
preset is a module plus register values, so ``gauss3x3`` and ``sobel_x`` both load the
``conv3x3`` bitstream and differ only in registers (no reconfiguration between them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fpgashare.errors import ModuleError
from fpgashare.hwtables.tables import MODULE_IDS, MREG_FRAMES, MREG_HEIGHT, MREG_ID, MREG_STATUS, MREG_WIDTH

#: Registers every vision module has, by word index (the hardware tables' MREG_*).
COMMON_REGS = {"ID": MREG_ID, "WIDTH": MREG_WIDTH, "HEIGHT": MREG_HEIGHT, "STATUS": MREG_STATUS, "FRAMES": MREG_FRAMES}


@dataclass(frozen=True)
class ModuleKind:
    """One reconfigurable module design."""

    name: str
    module_id: int
    regs: Mapping[str, int]
    read_only: frozenset[str]
    channels_in: int = 1      #: 1 = 8-bit gray, 2 = two gray frames side by side, 3 = 24-bit RGB
    channels_out: int = 1     #: 3 = three bytes per pixel (rgb2hsv: H, S, V); a chain ends in 1
    halves: bool = False      #: output is floor(H/2) x floor(W/2)
    defaults: Mapping[str, int] = field(default_factory=dict)
    kernel_kind: str = "vision"  #: "vision" (a pixel stream, presets) or "dnn" (a dnn_tile)

    def reg_index(self, reg: str) -> int:
        """Word index of register ``reg``; ModuleError if this module has no such register."""
        try:
            return self.regs[reg.upper()]
        except KeyError:
            known = ", ".join(sorted(self.regs))
            raise ModuleError(f"module {self.name} has no register {reg!r} (registers: {known})") from None

    def output_shape(self, rows: int, cols: int) -> tuple[int, int]:
        """Output frame shape for an input of rows x cols."""
        return (rows // 2, cols // 2) if self.halves else (rows, cols)

    def input_shape(self, rows: int, cols: int) -> tuple[int, ...]:
        """Shape of the frame array this module takes: rows x cols, with a channel axis if more than one."""
        return (rows, cols, self.channels_in) if self.channels_in > 1 else (rows, cols)


def _kind(name: str, *args, **kwargs) -> ModuleKind:
    """A module kind whose id is the hardware tables' id for ``name``."""
    return ModuleKind(name, MODULE_IDS[name], *args, **kwargs)


def _regs(**extra: int) -> dict[str, int]:
    return {**COMMON_REGS, **extra}


_CONV_REGS = _regs(**{f"K{n}": 5 + n for n in range(9)}, MUL=14, SHIFT=15, FLAGS=16)
_RO = frozenset({"ID", "STATUS", "FRAMES"})

KINDS: dict[str, ModuleKind] = {
    k.name: k
    for k in (
        _kind("conv3x3", _CONV_REGS, _RO, defaults={"K4": 1, "MUL": 1}),
        _kind("sobel_mag", _regs(), _RO),
        _kind("threshold", _regs(THRESH=5, MAXVAL=6, TYPE=7), _RO,
                   defaults={"THRESH": 127, "MAXVAL": 255, "TYPE": 0}),
        _kind("downscale2x", _regs(), _RO, halves=True),
        _kind("rgb2gray", _regs(CR=5, CG=6, CB=7, SHIFT=8), _RO, channels_in=3,
                   defaults={"CR": 9798, "CG": 19235, "CB": 3735, "SHIFT": 15}),
        _kind("dnn_tile", _regs(MODE=5, NLAYERS=6, IMAGE_CYCLES=7, INFO=8, ACT_ENTRIES=9,
                                        W_ENTRIES=10, PG_ENTRIES=11),
                   frozenset({"ID", "STATUS", "FRAMES", "NLAYERS", "IMAGE_CYCLES", "INFO", "ACT_ENTRIES",
                              "W_ENTRIES", "PG_ENTRIES"}), kernel_kind="dnn"),
        # rank3x3.sv with RANK 0, 8 and 4: one design, three bitstreams.
        _kind("erode3x3", _regs(), _RO),
        _kind("dilate3x3", _regs(), _RO),
        _kind("median3x3", _regs(), _RO),
        _kind("rgb2hsv", _regs(), _RO, channels_in=3, channels_out=3),
        _kind("in_range", _regs(LO0=5, HI0=6, LO1=7, HI1=8, LO2=9, HI2=10), _RO, channels_in=3,
                   defaults={"LO0": 0, "HI0": 255, "LO1": 0, "HI1": 255, "LO2": 0, "HI2": 255}),
        _kind("moments", _regs(M00=5, M10_LO=6, M10_HI=7, M01_LO=8, M01_HI=9),
                   _RO | {"M00", "M10_LO", "M10_HI", "M01_LO", "M01_HI"}),
        # Two-input modules: channel 0 the frame, channel 1 the reference / background.
        _kind("absdiff", _regs(), _RO, channels_in=2),
        _kind("bg_update", _regs(K=5), _RO, channels_in=2, defaults={"K": 4}),
        _kind("fast9", _regs(THRESH=5), _RO, defaults={"THRESH": 10}),
        # A 7x7 template in T0..T12 (four pixels a register); where it matches best, in BEST*.
        _kind("template_match", _regs(**{f"T{n}": 5 + n for n in range(13)}, BEST=18, BEST_X=19, BEST_Y=20),
                   _RO | {"BEST", "BEST_X", "BEST_Y"}),
    )
}
KINDS_BY_ID = {k.module_id: k for k in KINDS.values()}

#: cv2.threshold type names -> TYPE register values.
THRESHOLD_TYPES = {"binary": 0, "binary_inv": 1, "trunc": 2, "tozero": 3, "tozero_inv": 4}


def _kernel(k: list[int], mul: int = 1, shift: int = 0, absolute: bool = False) -> dict[str, int]:
    regs = {f"K{n}": v for n, v in enumerate(k)}
    regs.update(MUL=mul, SHIFT=shift, FLAGS=int(absolute))
    return regs


#: Named presets: name -> (module, register values). Each equals one OpenCV call (vision_ref.py).
PRESETS: dict[str, tuple[str, dict[str, int]]] = {
    "gauss3x3": ("conv3x3", _kernel([1, 2, 1, 2, 4, 2, 1, 2, 1], shift=4)),
    # floor(S/9 + 0.5) == (S*3641 + 2^14) >> 15 for every S in 0..2295 (checked exhaustively).
    "box3x3": ("conv3x3", _kernel([1] * 9, mul=3641, shift=15)),
    "sharpen3x3": ("conv3x3", _kernel([0, -1, 0, -1, 5, -1, 0, -1, 0])),
    "laplacian3x3": ("conv3x3", _kernel([0, 1, 0, 1, -4, 1, 0, 1, 0], absolute=True)),
    "sobel_x": ("conv3x3", _kernel([-1, 0, 1, -2, 0, 2, -1, 0, 1], absolute=True)),
    "sobel_y": ("conv3x3", _kernel([-1, -2, -1, 0, 0, 0, 1, 2, 1], absolute=True)),
}


#: Chain presets: one name for a fixed sequence of stages (each stage its own slot).
CHAIN_PRESETS: dict[str, tuple[str, ...]] = {
    "open3x3": ("erode3x3", "dilate3x3"),     # cv2.morphologyEx(MORPH_OPEN), 3x3 rect, BORDER_REPLICATE
    "close3x3": ("dilate3x3", "erode3x3"),    # cv2.morphologyEx(MORPH_CLOSE)
}


def expand_chain(names: list[str] | tuple[str, ...]) -> list[str]:
    """Replace every chain preset in ``names`` by its stages."""
    out: list[str] = []
    for name in names:
        out.extend(CHAIN_PRESETS.get(name, (name,)))
    return out


@dataclass(frozen=True)
class Stage:
    """A pipeline stage: a module and the full set of register values to program."""

    name: str              #: the name the user gave (preset or module)
    kind: ModuleKind
    regs: Mapping[str, int]


def resolve_stage(name: str, overrides: Mapping[str, int] | None = None) -> Stage:
    """Turn a module or preset name (plus register overrides) into a Stage.

    Raises ModuleError naming the unknown module or register, or a value out of range.
    """
    if name in PRESETS:
        kind_name, preset = PRESETS[name]
        regs = {**KINDS[kind_name].defaults, **preset}
    elif name in KINDS:
        kind_name, regs = name, dict(KINDS[name].defaults)
    else:
        if name in CHAIN_PRESETS:
            raise ModuleError(f"{name} is a chain of {' -> '.join(CHAIN_PRESETS[name])}, not one stage")
        known = ", ".join(sorted([*KINDS, *PRESETS, *CHAIN_PRESETS]))
        raise ModuleError(f"unknown module or preset {name!r} (known: {known})")
    kind = KINDS[kind_name]
    if kind.kernel_kind != "vision":
        raise ModuleError(f"{name} is not a vision module; DNN tiles run through `fpgashare dnn`")
    for reg, value in (overrides or {}).items():
        key = reg.upper()
        kind.reg_index(key)
        if key in kind.read_only or key in ("WIDTH", "HEIGHT"):
            raise ModuleError(f"register {name}.{key} is set by the runtime and cannot be overridden")
        if not isinstance(value, int) or not -(2**31) <= value < 2**32:
            raise ModuleError(f"register {name}.{key} = {value!r} is not a 32-bit integer")
        regs[key] = value
    return Stage(name=name, kind=kind, regs=regs)


#: template_match's template side.
TEMPLATE_SIDE = 7


def template_registers(template) -> dict[str, int]:
    """T0..T12 for a 7x7 uint8 template: pixel 4j + k (row-major) in byte k of Tj."""
    rows = [[int(v) for v in row] for row in template]
    flat = [v for row in rows for v in row]
    if len(rows) != TEMPLATE_SIDE or any(len(r) != TEMPLATE_SIDE for r in rows) or not all(0 <= v <= 255 for v in flat):
        raise ModuleError(f"template_match takes a {TEMPLATE_SIDE}x{TEMPLATE_SIDE} template of 8-bit pixels, "
                             f"not {len(rows)} rows of {sorted({len(r) for r in rows})} values")
    flat += [0] * 3
    return {f"T{j}": sum(flat[4 * j + k] << (8 * k) for k in range(4)) for j in range(13)}


def register_words(stage: Stage, rows: int, cols: int) -> list[tuple[int, int]]:
    """(word index, 32-bit value) writes that program ``stage`` for a rows x cols input frame."""
    writes = [(stage.kind.reg_index("WIDTH"), cols), (stage.kind.reg_index("HEIGHT"), rows)]
    for reg, value in sorted(stage.regs.items(), key=lambda kv: stage.kind.reg_index(kv[0])):
        writes.append((stage.kind.reg_index(reg), value & 0xFFFFFFFF))
    return writes
