"""An independent check of a cyclic plan (cyclic.py), from its table alone: the windows, the pass
order, that the streams carry at most the table's count of passes at once and the port and every
slot one thing at a time, all *modulo H* (a job that crosses H against the next hyperperiod's first
jobs), and that every use finds its module in its slot when the table repeats (the slot's contents
at the wrap equal its contents at the start)."""

from __future__ import annotations

from fpgashare.sched.limits.cyclic import CyclicPlan


def _overlap_mod(a: tuple[int, int], b: tuple[int, int], hyper: int) -> bool:
    """Whether [a0, a1) and [b0, b1), each shorter than ``hyper``, overlap once time is folded
    modulo ``hyper``."""
    a0, a1 = a[0] % hyper, a[0] % hyper + (a[1] - a[0])
    b0, b1 = b[0] % hyper, b[0] % hyper + (b[1] - b[0])
    return any(a0 < b1 + shift and b0 + shift < a1 for shift in (-hyper, 0, hyper))


def _pairwise(items: list[tuple[tuple[int, int], str]], hyper: int, what: str) -> list[str]:
    out = []
    for i, (a, na) in enumerate(items):
        for b, nb in items[i + 1:]:
            if _overlap_mod(a, b, hyper):
                out.append(f"{what}: {na} {a} and {nb} {b} overlap modulo H={hyper}")
    return out


def plan_violations(plan: CyclicPlan) -> list[str]:
    """Every way ``plan`` fails to repeat soundly (empty: it is sound)."""
    hp = plan.hyperperiod
    out: list[str] = []
    jobs = {j.key: j for j in plan.jobs}
    for key, j in jobs.items():
        s = plan.starts[key]
        if s < j.release or s + j.length > j.due:
            out.append(f"{key}: [{s}, {s + j.length}) outside its window [{j.release}, {j.due}]")
        if j.length >= hp:
            out.append(f"{key}: longer than the hyperperiod")
        if j.step and s < plan.starts[j.pipeline, j.frame, j.step - 1] + jobs[j.pipeline, j.frame, j.step - 1].length:
            out.append(f"{key}: starts before its previous pass ends")
        if len(set(plan.slots[key])) != len(j.modules) or min(plan.slots[key]) < 0:
            out.append(f"{key}: modules not in distinct slots {plan.slots[key]}")
    stream = [(plan.starts[k] % hp, plan.starts[k] % hp + j.length) for k, j in jobs.items()]
    for t in sorted({a for a, _ in stream}):      # the load only rises at a start
        at = sum(any(a + shift <= t < b + shift for shift in (-hp, 0)) for a, b in stream)
        if at > plan.streams:
            out.append(f"stream: {at} passes at {t} (modulo H={hp}), the table has {plan.streams} streams")
    out += _pairwise([((ld.start, ld.start + ld.length), f"load {ld.module}->{ld.slot}") for ld in plan.loads],
                     hp, "port")
    for slot in sorted({s for v in plan.slots.values() for s in v}):
        uses = [((plan.starts[k] % hp, plan.starts[k] % hp + jobs[k].length), jobs[k].modules[i], str(k))
                for k, v in plan.slots.items() for i, s in enumerate(v) if s == slot]
        loads = [((ld.start, ld.start + ld.length), ld.module) for ld in plan.loads if ld.slot == slot]
        out += _pairwise([(iv, k) for iv, _, k in uses] + [(iv, f"load {m}") for iv, m in loads], hp,
                         f"slot {slot}")
        # Walk one hyperperiod from the initial contents: each use finds its module; the walk ends
        # holding what it started with (so the next hyperperiod starts the same).
        held = plan.initial.get(slot)
        events = sorted([(iv[0], 1, m, k) for iv, m, k in uses] + [(iv[0], 0, m, "load") for iv, m in loads])
        for start, kind, module, name in events:
            if kind == 0:
                held = module
            elif held != module:
                out.append(f"slot {slot}: {name} at {start} needs {module}, the slot holds {held}")
        if held != plan.initial.get(slot):
            out.append(f"slot {slot}: ends the hyperperiod holding {held}, starts it holding {plan.initial.get(slot)}")
    return out
