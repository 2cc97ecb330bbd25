"""Each frame's reply is its own: one client's pipelines on different partitions of the board
(each partition's engine numbers its frames from 1) still get, for every frame, exactly one reply
carrying that frame's output. The daemon once matched replies to requests by the engine's frame
number, so two partitions' frames of one client answered each other's requests: one frame read its
ring slot before the board had written it (an all-zero "result") and the other was never answered."""

from __future__ import annotations

import numpy as np
import pytest
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


def test_an_answer_too_big_for_a_message_is_an_error_outcome_and_every_other_frame_goes_on(tmp_path, monkeypatch,
                                                                                          fresh_seed):
    """A client network whose output is 65,536 values (a 1.8 kB file): its image's reply could not
    be encoded, the exception came out of the engine's step, the image was never answered, and the
    engine's next timer was never set, so every tenant's frames waited for some other request.
    Such a network is refused at registration, naming the output's size; past that bound (lifted
    here), the image still gets its one answer, ``error`` saying why, and another client's frames
    run on."""
    from fpgashare.client import DaemonError, FrameFailed
    from fpgashare.client.pipeline import DnnPipeline
    from fpgashare.dnn import network_wire
    from fpgashare.dnn.network import Layer, Network
    from fpgashare.sched.host.host_cost import HostCost

    rng = np.random.default_rng(fresh_seed)
    side, channels = int(rng.integers(64, 72)), 16
    layer = Layer("conv", channels, 1, 1, 0, False, rng.integers(-9, 9, (channels, 1, 1, channels), dtype=np.int8),
                  np.zeros(channels, np.int32), np.full(channels, 2**30, np.int32), np.full(channels, 30, np.uint8))
    fields = {"name": "wide", "model": "m",
              "network": network_wire.network_bytes(Network("n", (side, side, channels), (layer,)))}
    stages = resolve_chain(["threshold"], {})
    sock = tmp_path / "d.sock"
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, dilation=20.0, host_cost=HostCost())
    with DaemonThread(daemon), connect(sock) as tenant, connect(sock) as other:
        with pytest.raises(DaemonError, match=f"has {side * side * channels} values; an image's reply carries"):
            tenant.request("dnn", **fields)
        monkeypatch.setattr(network_wire, "MAX_OUTPUT_VALUES", 1 << 30)
        answer = tenant.request("dnn", **fields)
        wide = DnnPipeline(tenant, "wide", tenant._attach(answer), answer, fields)
        pipe = other.pipeline("p", ["threshold"], period_ms=5.0, frame_shape=(60, 80))
        for _ in range(3):
            with pytest.raises(FrameFailed, match="its answer cannot be sent"):
                wide.submit(rng.integers(0, 256, wide.ring.spec.in_shape, dtype=np.uint8)).result(timeout=30)
            frame = rng.integers(0, 256, (60, 80), dtype=np.uint8)
            assert np.array_equal(pipe.submit(frame).result(timeout=30), chain_reference(stages, frame)), fresh_seed
