"""Validation at the daemon's edge: every field is checked before anything changes, a bad one is a
``bad_request`` naming it, a registration that fails anywhere is undone entirely, and a seeded
fuzzer never meets an ``internal`` reply."""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.backends import make_backend
from fpgashare.backends.simrun import resolve_chain
from fpgashare.catalogue.platform import load_platform
from fpgashare.catalogue.vision_ref import chain_reference
from fpgashare.client import DaemonError, connect
from fpgashare.daemon import Daemon, DaemonThread, Limits
from fpgashare.sched.host.host_cost import HostCost

from benchmarks.daemon_fuzz import fuzz

SHAPE = (60, 80)
GOOD = {"name": "p", "stages": ["threshold"], "period_ms": 20.0, "frame_shape": list(SHAPE), "params": {}}


def running(sock, **limits):
    backend = make_backend("model", load_platform("zcu104"))
    # The host taken as free: what these tests check must not depend on the host cost measured
    # under whatever else the machine runs (the host's own checks: tests/test_host_cost.py).
    return DaemonThread(Daemon(backend, sock, dilation=20.0, limits=Limits(**limits) if limits else None,
                               host_cost=HostCost()))


@pytest.fixture
def sock(tmp_path):
    return tmp_path / "fpgashare.sock"


def check_frame_round_trip(fpga, name="after"):
    pipe = fpga.pipeline(name, ["threshold"], period_ms=20.0, frame_shape=SHAPE)
    frame = np.random.default_rng(1).integers(0, 256, SHAPE, dtype=np.uint8)
    assert np.array_equal(pipe.submit(frame).result(timeout=10),
                          chain_reference(resolve_chain(["threshold"], {}), frame))


@pytest.mark.parametrize("field,value,says", [
    ("period_ms", float("inf"), "period_ms must be finite"),
    ("period_ms", float("nan"), "period_ms must be finite"),
    ("period_ms", -5.0, "period_ms must be in"),
    ("period_ms", 1e300, "period_ms must be in"),
    ("period_ms", "20", "period_ms must be a number"),
    ("period_ms", True, "period_ms must be a number"),
    ("deadline_ms", "x", "deadline_ms must be a number"),
    ("deadline_ms", 0.0, "deadline_ms must be in"),
    ("deadline_ms", float("-inf"), "deadline_ms must be finite"),
    ("params", 1, "params must be a map"),
    ("params", {"threshold": 3}, "params.threshold must be a map"),
    ("params", {"threshold": {"LEVEL": 1 << 40}}, "params.threshold.LEVEL must be a 32-bit word"),
    ("params", {"threshold": {"LEVEL": [[{}]]}}, "params.threshold.LEVEL must be a 32-bit word"),
    ("frame_shape", [60], "frame_shape must be a list of 2..2 integers"),
    ("frame_shape", [60, -80], "frame_shape must hold integers in 1..16384"),
    ("frame_shape", [60, 1 << 63], "frame_shape must hold integers"),
    ("frame_shape", [[60], {"a": 1}], "frame_shape must hold integers"),
    ("stages", "threshold", "stages must be a list"),
    ("stages", [1, 2], "stages must hold module names"),
    ("stages", [], "stages must be a list of 1..16"),
    ("name", "", "name must be 1..64 printable characters"),
    ("name", "a\x00b", "name must be 1..64 printable characters"),
    ("name", ["edges"], "name must be a string"),
])
def test_each_bad_field_is_named_and_nothing_is_left(sock, field, value, says):
    with running(sock) as daemon, connect(sock) as fpga:
        with pytest.raises(DaemonError, match=f"pipeline: {says}") as err:
            fpga.request("pipeline", **{**GOOD, field: value})
        assert err.value.kind == "bad_request"
        assert daemon.engine.pipelines == [] and daemon.states == {} and daemon.shm_bytes == 0
        check_frame_round_trip(fpga)              # the daemon is not wedged


