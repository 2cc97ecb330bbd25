"""``fpgashare bench --limit``: every limit of the workload beside every scheduler's figure, and
the ratio (docs/limits.md says why each limit bounds any scheduler on the board).

Scheduler-independent (``workload_limits``): the most pipelines served with no miss, as a subset
and as a registration-order prefix (exact CP-SAT over the run's first frames, or its proved bound
and the caps when the time limit stops it). Per scheduler (``scheduler_limits``), from its run:
the pipelines it served with no miss; its loads against the fewest for its frame order (Belady)
and, when it missed nothing, against the fewest of any schedule serving the same pipelines
(exact); its port wait against the floor for its order (one stream, no DNN); its DNN images
against the window bound of its own idle windows; with a sweep, its copies against the caps.
"""

from __future__ import annotations

import logging
import time

from fpgashare.catalogue.workload import Workload
from fpgashare.sched.limits import belady, caps, dnn_windows
from fpgashare.sched.limits.jobs import TICK_S, check_fits, frame_jobs, realtime

log = logging.getLogger(__name__)

#: Frames the exact model takes at most (the earliest released): fewer frames, a looser but
#: still valid bound; more, a model CP-SAT may not finish in its time limit.
MAX_FRAMES = 40

#: Module uses (a stage of a frame) the exact model takes at most: its size grows with their square.
MAX_MODULES = 64

#: Seconds CP-SAT may spend on each solve.
TIME_LIMIT_S = 10.0


def served(result: dict) -> list[str]:
    """Pipelines of a run that had every frame on time."""
    return [n for n, p in result["pipelines"].items()
            if p["submitted"] and p["on_time"] == p["submitted"]]


def run_misses(result: dict) -> int:
    return sum(p["late"] + p["dropped"] + p["errors"] for p in result["pipelines"].values())


