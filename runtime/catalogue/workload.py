"""Workload files (TOML): a platform, a seed, a simulated duration and pipelines.

    platform = "zcu104"                   # a shipped platform name, or a manifest path (relative to this file)
    seed = 7
    duration_s = 10.0
    [[pipeline]]
    name = "edges"
    class = "realtime"                    # realtime | besteffort
    period_ms = 16.7
    deadline_ms = 16.7                    # optional, default = period
    frame = [720, 1280]                   # rows, cols
    stages = ["gauss3x3", "sobel_mag", "threshold"]
    jitter_ms = 0.5                       # optional release jitter: frame k comes in [k*period, k*period + jitter)
    offset_ms = 3.0                       # optional phase: the first release (default 0)
    sweep = "edges"                       # optional: the pipeline `--sweep` copies by default
    [[pipeline]]
    name = "detector"
    class = "besteffort"
    model = "edge_cnn"

Every error names the file, the pipeline and the key.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from fpgashare.backends.simrun import MIN_SIDE, resolve_chain
from fpgashare.catalogue.modules import Stage
from fpgashare.catalogue.passes import pass_inputs, pass_seconds, split_chain
from fpgashare.catalogue.platform import Platform, load_platform
from fpgashare.catalogue.resources import resolve
from fpgashare.catalogue.toml_table import TomlTable, read_toml
from fpgashare.catalogue.vision_timing import chain_cycles
from fpgashare.errors import FpgashareError, WorkloadError

CLASSES = ("realtime", "besteffort")
DNN_MODELS = ("digits_cnn", "printed_digits", "edge_cnn")


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    klass: str                         #: "realtime" or "besteffort"
    period_s: float = 0.0
    deadline_s: float = 0.0
    frame: tuple[int, int] = (0, 0)
    stages: tuple[Stage, ...] = ()
    jitter_s: float = 0.0
    model: str | None = None
    exec_s: float = 0.0                #: the chain's compute time per frame at the fabric clock
    offset_s: float = 0.0              #: the first release, after the registration window
    passes: tuple[int, ...] = ()       #: stages per pass through memory (runtime/catalogue/passes.py); () = one
    pass_exec: tuple[float, ...] = ()  #: each pass's stream time; () = (exec_s,)
    #: Stages the host runs before and after the fabric's (``fallback="cpu"``, runtime/sched/host/cpu_work.py),
    #: and their CPU bounds; ``deadline_s`` is then the fabric part's: the frame's minus both bounds.
    cpu_before: tuple[Stage, ...] = ()
    cpu_after: tuple[Stage, ...] = ()
    cpu_before_s: float = 0.0
    cpu_after_s: float = 0.0
    host: bool = False                 #: runs wholly on the host: no stage (or no DNN tile) on the fabric
    #: How much later than ``due_s`` from its take a frame with host stages may end under the
    #: guarantee: the loop's late notices of its hand-overs (runtime/sched/host/host_cost.py).
    handover_s: float = 0.0

    def release_s(self, index: int, seed: int) -> float:
        """Frame ``index``'s release from the first one: its nominal time plus its jitter, drawn
        from (seed, pipeline, index) alone, so any prefix of a run releases exactly as the run."""
        nominal = self.offset_s + index * self.period_s
        if not self.jitter_s:
            return nominal
        return nominal + random.Random(f"{seed}/{self.name}/{index}").random() * self.jitter_s

    @property
    def realtime(self) -> bool:
        return self.klass == "realtime"

    @property
    def due_s(self) -> float:
        """The frame's deadline from its release, CPU stages included (what the app asked for)."""
        return self.deadline_s + self.cpu_before_s + self.cpu_after_s

    @property
    def on_cpu_only(self) -> bool:
        """A pipeline the fabric takes no part of: it runs wholly on the host."""
        return self.host

    @property
    def placement(self) -> tuple[tuple[str, str], ...]:
        """(stage, "cpu" or "fpga") for every stage of the chain the app registered, in order (a
        DNN pipeline: its model)."""
        if not self.realtime:
            return ((self.model or "", "cpu" if self.host else "fpga"),)
        return tuple([(s.name, "cpu") for s in self.cpu_before] + [(s.name, "fpga") for s in self.stages]
                     + [(s.name, "cpu") for s in self.cpu_after])

    @cached_property
    def modules(self) -> tuple[str, ...]:
        """Module of each stage, in chain order."""
        return tuple(s.kind.name for s in self.stages)

    @cached_property
    def module_counts(self) -> dict[str, int]:
        """How many copies of each module the chain uses at once (in its busiest pass)."""
        counts: Counter[str] = Counter()
        for per_pass in self.pass_module_counts:
            counts |= Counter(per_pass)
        return dict(counts)

    @cached_property
    def pass_stages(self) -> tuple[tuple[Stage, ...], ...]:
        """The stages of each pass through memory (one pass: the whole chain)."""
        counts, out, k = self.passes or (len(self.stages),), [], 0
        for count in counts:
            out.append(self.stages[k:k + count])
            k += count
        return tuple(out)

    @cached_property
    def pass_modules(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(s.kind.name for s in stages) for stages in self.pass_stages)

    @cached_property
    def pass_module_counts(self) -> tuple[dict[str, int], ...]:
        return tuple(dict(Counter(modules)) for modules in self.pass_modules)

    @cached_property
    def pass_seconds(self) -> tuple[float, ...]:
        return self.pass_exec or (self.exec_s,)

    @cached_property
    def pass_remaining(self) -> tuple[float, ...]:
        """Stream time from each pass to the end of the chain."""
        return tuple(sum(self.pass_seconds[k:]) for k in range(len(self.pass_seconds)))

    @cached_property
    def ddr_bytes_per_frame(self) -> int:
        """Bytes one frame moves to and from DDR: each pass's DMA reads its input and writes its
        output (a chain in passes parks each intermediate frame there and reads it back)."""
        total, (rows, cols) = 0, self.frame
        for stages in self.pass_stages if self.stages else ():
            total += math.prod(stages[0].kind.input_shape(rows, cols))
            for stage in stages:
                rows, cols = stage.kind.output_shape(rows, cols)
            total += rows * cols * max(1, stages[-1].kind.channels_out)
        return total

    @cached_property
    def pass_input_shapes(self) -> tuple[tuple[int, ...], ...]:
        """The array shape each pass reads (rows, cols[, channels])."""
        sizes = pass_inputs(self.stages, [len(s) for s in self.pass_stages], *self.frame)
        return tuple(stages[0].kind.input_shape(*size) for stages, size in zip(self.pass_stages, sizes, strict=True))


