"""Schedulability analysis for ``edf``: a sufficient test that an admitted set never misses.

The model (README, "Why an admitted set cannot miss", gives the whole argument):

- The shell streams one frame at a time and a frame cannot be preempted; the configuration port
  loads one partial at a time and a load cannot be preempted either. The scheduler (edf under
  its contract, ``runtime/sched/policies/edf.py``) treats a frame's loads and its streaming as one
  non-preemptive job on a *virtual processor*: the most urgent pending frame either streams (its
  modules are resident) or *commits* — it takes the port for its missing modules, and from then on
  no other frame loads or evicts anything until it starts streaming. Any other load, and any frame
  that runs while a committed frame loads, must end before the work it overlaps does, so it costs
  the virtual processor nothing.
- A residency plan pins some modules in slots for good (``ResidencyPlan``); each frame of pipeline
  i then needs at most ``n_i`` loads (its unpinned stages), so its job takes at most
  ``S_i = C_i + p_i * X + n_i * L`` (``L``: the longest load, ``p_i`` passes) on the virtual
  processor, where every operation (a pass, a load) counts ``X``, the shell-register traffic it and
  the operations beside it may cost beyond its stream or port cycles (``control_traffic.py``; a
  load's ``L`` includes its ``X``).
- A chain longer than the fabric runs in passes through memory (runtime/catalogue/passes.py): ``C_i`` is the
  sum of its passes' stream times and ``n_i`` counts every pass's unpinned stages. Its passes are
  separate jobs (a more urgent frame may go between them), so the frame is limited-preemptive;
  using the whole frame's ``S_i`` as the blocking term stays sound, since a frame blocks another
  for at most one pass and its loads (Bertogna & Baruah, IEEE TII 2010).
- Non-preemptive EDF with release jitter (deadline relative to the actual release), processor
  demand analysis with a blocking term, after Jeffay, Stanat & Martel (RTSS 1991) and George,
  Rivierre & Spuri (INRIA RR-2966, 1996); jitter as in Spuri (INRIA RR-2772, 1996): for every
  t >= min D_i,
      sum_i dbf_i(t) + B(t) <= t,   dbf_i(t) = (floor((t - D_i + J_i) / T_i) + 1) * S_i  (t >= D_i)
      B(t) = max({S_j : D_j > t} ∪ {0}) + dnn_block + L * idle_loads + X
  where ``dnn_block`` is the longest DNN batch allowed to overlap a possible release (the
  contract hands the scheduler ``dnn_block - X``: a batch's own traffic may add X), the last X is
  a load or batch timed to end by a release running over by its traffic, and
  ``idle_loads`` says whether one load that serves no pending frame (prefetch, lending, pins) may
  be on the port when a frame arrives. Checked at every step of the demand up to the standard
  bound on the busy period, with numpy.

The analysis hands the scheduler an ``AdmissionContract``: the pinned slots and the blocking the
set can afford (what is left over after the real-time demand goes to the DNN and to prefetch).
"""

from __future__ import annotations

import bisect
import functools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec
from fpgashare.sched.analysis.control_traffic import control_seconds
from fpgashare.sched.analysis.early_commit import early_shifts, shifted
from fpgashare.sched.analysis.early_commit import search as early_commit_search
from fpgashare.sched.analysis.processor_demand import DemandCheck, PinnedFirst, demand_check, release_test
from fpgashare.sched.analysis.residency import ResidencyPlan, residency, unpinned_loads


