"""Quotas per user: a tenant is a uid (from SO_PEERCRED), and all its connections together share
its quotas, so opening more connections buys nothing. Root and the daemon's own user are trusted
(they own the board): they are held to the per-connection limits and the totals only, and root's
control connections get in even when every other tenant's are refused (``Limits.root_reserve``).

The descriptor budget comes from the process's own limit (limits.DescriptorBudget): connections
of users other than root stop below it, and each user's connections and rings stop at its share.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from fpgashare.daemon.limits import RING_FDS, DescriptorBudget, Limits, RateLimiter, refuse
from fpgashare.daemon.sessions import Client
from fpgashare.wire.protocol import ProtocolError

#: What a request costs of its user's rate, in units of the cheapest (about 20 us of the loop):
#: a status builds a map of every slot and pipeline (~250 us), a registration a ring and an
#: admission snapshot. Everything else — clock, hello, submit, close — is 1: cheap requests count.
OP_COST = {"status": 20.0, "pipeline": 50.0, "dnn": 50.0}


@dataclass
class Tenant:
    uid: int
    rate: RateLimiter
    clients: set[int] = field(default_factory=set)


class Tenants:
    """The daemon's users and their quotas; handed the daemon's clients (by id) and its limits."""

    def __init__(self, limits: Limits, clients: Mapping[int, Client], budget: DescriptorBudget) -> None:
        self.limits, self.clients, self.budget = limits, clients, budget
        self.by_uid: dict[int, Tenant] = {}
        self.connects: dict[int, RateLimiter] = {}     # by uid; kept (a few bytes) so churn cannot reset them

    @staticmethod
    def trusted(uid: int) -> bool:
        return uid in (0, os.getuid())

    def _mine(self, uid: int) -> list[Client]:
        tenant = self.by_uid.get(uid)
        return [self.clients[i] for i in tenant.clients if i in self.clients] if tenant else []

    def admit(self, uid: int) -> ProtocolError | None:
        """Why a new connection of ``uid`` is refused (None: it is taken)."""
        limits, budget = self.limits, self.budget
        if uid == 0:
            if len(self.clients) >= budget.clients + limits.root_reserve:
                return refuse("clients", budget.clients + limits.root_reserve, "too many connections")
            return None
        others = sum(1 for c in self.clients.values() if c.uid != 0)
        if others >= budget.clients:
            return refuse("clients", budget.clients, "too many connections")
        if self.trusted(uid):
            return None
        connects = self.connects.get(uid)
        if connects is None:
            connects = self.connects[uid] = RateLimiter(limits.connects_per_s_per_user)
        if not connects.take():
            return refuse("connects_per_s_per_user", limits.connects_per_s_per_user,
                          f"uid {uid} connects too often")
        mine = self._mine(uid)
        if len(mine) >= limits.clients_per_user:
            return refuse("clients_per_user", limits.clients_per_user, f"uid {uid} has {len(mine)} connections")
        held = self.descriptors(mine)
        if held + 1 > budget.per_user:
            return refuse("descriptors_per_user", budget.per_user,
                          f"uid {uid} holds {held} descriptors (connections and rings)")
        return None

    @staticmethod
    def descriptors(clients: list[Client]) -> int:
        return sum(1 + RING_FDS * len(c.pipelines) for c in clients)

    def joined(self, client: Client) -> None:
        tenant = self.by_uid.get(client.uid)
        if tenant is None:
            tenant = self.by_uid[client.uid] = Tenant(client.uid, RateLimiter(self.limits.messages_per_s_per_user))
        tenant.clients.add(client.id)

    def left(self, client: Client) -> None:
        tenant = self.by_uid.get(client.uid)
        if tenant is not None:
            tenant.clients.discard(client.id)
            if not tenant.clients:
                del self.by_uid[client.uid]

    def over_rate(self, client: Client, op) -> tuple[ProtocolError, float] | None:
        """The refusal of one more request now and how long to stop reading this connection (so a
        flood costs the daemon a read per token, not one per message), or None: it may go."""
        limits = self.limits
        if not client.rate.take():
            return (refuse("messages_per_s", limits.messages_per_s, "request rate too high"),
                    client.rate.wait_s())
        tenant = self.by_uid.get(client.uid)
        cost = OP_COST.get(op, 1.0) if isinstance(op, str) else 1.0
        if tenant is not None and not self.trusted(client.uid) and not tenant.rate.take(cost):
            return (refuse("messages_per_s_per_user", limits.messages_per_s_per_user,
                           f"request rate of uid {client.uid} too high"), tenant.rate.wait_s(cost))
        return None

    def check_pipeline(self, client: Client, name: str, nbytes: int) -> None:
        """Refuse one more pipeline of ``nbytes`` ring bytes over ``client``'s user's quotas."""
        if self.trusted(client.uid):
            return
        limits, mine = self.limits, self._mine(client.uid)
        count = sum(len(c.pipelines) for c in mine)
        if count >= limits.pipelines_per_user:
            raise refuse("pipelines_per_user", limits.pipelines_per_user,
                         f"{name!r}: uid {client.uid} has {count} pipelines")
        held = sum(c.shm_bytes for c in mine)
        if held + nbytes > limits.shm_bytes_per_user:
            raise refuse("shm_bytes_per_user", limits.shm_bytes_per_user,
                         f"{name!r}: its ring of {nbytes} bytes on top of uid {client.uid}'s {held}")
        fds = self.descriptors(mine)
        if RING_FDS and fds + RING_FDS > self.budget.per_user:
            raise refuse("descriptors_per_user", self.budget.per_user,
                         f"{name!r}: uid {client.uid} holds {fds} descriptors (connections and rings)")

    def check_share(self, client: Client, name: str, spec, specs: Mapping[str, object], slots: int) -> None:
        """Refuse a real-time pipeline that would take its user's frames over their share of the
        fabric's slot time (exec / period summed; ``specs``: the engine's pipelines by key), so no
        tenant registering first can take the whole board from the apps that come after it."""
        if self.trusted(client.uid) or not spec.realtime or not spec.period_s:
            return
        share = sum(p.exec_s / p.period_s for c in self._mine(client.uid) for s in c.pipelines.values()
                    if (p := specs.get(s.key)) is not None and p.realtime and p.period_s)
        limit = self.limits.fabric_share_per_user * slots
        if share + spec.exec_s / spec.period_s > limit:
            raise refuse("fabric_share_per_user", self.limits.fabric_share_per_user,
                         f"{name!r}: uid {client.uid}'s frames would take {share + spec.exec_s / spec.period_s:.2f} "
                         f"of {slots} slots' time")

    def check_submit(self, client: Client, what: str) -> None:
        if self.trusted(client.uid):
            return
        held = sum(c.in_flight() for c in self._mine(client.uid))
        if held >= self.limits.outstanding_per_user:
            raise refuse("outstanding_per_user", self.limits.outstanding_per_user,
                         f"{what}: uid {client.uid} has {held} frames in flight")