@pytest.mark.parametrize("fields,says", [
    ({"slot": "0"}, "submit: slot must be an integer"),
    ({"slot": 1.5}, "submit: slot must be an integer"),
    ({"shape": [60, float("nan")]}, "submit: shape must hold integers"),
    ({"shape": "60x80"}, "submit: shape must be a list"),
    ({"dtype": 8}, "submit: dtype must be a string"),
    ({"dtype": "u" * 40}, "submit: dtype must be a string of 1..16"),
    ({"pipeline": None}, "submit: pipeline must be a string"),
])
def test_bad_submit_fields_are_named(sock, fields, says):
    with running(sock) as daemon, connect(sock) as fpga:
        fpga.pipeline("p", ["threshold"], period_ms=20.0, frame_shape=SHAPE)
        with pytest.raises(DaemonError, match=says) as err:
            fpga.request("submit", **{"pipeline": "p", "slot": 0, "shape": list(SHAPE), "dtype": "uint8", **fields})
        assert err.value.kind == "bad_request"
        assert daemon.states["p"][1].free == {0, 1, 2, 3}     # no slot was taken


def test_a_slot_in_flight_is_refused_and_its_frame_still_ends_once(sock):
    """A raw client names a ring slot whose frame is still in flight (held to its period or on the
    fabric): refused ``frame`` naming the slot, the slot stays taken, and the frame in it ends
    with exactly one outcome."""
    from fpgashare.sched.core.clock import VirtualClock

    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock())
    with DaemonThread(daemon), connect(sock) as fpga:
        pipe = fpga.pipeline("p", ["threshold"], period_ms=20.0, frame_shape=SHAPE)
        futures = [pipe.submit(np.zeros(SHAPE, np.uint8)) for _ in range(2)]    # the second held to the period
        taken = {future.slot for future in futures}
        for slot in taken:
            with pytest.raises(DaemonError, match=f"ring slot {slot} of 'p' is not free") as err:
                fpga.request("submit", pipeline="p", slot=slot, shape=list(SHAPE), dtype="uint8")
            assert err.value.kind == "frame"
        assert daemon.states["p"][1].free == {0, 1, 2, 3} - taken
        daemon.run_until(daemon.clock.now() + 0.050)
        for future in futures:
            future.result(timeout=10)
        assert daemon.per_pipeline["p"]["outcomes"] == {"on_time": 2}
        assert daemon.states["p"][1].free == {0, 1, 2, 3}


def test_a_registration_failing_late_is_undone_entirely(sock, monkeypatch):
    """A fault after the engine took the pipeline (here: the policy's dispatch raising) leaves no
    pipeline, ring, name or quota count behind, and the next registration works."""

    from fpgashare.sched.core.engine import Engine

    with running(sock) as daemon, connect(sock) as fpga:
        engine = daemon.engine
        original = Engine.pipelines_changed
        calls = {"n": 0}

        def failing(self):
            original(self)
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError("injected fault in the engine")

        monkeypatch.setattr(Engine, "pipelines_changed", failing)
        with pytest.raises(DaemonError, match="injected fault") as err:
            fpga.pipeline("doomed", ["threshold"], period_ms=20.0, frame_shape=SHAPE)
        assert err.value.kind == "internal"            # a real bug is still reported as one
        assert [p.name for p in engine.pipelines] == []
        assert daemon.states == {} and daemon.shm_bytes == 0
        assert next(iter(daemon.clients.values())).pipelines == {}
        check_frame_round_trip(fpga, "doomed")         # the same name registers now


def test_names_are_per_client(sock):
    with running(sock) as daemon, connect(sock) as a, connect(sock) as b:
        check_frame_round_trip(a, "edges")
        check_frame_round_trip(b, "edges")             # the same name in another client
        assert sorted(daemon.states) == ["edges", "edges@2"]
        with pytest.raises(DaemonError, match="already registered by this client"):
            b.pipeline("edges", ["threshold"], period_ms=20.0, frame_shape=SHAPE)
        assert list(b.status()["pipelines"]) == ["edges"]


