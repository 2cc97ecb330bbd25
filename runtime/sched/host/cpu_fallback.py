"""Where a ``fallback="cpu"`` pipeline's stages run: the fabric takes one contiguous run of the
chain, the host the stages before and after it (runtime/sched/host/cpu_work.py says why that keeps
the fabric part's analysis sound).

Candidates come in the order a user would want them: the whole chain on the fabric first, then
ever shorter runs on the fabric (the longest first; of equal length, the one starting earliest,
so the host takes the tail rather than the head: a CPU tail adds no wait before the fabric), and
last the whole chain on the host. The caller takes the first its admission test accepts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from fpgashare.catalogue.modules import Stage
from fpgashare.catalogue.platform import Platform
from fpgashare.catalogue.workload import PipelineSpec, realtime_spec
from fpgashare.errors import FpgashareError
from fpgashare.sched.host.cpu_work import CpuCost, chain_shape

#: The host may spend at most this share of one core on CPU stages, counted at their bounds
#: (which are twice the slowest measured run: cpu_work.MARGIN). Beyond it, a fallback is refused.
CPU_SHARE_LIMIT = 1.0


def cpu_share(pipelines: Sequence[PipelineSpec]) -> float:
    """The share of a core the pipelines' CPU stages take, at their bounds."""
    return sum((p.cpu_before_s + p.cpu_after_s) / p.period_s for p in pipelines if p.realtime and p.period_s)


def fallback_candidates(name: str, chain: Sequence[Stage], period_s: float, deadline_s: float,
                        frame: tuple[int, int], platform: Platform, params: dict, cost: CpuCost,
                        unavailable: frozenset[str] = frozenset(),
                        cpu_used: float = 0.0) -> Iterator[tuple[PipelineSpec | None, str]]:
    """(spec, "") for every placement worth an admission test, best first, or (None, why) for one
    that cannot work whatever the fabric is doing. ``unavailable``: modules with no working slot
    (all quarantined); ``cpu_used``: the CPU share pipelines already admitted take."""
    rows, cols = frame
    n = len(chain)
    for length in range(n, 0, -1):
        for a in range(0, n - length + 1):
            b = a + length
            yield _split(name, chain, a, b, period_s, deadline_s, frame, platform, params, cost, unavailable,
                         cpu_used)
    seconds = cost.seconds(chain, rows, cols)
    why = _cpu_refusal(seconds, seconds / period_s, deadline_s, cpu_used, "the whole chain")
    if why:
        yield None, why
        return
    yield PipelineSpec(name, "realtime", period_s, deadline_s - seconds, (rows, cols), (),
                       cpu_before=tuple(chain), cpu_before_s=seconds, host=True), ""


def _split(name, chain, a, b, period_s, deadline_s, frame, platform, params, cost, unavailable,
           cpu_used) -> tuple[PipelineSpec | None, str]:
    fabric = chain[a:b]
    where = f"{'/'.join(s.name for s in fabric)} on the fabric"
    missing = [s.kind.name for s in fabric if s.kind.name not in platform.modules or s.kind.name in unavailable]
    if missing:
        return None, f"{where}: {platform.name} has no working {missing[0]} module"
    rows, cols = chain_shape(chain[:a], *frame)
    before = cost.seconds(chain[:a], *frame)
    after = cost.seconds(chain[b:], *chain_shape(fabric, rows, cols))
    if a or b < len(chain):
        why = _cpu_refusal(before + after, (before + after) / period_s, deadline_s, cpu_used, where)
        if why:
            return None, why
    names = [s.name for s in fabric]
    try:
        spec = realtime_spec(name, names, period_s, deadline_s - before - after, [rows, cols], platform,
                             {k: v for k, v in params.items() if k in names})
    except FpgashareError as exc:
        return None, f"{where}: {str(exc).lstrip(':. ')}"
    return replace(spec, cpu_before=tuple(chain[:a]), cpu_after=tuple(chain[b:]), cpu_before_s=before,
                   cpu_after_s=after), ""


def _cpu_refusal(seconds: float, share: float, deadline_s: float, cpu_used: float, where: str) -> str:
    if seconds >= deadline_s:
        return f"{where}: the host's part takes up to {seconds * 1e3:.2f} ms, not less than the " \
               f"{deadline_s * 1e3:.2f} ms deadline"
    if cpu_used + share > CPU_SHARE_LIMIT:
        return f"{where}: the host's part needs {share:.0%} of a core; {cpu_used:.0%} is taken " \
               f"(limit {CPU_SHARE_LIMIT:.0%})"
    return ""
