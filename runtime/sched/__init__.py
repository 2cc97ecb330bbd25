"""Scheduling: the event-driven engine and the policies it runs (edf and the baselines)."""

from __future__ import annotations

from fpgashare.errors import FpgashareError
from fpgashare.sched.baselines import FcfsPolicy, RrBundlePolicy, StaticPolicy
from fpgashare.sched.edf import EdfPolicy
from fpgashare.sched.fred import FredPolicy
from fpgashare.sched.policy import Policy

POLICIES: dict[str, type[Policy]] = {"edf": EdfPolicy, "rr-bundle": RrBundlePolicy, "fcfs": FcfsPolicy,
                                     "static": StaticPolicy, "fred": FredPolicy}


def make_policy(name: str) -> Policy:
    """A fresh policy object by its command-line name."""
    try:
        return POLICIES[name]()
    except KeyError:
        raise FpgashareError(f"unknown scheduler {name!r}; known: {', '.join(POLICIES)}") from None
