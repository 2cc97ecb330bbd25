"""Each frame's reply is its own: one client's pipelines on different partitions of the board
(each partition's engine numbers its frames from 1) still get, for every frame, exactly one reply
carrying that frame's output. The daemon once matched replies to requests by the engine's frame
number, so two partitions' frames of one client answered each other's requests: one frame read its
ring slot before the board had written it (an all-zero "result") and the other was never answered."""

from __future__ import annotations

import numpy as np
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.client import connect
from fpgashare.daemon import Daemon, DaemonThread
from fpgashare.sched.core.clock import VirtualClock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CHAINS = (["gauss3x3", "threshold"], ["sobel_mag"], ["box3x3"], ["gauss3x3", "sobel_mag"], ["threshold"])
SHAPE = (120, 160)
PERIOD_S = 0.010


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(streams=st.integers(2, 4), chains=st.lists(st.sampled_from(range(len(CHAINS))), min_size=2, max_size=4),
       rounds=st.integers(3, 8), seed=st.integers(0, 2**32 - 1))
def test_one_clients_frames_on_several_partitions_get_their_own_outputs(tmp_path, streams, chains, rounds, seed):
    rng = np.random.default_rng(seed)
    sock = tmp_path / f"d{seed}.sock"
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock(), streams=streams,
                    fixed_split=True, host_reserve_s=0.0)
    stages = {f"p{i}": CHAINS[c] for i, c in enumerate(chains)}
    with DaemonThread(daemon), connect(sock, timeout=10) as app:      # one client for every pipeline
        pipes = {}
        for name, chain in stages.items():
            try:
                pipes[name] = app.pipeline(name, chain, period_ms=PERIOD_S * 1e3, frame_shape=SHAPE)
            except Exception as exc:            # a partition too small for the chain: fewer pipelines
                assert "not admitted" in str(exc), exc
        homes = {daemon.engine.partition_of(name)[0] for name in pipes}
        for k in range(rounds):
            start = daemon.clock.now()
            sent = {name: rng.integers(0, 256, SHAPE, dtype=np.uint8) for name in pipes}   # new pixels each frame
            futures = {name: pipe.submit(sent[name]) for name, pipe in pipes.items()}
            app.clock()                         # every submit is in before time moves
            daemon.run_until(start + PERIOD_S)
            for name, future in futures.items():
                want = chain_reference(resolve_chain(stages[name], {}), sent[name])
                assert np.array_equal(future.result(timeout=10), want), (name, k, sorted(homes))
        ended = sum(sum(p["outcomes"].values()) for p in app.status()["pipelines"].values())
    assert ended == rounds * len(pipes)          # one outcome per frame, each answered once