@dataclass(frozen=True)
class Workload:
    path: Path
    platform: Platform
    seed: int
    duration_s: float
    pipelines: tuple[PipelineSpec, ...]
    sweep: str | None = None           #: the real-time pipeline a sweep copies unless told otherwise

    def with_copies(self, name: str, count: int) -> Workload:
        """``count`` copies of real-time pipeline ``name`` (named name#1, name#2, ...): the first
        in its place, the others after every pipeline, as if registered later."""
        base = next((p for p in self.pipelines if p.name == name), None)
        if base is None or not base.realtime:
            raise WorkloadError(f"{self.path}: no real-time pipeline {name!r} to sweep")
        copies = [replace(base, name=f"{name}#{i + 1}") for i in range(count)]
        pipelines = tuple(copies[0] if p.name == name else p for p in self.pipelines) + tuple(copies[1:])
        return replace(self, pipelines=pipelines)


def _platform_near(workload_file: Path, name: str) -> str | Path:
    """A workload's platform: a manifest beside (relative to) the workload file, else as given
    (a path from the working folder, or a shipped platform's name)."""
    beside = workload_file.parent / name
    return beside if beside.is_file() else name


def load_workload(path: str | Path) -> Workload:
    """Load and validate a workload: a path, or a suite shipped with the package by name."""
    file = resolve("suite", path)
    top = read_toml(file, "workload file", WorkloadError)
    platform_name = top.get("platform", str)
    try:
        platform = load_platform(_platform_near(file, platform_name))
    except FpgashareError as exc:
        raise WorkloadError(f"{file}: platform: {exc}") from None
    seed = top.get("seed", int, 0)
    duration = float(top.positive("duration_s", (int, float)))
    entries = top.get("pipeline", list)
    sweep = top.get("sweep", str, None)
    top.done()
    pipelines, names = [], set()
    for i, entry in enumerate(entries):
        where = f"pipeline[{i}]"
        t = TomlTable(file, where, entry, WorkloadError)
        name = t.get("name", str)
        where = f"pipeline {name!r}"
        t = TomlTable(file, where, entry, WorkloadError)
        t.get("name", str)
        if name in names:
            raise WorkloadError(f"{file}: {where}: the name is used twice")
        names.add(name)
        klass = t.get("class", str)
        if klass not in CLASSES:
            raise WorkloadError(f"{file}: {where}.class must be one of {', '.join(CLASSES)}, not {klass!r}")
        if klass == "besteffort":
            model = t.get("model", str)
            if model not in DNN_MODELS:
                raise WorkloadError(f"{file}: {where}.model: unknown model {model!r} ({', '.join(DNN_MODELS)})")
            t.done()
            pipelines.append(PipelineSpec(name, klass, model=model))
            continue
        pipelines.append(_realtime(file, where, t, name, platform))
        t.done()
    if not pipelines:
        raise WorkloadError(f"{file}: no [[pipeline]] entries")
    if sweep is not None and sweep not in {p.name for p in pipelines if p.realtime}:
        raise WorkloadError(f"{file}: sweep: {sweep!r} is not a real-time pipeline of this workload")
    return Workload(file, platform, seed, duration, tuple(pipelines), sweep)


