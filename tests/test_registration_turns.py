"""Registrations are taken one at a time, in turns by user (runtime/daemon/turns.py): a user with
many connections cannot queue its registrations ahead of everyone else's. On generated arrivals
(users, order, cancellations): one holder at a time, each user's requests in their order, and a
request granted after at most k grants to any other user when it was its user's k-th waiting."""

from __future__ import annotations

import asyncio

from fpgashare.daemon.turns import TurnsByUser
from hypothesis import given, settings
from hypothesis import strategies as st


async def _run(arrivals: list[int], cancelled: set[int]) -> tuple[list[int], dict[int, int]]:
    turns = TurnsByUser()
    order: list[int] = []
    holding = [0]
    ranks: dict[int, int] = {}          # request -> its place among its user's waiting requests

    arrived = asyncio.Event()

    async def request(i: int, uid: int) -> None:
        async with turns.hold(uid):
            holding[0] += 1
            assert holding[0] == 1                      # one holder at a time
            order.append(i)
            if i < 0:
                await arrived.wait()                    # the first holds the lock while the others arrive
            await asyncio.sleep(0)
            holding[0] -= 1

    first = asyncio.ensure_future(request(-1, -1))
    await asyncio.sleep(0)
    tasks = {}
    for i, uid in enumerate(arrivals):
        ranks[i] = sum(1 for j in range(i) if arrivals[j] == uid and j not in cancelled) + 1
        tasks[i] = asyncio.ensure_future(request(i, uid))
    await asyncio.sleep(0)
    for i in cancelled:
        tasks[i].cancel()
    await asyncio.sleep(0)
    arrived.set()
    await asyncio.gather(first, *tasks.values(), return_exceptions=True)
    assert not turns.held
    return order[1:], ranks


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=30), st.data())
def test_turns_are_round_robin_by_user(arrivals, data):
    cancelled = set(data.draw(st.lists(st.sampled_from(range(len(arrivals))), max_size=5)))
    order, ranks = asyncio.run(_run(arrivals, cancelled))
    assert sorted(order) == sorted(set(range(len(arrivals))) - cancelled)      # every live one, once
    for uid in set(arrivals):
        mine = [i for i in order if arrivals[i] == uid]
        assert mine == sorted(mine)                                              # its own in order
    for position, i in enumerate(order):
        before = order[:position]
        for other in set(arrivals) - {arrivals[i]}:
            assert sum(1 for j in before if arrivals[j] == other) <= ranks[i], (arrivals, order, i)


def test_a_user_with_many_requests_waiting_lets_another_in_next():
    """Twenty registrations of one user queued, then one of another: it is served second."""
    order, _ = asyncio.run(_run([7] * 20 + [8], set()))
    assert order.index(20) == 1
