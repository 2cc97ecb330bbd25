"""Port time of a schedule as the engine counts it (runtime/sched/limits/schedule_wait.py):
stalled <= exposed <= busy, busy is the loads' time, and a load under a running job is hidden."""

from __future__ import annotations

import random

from fpgashare.sched.limits.exact import Load, Schedule
from fpgashare.sched.limits.jobs import Job
from fpgashare.sched.limits.schedule_wait import PortTime, port_time
from hypothesis import given, settings
from hypothesis import strategies as st


def random_schedule(rng: random.Random) -> tuple[Schedule, list[Job]]:
    jobs, starts, t = [], {}, 0
    for k in range(rng.randint(1, 6)):
        release = t + rng.randint(0, 50)
        start = release + rng.randint(0, 50)
        jobs.append(Job("p", k, 0, release, start + 200, rng.randint(1, 40), ("a",)))
        starts[jobs[-1].key] = start
        t = start + jobs[-1].length
    loads, p = [], 0
    for _ in range(rng.randint(0, 6)):
        p += rng.randint(0, 60)
        loads.append(Load(0, "a", p, p + rng.randint(1, 30), jobs[0].key))
        p = loads[-1].end
    return Schedule(("p",), starts, (), tuple(loads)), jobs


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_stalled_within_exposed_within_busy(seed):
    schedule, jobs = random_schedule(random.Random(seed))
    t = port_time(schedule, jobs)
    assert 0 <= t.stalled <= t.exposed <= t.busy == sum(ld.end - ld.start for ld in schedule.loads)


def test_a_load_under_a_running_job_is_hidden_and_one_before_a_released_job_stalls():
    jobs = [Job("p", 0, 0, 0, 100, 20, ("a",)), Job("p", 1, 0, 30, 200, 20, ("b",))]
    hidden = Schedule(("p",), {"p/0/0": 0, "p/1/0": 60}, (), (Load(1, "b", 5, 15, "p/1/0"),))
    assert port_time(hidden, jobs) == PortTime(10, 0, 0)
    waiting = Schedule(("p",), {"p/0/0": 0, "p/1/0": 60}, (), (Load(1, "b", 40, 50, "p/1/0"),))
    assert port_time(waiting, jobs) == PortTime(10, 10, 10)