def _realtime(file: Path, where: str, t: TomlTable, name: str, platform: Platform) -> PipelineSpec:
    period = float(t.positive("period_ms", (int, float))) / 1e3
    deadline = float(t.positive("deadline_ms", (int, float), period * 1e3)) / 1e3
    jitter = float(t.get("jitter_ms", (int, float), 0.0)) / 1e3
    offset = float(t.get("offset_ms", (int, float), 0.0)) / 1e3
    frame = t.get("frame", list)
    names = t.get("stages", list)
    if not (math.isfinite(offset) and 0 <= offset):
        raise WorkloadError(f"{file}: {where}.offset_ms must be a finite number >= 0, not {offset * 1e3!r}")
    try:
        spec = realtime_spec(name, [str(n) for n in names], period, deadline, frame, platform, jitter_s=jitter)
    except WorkloadError as exc:
        raise WorkloadError(f"{file}: {where}{exc}") from None
    return replace(spec, offset_s=offset)


def realtime_spec(name: str, stages: list[str], period_s: float, deadline_s: float, frame,
                  platform: Platform, overrides: dict | None = None, jitter_s: float = 0.0) -> PipelineSpec:
    """A real-time pipeline checked against ``platform``. The message of a WorkloadError starts
    with the key at fault (".stages: ...", ".frame ...", ": ..."), for the caller to prefix."""
    if not 0 <= jitter_s < period_s:
        raise WorkloadError(".jitter_ms must be in [0, period_ms)")
    if not (isinstance(frame, (list, tuple)) and len(frame) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in frame)):
        raise WorkloadError(f".frame must be [rows, cols], not {frame!r}")
    rows, cols = frame
    if not (MIN_SIDE <= rows <= platform.max_height and MIN_SIDE <= cols <= platform.max_width):
        raise WorkloadError(f".frame {rows}x{cols} is outside {MIN_SIDE}..{platform.max_height} "
                            f"rows and {MIN_SIDE}..{platform.max_width} cols")
    try:
        chain = resolve_chain(stages, overrides or {})
    except FpgashareError as exc:
        raise WorkloadError(f".stages: {exc}") from None
    for stage in chain:
        if stage.kind.name not in platform.modules:
            raise WorkloadError(f".stages: {platform.name} has no {stage.kind.name} module")
    try:
        counts = split_chain(chain, rows, cols, platform)
    except FpgashareError as exc:
        raise WorkloadError(f".stages: {exc}") from None
    if len(counts) == 1:
        exec_s = chain_cycles(chain, rows, cols, platform.pixels_per_clock) / platform.fabric_clock_hz
        if exec_s > deadline_s:
            raise WorkloadError(f": one {rows}x{cols} frame takes {exec_s * 1e3:.2f} ms through "
                                f"{'/'.join(stages)}, more than its {deadline_s * 1e3:.2f} ms deadline")
        return PipelineSpec(name, "realtime", period_s, deadline_s, (rows, cols), tuple(chain), jitter_s, None,
                            exec_s)
    # Several passes through memory: whether they (and their loads) meet the deadline is the
    # admission analysis's question, which names the pass that does not fit.
    seconds = pass_seconds(chain, counts, rows, cols, platform)
    return PipelineSpec(name, "realtime", period_s, deadline_s, (rows, cols), tuple(chain), jitter_s, None,
                        sum(seconds), passes=counts, pass_exec=seconds)


def on_platform(spec: PipelineSpec, platform: Platform) -> PipelineSpec:
    """``spec`` with its chain cut into passes for ``platform`` (a partition of the board has fewer
    slots than the board the spec was checked against): the same frames, stages and deadlines.
    Raises FpgashareError when a stage has no slot there."""
    if not spec.realtime or not spec.stages:
        return spec
    rows, cols = spec.frame
    counts = split_chain(spec.stages, rows, cols, platform)
    if len(counts) == 1:
        exec_s = chain_cycles(spec.stages, rows, cols, platform.pixels_per_clock) / platform.fabric_clock_hz
        return replace(spec, passes=(), pass_exec=(), exec_s=exec_s)
    seconds = pass_seconds(spec.stages, counts, rows, cols, platform)
    return replace(spec, passes=counts, pass_exec=seconds, exec_s=sum(seconds))