@dataclass(frozen=True)
class AdmissionContract:
    """What the scheduler promises so that the analysis holds (``runtime/sched/policies/edf.py``)."""

    pinned: dict[int, str] = field(default_factory=dict)   #: slot -> module kept there for good
    load_s: float = 0.0           #: the longest partial load (the analysis's L)
    idle_loads: bool = True       #: a load serving no pending frame may straddle a release
    dnn_block_s: float = float("inf")   #: longest DNN batch that may overlap a possible release
    #: pipeline -> pinned slots its frame may take, put back right after it streams
    #: (runtime/sched/analysis/evicting_pins.py)
    evictors: dict[str, int] = field(default_factory=dict)
    #: a frame all of whose stages are pinned, when no pending frame is more urgent, streams
    #: before the committed frame (runtime/sched/analysis/pinned_first.py)
    pinned_first: bool = False
    #: pipeline -> how long before its earliest release its frame is pending (a frame committed
    #: before it arrives, runtime/sched/analysis/early_commit.py; phased admission only)
    early: dict[str, float] = field(default_factory=dict)
    #: pipeline -> how long edf may hold its frame back after it arrives, so that a frame whose
    #: modules are resident runs first (runtime/sched/analysis/holds.py, runtime/sched/policies/hold.py)
    holds: dict[str, float] = field(default_factory=dict)

    @property
    def pinned_slots(self) -> frozenset[int]:
        return frozenset(self.pinned)


#: No analysis: the scheduler's discipline without pins or limits (edf run without admission).
UNCONSTRAINED = AdmissionContract()


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""
    contract: AdmissionContract = UNCONSTRAINED
    plan: ResidencyPlan | None = None
    slack_s: float = 0.0                #: min over t of t - demand - blocking (before DNN/prefetch)
    utilisation: float = 0.0            #: sum S_i / T_i on the virtual processor
    #: The same test (platform, options, path) again, on the pipelines given and with keyword
    #: options added: the hold budgets re-run it with holds (runtime/sched/analysis/holds.py).
    retest: Callable[..., Verdict] | None = field(default=None, compare=False, repr=False)


def retestable(test: Callable[..., Verdict]) -> Callable[..., Verdict]:
    """``test`` (an admission test taking the pipelines first), its passing verdicts carrying
    ``retest``: the same call on the pipelines given, with more keyword options."""
    @functools.wraps(test)
    def run(pipelines: Sequence[PipelineSpec], *args, **kwargs) -> Verdict:
        verdict = test(pipelines, *args, **kwargs)
        if not verdict.ok:
            return verdict
        return replace(verdict, retest=lambda others, **more: run(others, *args, **{**kwargs, **more}))
    return run


def hold_array(pipelines: Sequence[PipelineSpec], holds: dict[str, float] | None) -> np.ndarray | None:
    """Per pipeline, its hold in seconds (``holds``' entry, else 0); None where none is held."""
    if not holds:
        return None
    hold = np.array([holds.get(p.name, 0.0) for p in pipelines], dtype=np.float64)
    return hold if np.any(hold > 0.0) else None


def load_seconds(platform: Platform) -> float:
    """L: the longest partial load into any slot."""
    return max((platform.slot_load_seconds(s.index) for s in platform.slots), default=0.0)


def _arrays(pipelines: Sequence[PipelineSpec], loads: dict[str, int], load_s: float, control_s: float = 0.0):
    """S (each frame's job: its passes' stream time and register traffic, and its loads), T, D, J."""
    S = np.array([p.exec_s + len(p.pass_seconds) * control_s + loads[p.name] * load_s for p in pipelines],
                 dtype=np.float64)
    T = np.array([p.period_s for p in pipelines], dtype=np.float64)
    D = np.array([p.deadline_s for p in pipelines], dtype=np.float64)
    J = np.array([p.jitter_s for p in pipelines], dtype=np.float64)
    return S, T, D, J


def one_job_frames(pipelines: Sequence[PipelineSpec]) -> np.ndarray:
    """Per pipeline, whether its frame is one non-preemptive job (a single pass through the
    fabric): what the phased test's start condition needs of a blocking frame."""
    return np.array([len(p.pass_seconds) == 1 for p in pipelines], dtype=bool)