def test_a_name_given_again_starts_with_no_statistics(sock, fresh_seed):
    """A pipeline's engine name is free again once it ended, so another client's pipeline of that
    name may get it: it must see none of the ended one's outcomes in its status."""
    rng = np.random.default_rng(fresh_seed)
    with running(sock) as daemon:
        for _ in range(3):
            with connect(sock) as first:
                for _ in range(int(rng.integers(1, 4))):
                    check_frame_round_trip(first, "edges")
                    first.pipelines["edges"].close()
                check_frame_round_trip(first, "edges")
                assert sum(first.status(own=True)["pipelines"]["edges"]["outcomes"].values()) == 1, fresh_seed
            with connect(sock) as second:
                second.pipeline("edges", ["threshold"], period_ms=20.0, frame_shape=SHAPE)
                assert "edges" in daemon.states, fresh_seed         # the same engine name, given again
                mine = second.status(own=True)["pipelines"]["edges"]
                assert mine["outcomes"] == {} and mine["miss_rate"] == 0.0, (fresh_seed, mine)


def test_a_refusal_names_no_other_clients_pipeline(sock):
    """The host's check names the pipeline whose bound is tightest, which may be another client's:
    the refusal says "another client's pipeline" instead, and keeps its own name."""
    from fpgashare.sched.core.clock import VirtualClock

    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock(),
                    host_cost=HostCost(per_frame_s=0.0002))
    with DaemonThread(daemon), connect(sock) as other, connect(sock) as asker:
        other.pipeline("secret-camera", ["threshold"], period_ms=33.0, deadline_ms=5.0, frame_shape=(240, 320))
        with pytest.raises(DaemonError, match="response bound another client's pipeline's deadline") as err:
            asker.pipeline("mine", ["threshold"], period_ms=5.0, frame_shape=(60, 80))
        assert err.value.kind == "admission" and "secret-camera" not in str(err.value)
        assert "pipeline 'mine' not admitted" in str(err.value)


def test_a_status_counts_only_the_askers_own_frames_unless_it_is_the_admin_view(sock, fresh_seed):
    rng = np.random.default_rng(fresh_seed)
    with running(sock) as daemon, connect(sock) as busy, connect(sock) as quiet:
        mine = int(rng.integers(1, 4))
        for _ in range(mine):
            check_frame_round_trip(busy, f"edges{_}")
        check_frame_round_trip(quiet, "edges")
        own = busy.status(own=True)["outcomes"]
        assert sum(own.values()) == mine, (fresh_seed, own)     # its own frames, however they ended
        assert sum(quiet.status(own=True)["outcomes"].values()) == 1, fresh_seed
        assert busy.status()["outcomes"] == daemon.outcomes and sum(daemon.outcomes.values()) == mine + 1, \
            (fresh_seed, daemon.outcomes)


def test_redaction_replaces_every_other_clients_name_where_it_stands_alone(fresh_seed):
    """On generated names (sharing prefixes, with '@', '-' and spaces), quoted or possessive in a
    text: every other client's name is replaced, every own name and word is left as it was (a
    name inside a longer one, ``e`` in ``edges@2``, does not stand alone), and so is another's
    that is also one of the asker's own names (the text may name the asker's own: its ``edges``
    while another client holds the plain key ``edges``)."""
    import random
    from types import SimpleNamespace

    from fpgashare.daemon.sessions import ANOTHERS, Sessions

    r = random.Random(fresh_seed)
    names = [r.choice(["edges", "e", "x y", "cam@3", "a-b"]) + r.choice(["", "@2", "2", "@9"]) for _ in range(40)]
    for _ in range(500):
        keys = set(r.sample(names, r.randint(1, 6)))
        me, them = SimpleNamespace(pipelines={}), SimpleNamespace(pipelines={})
        owners = {key: r.choice([me, them]) for key in keys}
        for name in r.sample(names, r.randint(0, 3)):    # own pipelines' names (their keys maybe suffixed)
            me.pipelines[name] = SimpleNamespace(name=name)
        asked = r.choice([None, ["not", "a", "name"], *names])       # the request's name field, as sent
        sessions = Sessions.__new__(Sessions)
        sessions.states = {key: (owner, None) for key, owner in owners.items()}
        tokens = [(key, r.choice(["'{}'", "{}'s", "({})"])) for key in keys] + [(None, "the"), (None, "stream")]
        r.shuffle(tokens)
        text = " | ".join(form.format(key) if key else form for key, form in tokens)
        hidden = {key for key, owner in owners.items() if owner is them and key not in me.pipelines and key != asked}
        expected = " | ".join(form if key is None else form.format(ANOTHERS if key in hidden else key)
                              for key, form in tokens)
        assert sessions.redact(text, me, asked) == expected, (fresh_seed, text, owners, asked)


