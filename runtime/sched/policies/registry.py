"""The policies by their command-line names, and a fresh one by name."""

from __future__ import annotations

from fpgashare.errors import FpgashareError
from fpgashare.sched.core.policy import Policy
from fpgashare.sched.policies.baselines import FcfsPolicy, RrBundlePolicy, StaticPolicy
from fpgashare.sched.policies.edf import EdfPolicy
from fpgashare.sched.policies.fred import FredPolicy
from fpgashare.sched.policies.planned import PlannedPolicy

POLICIES: dict[str, type[Policy]] = {"edf": EdfPolicy, "rr-bundle": RrBundlePolicy, "fcfs": FcfsPolicy,
                                     "static": StaticPolicy, "fred": FredPolicy,
                                     "planned": PlannedPolicy}


def make_policy(name: str) -> Policy:
    """A fresh policy object by its command-line name."""
    try:
        return POLICIES[name]()
    except KeyError:
        raise FpgashareError(f"unknown scheduler {name!r}; known: {', '.join(POLICIES)}") from None