def _pin_sets(pipelines: Sequence[PipelineSpec], slots: int, keep: Counter[str]) -> list[tuple[int, float, Counter]]:
    """Candidate pin sets (module -> copies), each with its size and the port time per second its
    frames would still load: every sub-multiset of the copies the chains use, up to one per slot,
    that contains ``keep`` and leaves room for every chain's unpinned stages."""
    # They depend only on each pipeline's passes' module counts and period: the planner and the
    # daemon's re-plans ask for the same sets many times, so they are kept (fresh copies out).
    key = (tuple((tuple(tuple(sorted(c.items())) for c in p.pass_module_counts), p.period_s) for p in pipelines),
           slots, tuple(sorted(keep.items())))
    return [(size, rate, Counter(pins)) for size, rate, pins in _pin_sets_of(key)]


@functools.lru_cache(maxsize=4096)
def _pin_sets_of(key: tuple) -> tuple[tuple[int, float, Counter], ...]:
    passes_by_pipeline, slots, keep_items = key
    keep: Counter[str] = Counter(dict(keep_items))
    wanted: Counter[str] = Counter()
    for passes, _ in passes_by_pipeline:
        for module, count in sum((Counter(dict(c)) for c in passes), Counter()).items():
            wanted[module] = max(wanted[module], count)
    for module, count in keep.items():
        wanted[module] = max(wanted[module], count)
    modules = sorted(wanted)
    # Per module, the frames per second that load it unless k copies are pinned.
    rates = {m: [sum(1.0 / period for passes, period in passes_by_pipeline for c in passes if dict(c).get(m, 0) > k)
                 for k in range(wanted[m] + 1)] for m in modules}
    out = []
    counts = [dict(c) for passes, _ in passes_by_pipeline for c in passes]      # each pass must fit on its own

    def walk(i: int, pins: dict[str, int], size: int, rate: float) -> None:
        if i == len(modules):
            room = slots - size       # every chain's unpinned stages (residency.unpinned_stages) must fit
            if all(sum(max(0, c - pins.get(m, 0)) for m, c in mc.items()) <= room for mc in counts):
                out.append((size, rate, Counter({m: k for m, k in pins.items() if k})))
            return
        m = modules[i]
        for k in range(keep[m], min(wanted[m], slots - size) + 1):
            pins[m] = k
            walk(i + 1, pins, size + k, rate + sum(rates[m][j] for j in range(k, wanted[m])))
        pins.pop(m, None)

    walk(0, {}, 0, 0.0)
    return tuple(out)


#: Pin sets tried with the full demand test, best first; the rest are refused with the best's reason.
MAX_TRIED = 12


#: The share of the DDR's peak (platform.ddr_bytes_per_s) the fabric's frames may use, reads and
#: writes together. Assumption, not measured: the ARM cores and Linux share the DDR, and refresh
#: and read/write turnarounds keep sustained traffic well below the peak.
DDR_FABRIC_SHARE = 0.5


def ddr_budget(platform: Platform) -> float:
    """DDR bytes per second admitted pipelines' frames may move."""
    return DDR_FABRIC_SHARE * platform.ddr_bytes_per_s


def load_and_control(platform: Platform, port_share: int = 1, board_load_s: float | None = None,
                     control_s: float | None = None) -> tuple[float, float]:
    """``(L, X)`` of the analysis (``analyse`` says what each argument means)."""
    X = control_seconds(platform) if control_s is None else control_s
    own = load_seconds(platform) + X
    return own + (port_share - 1) * (own if board_load_s is None else max(own, board_load_s + X)), X


def transition_check(pipelines: Sequence[PipelineSpec], loads: dict[str, int], platform: Platform,
                     port_share: int = 1, board_load_s: float | None = None,
                     control_s: float | None = None) -> DemandCheck:
    """Whether ``pipelines``, whose frames need ``loads`` loads each under the contract in force,
    also meet every deadline while a mode change loads pins beside them: one load that serves no
    frame (a pin) may then straddle any release, on top of the usual blocking
    (runtime/sched/analysis/mode_change.py). A pin load holds only the port, never the stream or
    a slot a frame uses, so it can delay only frames that wait for the port: when no frame needs a
    load, the extra blocking is nil."""
    if not pipelines:
        return DemandCheck(True, float("inf"), 0.0, 0)
    L, X = load_and_control(platform, port_share, board_load_s, control_s)
    S, T, D, J = _arrays(pipelines, loads, L, X)
    pin_load = L if any(loads.get(p.name, 0) > 0 for p in pipelines) else 0.0
    return demand_check(S, T, D, J, X + pin_load)