def test_no_client_can_squat_another_clients_name(sock):
    """A client holding a name and every suffix the daemon could give another client's same name
    blocks nobody: the other client registers it, and the squatter's pipelines stay as they were."""
    with running(sock) as daemon, connect(sock) as squatter, connect(sock) as victim:
        victim_id = victim.request("hello")["client"]
        held = ["edges", f"edges@{victim_id}", f"edges@{victim_id}@{victim_id}", "edges@"]
        for name in held:
            squatter.pipeline(name, ["threshold"], period_ms=20.0, frame_shape=SHAPE)
        check_frame_round_trip(victim, "edges")
        assert sorted(squatter.status(own=True)["pipelines"]) == sorted(held)
        assert list(victim.status(own=True)["pipelines"]) == ["edges"]
        assert len(daemon.states) == len(held) + 1


def test_clients_registering_one_name_at_once_both_get_it(sock):
    """Registrations racing for one name (their keys chosen while another waits for admission):
    every client gets its own pipeline under the name, round after round."""
    import concurrent.futures

    with running(sock) as daemon, connect(sock) as a, connect(sock) as b, connect(sock) as c:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            for round_ in range(10):
                name = f"same{round_}"
                futures = [pool.submit(fpga.pipeline, name, ["threshold"], period_ms=50.0, frame_shape=SHAPE)
                           for fpga in (a, b, c)]
                pipes = [f.result(timeout=30) for f in futures]
                assert len({p.ring.spec.name for p in pipes}) == 3
                for pipe in pipes:
                    pipe.close()
        assert daemon.states == {}


def test_fuzzed_requests_never_get_internal(sock):
    """20,000 seeded requests with typed ops and wrong field types and values; then a fresh
    client streams frames that equal OpenCV's."""
    with running(sock, messages_per_s=1e9) as daemon:
        kinds = fuzz(sock, 20_000, seed=7)
        assert "internal" not in kinds and kinds["bad_request"] > 5_000 and kinds["ok"] > 1_000
        with connect(sock) as fpga:
            check_frame_round_trip(fpga)
        assert daemon.failure is None


def test_a_jitter_not_below_the_period_is_refused_by_name(sock):
    with running(sock), connect(sock) as fpga:
        with pytest.raises(DaemonError, match="jitter_ms must be below period_ms") as err:
            fpga.pipeline("j", ["threshold"], period_ms=20.0, frame_shape=SHAPE, jitter_ms=20.0)
        assert err.value.kind == "bad_request"
        fpga.pipeline("j", ["threshold"], period_ms=20.0, frame_shape=SHAPE, jitter_ms=2.0)


def trials_left(daemon) -> dict:
    """What admission trials left in the board for add_pipeline (sched/board/trials.py), by store."""
    board = daemon.engine
    stores = {"chosen": board.chosen, "chosen_delay": board.chosen_delay,
              **{f"verdicts{k}": e.members.verdicts for k, e in enumerate(board.parts)}}
    return {what: dict(store) for what, store in stores.items() if store}