class Limits:
    """The limits of one workload, computed once and shared by every scheduler's comparison."""

    def __init__(self, workload: Workload, max_frames: int | None = MAX_FRAMES, time_limit_s: float = TIME_LIMIT_S,
                 exact: bool = True, max_modules: int | None = MAX_MODULES) -> None:
        self.workload, self.time_limit_s = workload, time_limit_s
        self.jobs = frame_jobs(workload, max_frames=max_frames, max_modules=max_modules)
        check_fits(self.jobs, workload.platform)
        self.names = [p.name for p in realtime(workload)]
        self.all_frames = len(frame_jobs(workload)) == len(self.jobs)
        self.last_due_s = max((j.due for j in self.jobs), default=0) * TICK_S
        self.exact = exact
        self._loads: dict[frozenset[str], object] = {}
        self._calm: dict[frozenset[str], object] = {}

    def admitted(self) -> dict:
        """The most pipelines any schedule serves with no miss (module docstring)."""
        platform = self.workload.platform
        cap = caps.admitted_cap(self.jobs, realtime(self.workload), platform)
        out: dict = {"pipelines": len(self.names), "caps": cap.by_cap, "cap": cap.bound,
                     "never_served": list(cap.never),
                     "frames": len({(j.pipeline, j.frame) for j in self.jobs}), "all_frames": self.all_frames}
        if not self.exact:
            out.update(subset=None, subset_bound=cap.bound, prefix=None, prefix_bound=cap.bound)
            return out
        from fpgashare.sched.limits.exact import most_admitted

        t = time.perf_counter()
        for key, prefix in (("subset", False), ("prefix", True)):
            if prefix and out["subset"] == len(self.names):     # every pipeline: so is the prefix
                out.update(prefix=out["subset"], prefix_bound=out["subset"], prefix_proved=out["subset_proved"])
                continue
            sol = most_admitted(self.jobs, platform, self.names, prefix=prefix, time_limit_s=self.time_limit_s)
            bound = min(cap.bound, int(sol.bound)) if sol.bound is not None else cap.bound
            out[key] = sol.value
            out[f"{key}_bound"] = bound if sol.status != "optimal" else sol.value
            out[f"{key}_proved"] = sol.status == "optimal"
            if not prefix:
                out["subset_pipelines"] = list(sol.schedule.admitted) if sol.schedule else []
                out["subset_loads"] = len(sol.schedule.loads) if sol.schedule else None
        if (out["prefix"] or 0) > (out["subset"] or 0):          # a prefix is a subset: its schedule serves
            out["subset"], out["subset_pipelines"] = out["prefix"], self.names[:out["prefix"]]
            out["subset_proved"] = out["subset"] == out["subset_bound"]
        out["solve_s"] = round(time.perf_counter() - t, 3)
        return out

    def fewest_loads(self, serve: list[str]):
        """The exact model's fewest loads serving ``serve`` (cached), or None without the model."""
        if not self.exact:
            return None
        key = frozenset(serve)
        if key not in self._loads:
            from fpgashare.sched.limits.exact import fewest_loads

            self._loads[key] = fewest_loads(self.jobs, self.workload.platform, self.names, sorted(key),
                                            self.time_limit_s)
        return self._loads[key]

    def calm(self, serve: list[str], loads: int):
        """An exact schedule serving ``serve`` with ``loads`` loads whose loads keep frames waiting
        least (cached), or None without the model."""
        key = frozenset(serve)
        if self.exact and key not in self._calm:
            from fpgashare.sched.limits.exact import calm_schedule

            self._calm[key] = calm_schedule(self.jobs, self.workload.platform, self.names, sorted(key), loads,
                                            self.time_limit_s)
        return self._calm.get(key)

    def scheduler(self, result: dict, engine) -> dict:
        """One scheduler's figures beside the limits (module docstring)."""
        platform, workload = self.workload.platform, self.workload
        k_slots, load_s = len(platform.slots), caps.shortest_load_s(platform)
        order = belady.run_order(engine)
        totals = result["totals"]
        out: dict = {"served": len(served(result)), "misses": run_misses(result)}
        floor = belady.belady_loads(order, k_slots)
        out["loads"] = {"run": totals["reconfigurations"], "order_floor": floor,
                        "ratio_to_order_floor": _ratio(totals["reconfigurations"], floor)}
        if out["misses"] == 0 and result["admitted"]:
            sol = self.fewest_loads(list(result["admitted"]))
            if sol is not None and sol.value is not None:
                t0 = engine.t0
                horizon = [e for e in engine.trace if e.track == "port" and t0 - 1e-12 <= e.start
                           and e.start < t0 + self.last_due_s]
                # The model has no DNN: a tile's load is no load of a schedule of the real-time
                # set, and never one a use of a real-time module maps to (docs/limits.md).
                ran = sum(1 for e in horizon if not e.name.startswith(f"load {dnn_windows.TILE} "))
                out["loads"].update(run_in_horizon=ran, run_in_horizon_with_tiles=len(horizon), optimum=sol.value,
                                    optimum_proved=sol.status == "optimal", optimum_bound=sol.bound,
                                    ratio_to_optimum=_ratio(ran, sol.value))
        streams = len({e.track for e in engine.trace if e.track.startswith("stream")})
        dnn = [p.model for p in workload.pipelines if not p.realtime]
        wait = {"run_s": totals["stalled_reconfig_s"], "port_s": totals["port_busy_s"]}
        if streams <= 1 and not dnn:
            wait["order_floor_s"] = round(belady.wait_floor_s(order, k_slots, load_s), 6)
            port = totals["port_busy_s"]
            excess = wait["run_s"] - wait["order_floor_s"]
            wait["excess_over_floor_pct_of_port"] = round(100 * excess / port, 2) if port else 0.0
        else:
            wait["order_floor_s"] = None
            wait["why_no_floor"] = "several streams ran" if streams > 1 else "DNN batches may hide loads"
        calm = self.calm(list(result["admitted"]), out["loads"]["optimum"]) \
            if self.all_frames and out["loads"].get("optimum") is not None else None
        if calm is not None and calm.schedule is not None:
            from fpgashare.sched.limits.schedule_wait import port_time

            exact = port_time(calm.schedule, self.jobs)
            wait["exact_schedule_s"] = round(exact.stalled * TICK_S, 6)
            wait["exact_schedule_port_s"] = round(exact.busy * TICK_S, 6)
            port = totals["port_busy_s"]
            wait["excess_over_exact_pct_of_port"] = \
                round(100 * (wait["run_s"] - wait["exact_schedule_s"]) / port, 2) if port else 0.0
            wait["within_1.1x_exact_plus_1pct_port"] = \
                wait["run_s"] <= 1.1 * wait["exact_schedule_s"] + 0.01 * port + 1e-9
        out["port_wait"] = wait
        if dnn and dnn_windows.TILE in platform.modules:
            busy = [(r.start, r.end, len(r.modules)) for r in order]
            # The board's streams, not the ones this run's frames used: a DNN partition may have its own.
            # From the run's start: a DNN batch may run in the registration window before t0.
            images = dnn_windows.run_images(busy, k_slots, platform.streams, load_s, 0.0, engine.end_s,
                                            dnn_windows.fastest_timings(platform, dnn), run_start=0.0,
                                            modules=[r.modules for r in order])
            bound = images / workload.duration_s
            out["dnn"] = {"run_images_per_s": totals["dnn_images_per_s"], "window_bound_images_per_s": round(bound, 1),
                          "ratio": _ratio(totals["dnn_images_per_s"], bound)}
        if "sweep" in result:
            base = next(p for p in workload.pipelines if p.name == result["sweep"]["pipeline"])
            cap = caps.copies_cap(base, platform)
            out["copies"] = {"run": result["sweep"]["max_pipelines"], "caps": cap,
                             "ratio": _ratio(result["sweep"]["max_pipelines"], cap["bound"])}
        return out