@retestable
def analyse(pipelines: Sequence[PipelineSpec], platform: Platform, keep_pinned: dict[int, str] | None = None,
            few_pins: bool = False, port_share: int = 1, check_ddr: bool = True,
            board_load_s: float | None = None, control_s: float | None = None,
            afford_change: bool = False, afford_share: int | None = None, phased: bool = False,
            pinned_first: bool = False, early_commit: bool = False,
            holds: dict[str, float] | None = None, same_as: AdmissionContract | None = None) -> Verdict:
    """Whether ``pipelines`` (real-time) pass the test on ``platform``, and with which pins.
    Pin sets are tried in order of the load time their frames still need (least first), or, with
    ``few_pins`` (best-effort work wants slots to borrow), fewest pins first. ``keep_pinned``:
    pins already in force (a daemon's), kept. ``port_share``: how many partitions of the fabric
    (streams with slots of their own, runtime/sched/board/stream_plan.py) may load through the one port;
    each load may then wait behind one load of every other (runtime/sched/board/port_share.py), so L is
    this platform's longest load plus ``port_share - 1`` of the board's (``board_load_s``: the
    longest into any slot of the whole board, whose other partitions' slots may be larger).
    ``check_ddr`` False: the caller checks the DDR budget over every stream at once. ``control_s``:
    the register traffic one operation may cost beyond its stream or port cycles (default: this
    platform's, ``control_traffic.control_seconds``; a partition passes its board's).
    ``afford_change`` (the daemon, whose set changes): of the pin sets that pass, the first in the
    order above under which the set could also afford a later mode change's pin load
    (``transition_check``) is taken, else the first that passes: a set with no slack for a pin load
    could never take another pipeline that needs a pin. ``afford_share``: the port shared that
    many ways in that check (a board that may re-partition into that many partitions).
    ``phased``: the frames are released strictly at ``offset_s + k·period_s`` plus at most their
    jitter (a workload run as written, not a daemon's streams), so the phased test may admit too
    (``release_test``). ``pinned_first``: the test and the contract of the pinned-first rule
    (runtime/sched/analysis/pinned_first.py). ``early_commit`` (with ``phased``, not with
    ``pinned_first``): where a pin set fails, also try frames committed before their known
    release (runtime/sched/analysis/early_commit.py); the contract names them. ``holds``: per
    pipeline, how long edf may hold its frame back after it arrives (runtime/sched/analysis/holds.py):
    the test counts them (``processor_demand.demand_check``); not with ``early_commit``.
    ``same_as``: try only the pin set of that contract (the hold budgets' re-runs: with holds the
    sets tried before it fail again, the test only being stricter)."""
    L, X = load_and_control(platform, port_share, board_load_s, control_s)
    if not pipelines:
        return Verdict(True, contract=AdmissionContract({}, L, True, float("inf")))
    for p in pipelines:
        if len(p.pass_stages) > 1 and p.exec_s > p.deadline_s:
            return Verdict(False, _passes_too_long(p))
    ddr, budget = sum(p.ddr_bytes_per_frame / p.period_s for p in pipelines), ddr_budget(platform)
    if check_ddr and ddr > budget:
        return Verdict(False, f"the frames would move {ddr / 1e6:.0f} MB/s to and from DDR (passes through memory "
                              f"included), more than the {budget / 1e6:.0f} MB/s {platform.name} gives the fabric "
                              f"({DDR_FABRIC_SHARE:.0%} of platform.ddr_bytes_per_s, the DDR's peak)")
    keep: Counter[str] = Counter((keep_pinned or {}).values())
    candidates = _pin_sets(pipelines, len(platform.slots), keep)
    # Load time per second beyond what the stream can take: such a set fails whatever the test.
    base = sum((p.exec_s + len(p.pass_seconds) * X) / p.period_s for p in pipelines)
    feasible = [c for c in candidates if base + L * c[1] < 1.0]
    if not feasible and candidates:
        best = min(candidates, key=lambda c: c[1])
        return Verdict(False, f"frames and their loads would keep the stream busy {base + L * best[1]:.3f} of the "
                              f"time (>= 1) even with {best[0]} module(s) pinned")
    order = (lambda c: (c[0], c[1])) if few_pins else (lambda c: (c[1], c[0]))
    reach = _within_reach(sorted(candidates, key=order))
    candidates = sorted(feasible, key=order)
    if pinned_first:
        candidates = _with_pinned_pipelines(candidates, pipelines)
    reason = "no set of pinned modules leaves room for every chain's other stages"
    best_slack: float | None = None
    first_ok: Verdict | None = None
    # A CPU prefix hands its frame to the fabric at the prefix's bound, or later if the host
    # overruns it: such a release can leave the written pattern, so only the phase-free test holds.
    phased = phased and not any(p.cpu_before or p.cpu_before_s for p in pipelines)
    P = np.array([p.offset_s for p in pipelines], dtype=np.float64) if phased else None
    one_job = one_job_frames(pipelines)
    hold = hold_array(pipelines, holds)
    early_commit = early_commit and hold is None
    tried = candidates[:MAX_TRIED] + [c for c in candidates[MAX_TRIED:] if id(c) in reach]
    if same_as is not None:
        tried = [c for c in tried if c[2] == Counter(same_as.pinned.values())]
    for _, _, pins in tried:
        plan = residency(pipelines, platform, pins, keep_pinned)
        if isinstance(plan, str):
            continue
        S, T, D, J = _arrays(pipelines, plan.loads, L, X)
        first = pinned_first_blocking(pipelines, plan.loads, X) if pinned_first else None
        check = release_test(S, T, D, J, P, X, most_slack=False, first=first, one_job=one_job, hold=hold)
        early: dict[str, float] = {}
        if not check.ok and early_commit and P is not None and first is None:
            found = early_commit_search(S, T, D, J, P, X, early_shifts(pipelines, plan.loads, L, J), one_job)
            if found is not None:
                check, shift = found
                D, J, P2 = shifted(D, J, P, shift)
                early = {p.name: float(v) for p, v in zip(pipelines, shift, strict=True) if v > 0.0}
        if check.ok:
            verdict = _verdict(plan, check, L, X, S, T, D, J, P2 if early else P, first, one_job=one_job, hold=hold)
            if early:
                return replace(verdict, contract=replace(verdict.contract, early=early))
            if not afford_change or not any(plan.loads.values()):
                return verdict
            if afford_share is None or afford_share <= port_share:
                affords = verdict.contract.idle_loads
            else:
                affords = transition_check(pipelines, plan.loads, platform, afford_share, board_load_s, control_s).ok
            if affords:
                return verdict
            first_ok = first_ok or verdict
            continue
        if best_slack is None or check.slack_s > best_slack:
            best_slack = check.slack_s
            reason = check.reason + (f" (pinned: {', '.join(sorted(plan.pinned.values()))})" if plan.pinned else "")
    return first_ok or Verdict(False, reason)