def test_registrations_that_end_without_their_pipeline_leave_no_trial_behind(sock, fresh_seed):
    """Random registrations under fresh names, admitted (then closed) or refused: once none is
    under way, no trial's choice, verdict or host delay is kept (each refused one used to leave its
    host delay, and one refused after its trial its choice and verdict too: memory without bound)."""
    from fpgashare.sched.core.clock import VirtualClock

    rng = np.random.default_rng(fresh_seed)
    stages = ["gauss3x3", "box3x3", "sharpen3x3", "sobel_mag", "threshold", "erode3x3", "median3x3", "fast9"]
    daemon = Daemon(make_backend("model", load_platform("zcu104")), sock, clock=VirtualClock(), host_cost=HostCost())
    kinds: dict[str, int] = {}
    with DaemonThread(daemon), connect(sock) as fpga:
        fpga.pipeline("base", ["threshold"], period_ms=5.0, frame_shape=(240, 320))
        for n in range(30):
            period = float(rng.choice([1.0, 5.0, 50.0]))
            try:
                fpga.pipeline(f"x{n}", list(rng.choice(stages, int(rng.integers(1, 6)), replace=False)),
                              period_ms=period, deadline_ms=period * float(rng.choice([0.2, 1.0])),
                              frame_shape=(240, 320)).close()
                kinds["admitted"] = kinds.get("admitted", 0) + 1
            except DaemonError as exc:
                kinds[exc.kind] = kinds.get(exc.kind, 0) + 1
        assert kinds.get("admission", 0) > 0 and "internal" not in kinds, (fresh_seed, kinds)
        assert trials_left(daemon) == {}, fresh_seed


def test_a_registration_refused_by_a_quota_after_its_trial_leaves_no_trial_behind(sock, monkeypatch):
    """The share of the fabric is checked once admission chose where the pipeline goes: a tenant
    over its share, registering under ever new names, must not leave that choice behind each time."""
    from fpgashare.daemon.tenants import Tenants

    monkeypatch.setattr(Tenants, "trusted", staticmethod(lambda uid: False))    # this test's user: a tenant
    with running(sock, fabric_share_per_user=1e-6) as daemon, connect(sock) as fpga:
        for n in range(5):
            with pytest.raises(DaemonError, match="fabric_share_per_user") as err:
                fpga.pipeline(f"over{n}", ["threshold"], period_ms=20.0, frame_shape=SHAPE)
            assert err.value.kind == "quota"
        assert trials_left(daemon) == {}


def test_hostile_network_files_are_refused_and_every_other_clients_pipeline_runs_on(sock, fresh_seed):
    """A client sends network files whose fields compare like the right ones (``4.0``, ``"1"``,
    a flag's string), nest past the parser's depth, or hold members numpy cannot read: each is
    refused ``bad_request`` naming the network, before anything runs it (one with ``4.0`` used to
    pass the checks and fail in the engine's batch, stopping the daemon for every tenant). Then
    another client's real-time frame and the attacker's own valid network still run."""
    from fpgashare.client.pipeline import DnnPipeline
    from fpgashare.dnn.network_wire import network_bytes

    from tests.hostile_networks import hostile_network, small_network

    seed = fresh_seed
    rng = np.random.default_rng(seed)
    with running(sock), connect(sock) as other, connect(sock) as attacker:
        for i in range(40):
            what, data = hostile_network(rng)
            with pytest.raises(DaemonError, match="network for") as err:
                attacker.request("dnn", name=f"x{i}", model="m", network=data)
            assert err.value.kind == "bad_request", f"seed {seed}: {what}: {err.value}"
        check_frame_round_trip(other)
        fields = {"name": "valid", "model": "m", "network": network_bytes(small_network(rng))}
        answer = attacker.request("dnn", **fields)
        pipe = DnnPipeline(attacker, "valid", attacker._attach(answer), answer, fields)
        image = rng.integers(0, 256, pipe.ring.spec.in_shape, dtype=np.uint8)
        assert pipe.submit(image).result(timeout=20).dtype == np.int8, f"seed {seed}"