def _ratio(a: float, b: float) -> float | None:
    """a / b; 1 when both are 0 (at the limit), None when only b is (no finite ratio)."""
    if not b:
        return 1.0 if not a else None
    return round(a / b, 3)


def attach(report: dict, workload: Workload, engines: list, max_frames: int = MAX_FRAMES,
           time_limit_s: float = TIME_LIMIT_S) -> dict:
    """Add ``report["limits"]`` (``fpgashare bench``'s report; ``engines``: each result's run)."""
    t = time.perf_counter()
    limits = Limits(workload, max_frames, time_limit_s)
    out = {"admitted": limits.admitted(), "schedulers": {}}
    for result, engine in zip(report["results"], engines, strict=True):
        out["schedulers"][result["scheduler"]] = limits.scheduler(result, engine)
        out["schedulers"][result["scheduler"]]["served_ratio_to_optimum"] = _ratio(
            out["schedulers"][result["scheduler"]]["served"],
            out["admitted"].get("subset") or out["admitted"]["subset_bound"])
    # Every scheduler's served set is a schedule of the model (docs/limits.md): a lower side for
    # the optimum when the solver did not prove it.
    out["admitted"]["witness"] = max((s["served"] for s in out["schedulers"].values()), default=0)
    out["wall_s"] = round(time.perf_counter() - t, 3)
    report["limits"] = out
    return out


def limit_lines(limits: dict) -> list[str]:
    """The limits beside each scheduler's figures, for ``fpgashare bench``'s text report."""
    a = limits["admitted"]

    def exact(key: str) -> str:
        if a.get(f"{key}_proved"):
            return f"{a[key]}"
        low = max(a.get(key) or 0, a.get("witness", 0) if key == "subset" else 0)
        return f"{low}..{a[f'{key}_bound']} (not proved)"

    def x(ratio) -> str:
        return "n/a" if ratio is None else f"x{ratio}"

    scope = "every frame" if a["all_frames"] else f"its first {a['frames']} frames"
    lines = [f"limits (exact over {scope}; caps {a['caps']}; {limits['wall_s']} s):",
             f"  most pipelines served with no miss: {exact('subset')} of {a['pipelines']} "
             f"(registration-order prefix: {exact('prefix')})"]
    for name, s in limits["schedulers"].items():
        ld, w = s["loads"], s["port_wait"]
        # Each figure names what it counts and what it is held against: a bare "2 vs optimum 0"
        # leaves a reader to guess whether pipelines or loads are compared.
        text = (f"  {name:10s} served {s['served']} pipelines with no miss of the most {exact('subset')} "
                f"({x(s['served_ratio_to_optimum'])}), misses {s['misses']}; "
                f"loads {ld['run']} vs {ld['order_floor']} for its frame order ({x(ld['ratio_to_order_floor'])})")
        if "optimum" in ld:
            proved = "" if ld.get("optimum_proved") else " (not proved)"
            text += (f", real-time loads up to the last deadline {ld['run_in_horizon']} vs {ld['optimum']}{proved}, "
                     f"the fewest of a schedule serving the same pipelines ({x(ld['ratio_to_optimum'])})")
        if w["order_floor_s"] is not None:
            text += f"; port wait {w['run_s'] * 1e3:.1f} ms vs floor {w['order_floor_s'] * 1e3:.1f} ms"
        if "exact_schedule_s" in w:
            text += f"; wait {w['run_s'] * 1e3:.1f} ms vs {w['exact_schedule_s'] * 1e3:.1f} ms of an exact schedule"
        if "dnn" in s:
            text += (f"; DNN {s['dnn']['run_images_per_s']:.0f} of a {s['dnn']['window_bound_images_per_s']:.0f} "
                     f"images/s window bound ({x(s['dnn']['ratio'])})")
        if "copies" in s:
            text += f"; copies {s['copies']['run']} of <= {s['copies']['caps']['bound']}"
        lines.append(text)
    return lines