def _within_reach(ordered: list) -> set[int]:
    """The id()s of the pin sets in ``ordered`` (sorted as they are tried, every candidate, feasible
    or not) that fewer than MAX_TRIED sets before them load no more than they do. A longer host
    delay or register traffic only drops the sets that load most (the feasibility bound, base + L
    x rate < 1); had the first MAX_TRIED feasible sets alone been tried, it would bring later sets
    into the window, and a set refused with a shorter delay could pass with a longer one (each set's
    own test is monotone in X and L: every term grows). A set within reach is tried whenever it is
    feasible, so what a longer delay tries is a subset of what a shorter one does. Every set the
    first MAX_TRIED feasible ones hold is within reach (the sets before it that load no more than
    it are feasible too), so this only adds sets, after them."""
    seen: list[float] = []
    out: set[int] = set()
    for c in ordered:
        if bisect.bisect_right(seen, c[1]) < MAX_TRIED:
            out.add(id(c))
        bisect.insort(seen, c[1])
    return out


def _with_pinned_pipelines(candidates: list, pipelines: Sequence[PipelineSpec]) -> list:
    """Pin sets for the pinned-first rule: the usual order, taken in turn with the sets that leave
    the most pipelines loading nothing (the frames the rule lets start first), each once."""
    def loading(c) -> int:
        return sum(unpinned_loads(p, c[2]) > 0 for p in pipelines)
    by_pinned = sorted(candidates, key=lambda c: (loading(c), c[1], c[0]))
    out, seen = [], set()
    for pair in zip(candidates, by_pinned, strict=True):
        for c in pair:
            key = tuple(sorted(c[2].items()))
            if key not in seen:
                seen.add(key)
                out.append(c)
    return out


def _passes_too_long(p: PipelineSpec) -> str:
    """Why a chain run in passes cannot meet its deadline even alone, naming the pass at fault."""
    parts = [f"pass {k + 1} ({', '.join(s.name for s in stages)}) {sec * 1e3:.2f} ms"
             for k, (stages, sec) in enumerate(zip(p.pass_stages, p.pass_seconds, strict=True))]
    worst = max(range(len(parts)), key=lambda k: p.pass_seconds[k])
    return (f"{p.name}: a {p.frame[0]}x{p.frame[1]} frame runs in {len(parts)} passes through memory, "
            f"{'; '.join(parts)}: {p.exec_s * 1e3:.2f} ms of stream alone, more than its "
            f"{p.deadline_s * 1e3:.2f} ms deadline (the longest is pass {worst + 1})")


def pinned_first_blocking(pipelines: Sequence[PipelineSpec], loads: dict[str, int], X: float) -> PinnedFirst:
    """Each pipeline's stream time with its register traffic, and whether its frames load nothing
    (every stage pinned): what the pinned-first rule's blocking needs."""
    stream = np.array([p.exec_s + len(p.pass_seconds) * X for p in pipelines], dtype=np.float64)
    return PinnedFirst(stream, np.array([loads[p.name] == 0 for p in pipelines], dtype=bool))


def _verdict(plan: ResidencyPlan, check: DemandCheck, L: float, X: float, S, T, D, J, P=None,
             first: PinnedFirst | None = None, tail=None, one_job=None, hold=None) -> Verdict:
    """Share out the slack: one idle load first (prefetch, lending, pins may then straddle a
    release), the rest as the longest DNN batch allowed to overlap a possible release. The scheduler
    sizes batches by their stream time, and a batch's register traffic may add up to X to that:
    the budget it is given is X shorter. ``tail``: per task, the part of its job after its frame
    ends (``processor_demand.demand_check``), as the verdict's test had it; ``one_job``: per task,
    whether its frame is one job (``release_test``); ``hold``: per task, the hold the test counts."""
    if P is not None:                 # the phased windows may leave more slack than the verdict's test
        check = release_test(S, T, D, J, P, X, first=first, tail=tail, one_job=one_job, hold=hold)
    slack = check.slack_s
    idle = slack >= L
    if idle:
        slack = release_test(S, T, D, J, P, X + L, first=first, tail=tail, one_job=one_job, hold=hold).slack_s
    contract = AdmissionContract(dict(plan.pinned), L, idle, max(0.0, slack - X), pinned_first=first is not None)
    return Verdict(True, "", contract, plan, check.slack_s, float(np.sum(S / T)))
