"""A fleet on a local Ray cluster: a head and three simulated boards (model backend, fast health
checks). Pipelines are placed where a board's daemon admits them; a board killed mid-stream (SIGKILL
of its daemon and its Ray node) has its pipelines moved in deadline order, and every frame ends in
exactly one outcome."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the fleet tests need Ray: pip install 'fpgashare[fleet]'")

from fpgashare import fleet  # noqa: E402
from fpgashare.backends.simrun import resolve_chain  # noqa: E402
from fpgashare.catalogue.vision_ref import chain_reference  # noqa: E402
from fpgashare.client import AdmissionRejected, DeadlineMissed, FrameDropped, FrameFailed  # noqa: E402
from fpgashare.daemon.host_overrun import HOST_LATE  # noqa: E402
from fpgashare.fleet.local import LocalFleet, SimBoard  # noqa: E402

log = logging.getLogger(__name__)

# Daemon seconds are 50 wall seconds: a busy 2-core host (and a board's admission trial, which shares
# its daemon's interpreter with the frames) does not pass for board time. At 20, a frame of a 62%-loaded
# pynq-z2 was dropped in 2 of 7 runs while that board's daemon ran a newcomer's trial.
DILATION = 50.0
EDGES = ["gauss3x3", "sobel_mag"]
BOARDS = [SimBoard("b1", "zcu104"), SimBoard("b2", "zcu104", ("cam0",)), SimBoard("b3", "pynq-z2", ("cam1",))]

#: name, stages, period_ms, frame, camera. Stream time per period on zcu104 / pynq-z2: hd 31% / 62%,
#: 720p 14% / 28%, 480p 5% / 9%: the three 1080p pipelines cannot all share a board.
PIPELINES = [
    ("hd0", EDGES, 33.3, (1080, 1920), None), ("hd1", EDGES, 33.3, (1080, 1920), None),
    ("hd2", EDGES, 33.3, (1080, 1920), None),
    ("cam0_edges", EDGES, 33.3, (720, 1280), "cam0"), ("cam1_thresh", ["threshold"], 33.3, (480, 640), "cam1"),
    ("m0", ["gauss3x3", "threshold"], 50.0, (480, 640), None), ("m1", ["sobel_mag"], 40.0, (480, 640), None),
    ("m2", EDGES, 66.7, (480, 640), None), ("m3", ["box3x3"], 33.3, (240, 320), None),
    ("m4", ["threshold"], 25.0, (240, 320), None), ("m5", EDGES, 100.0, (480, 640), None),
    ("m6", ["gauss3x3"], 33.3, (360, 480), None),
]


@pytest.fixture(scope="module")
def local_fleet():
    # The boards' hosts taken as free (--host-reserve-ms 0): the failover expectations below need the
    # PYNQ-Z2 near full to still take a moved pipeline, and the host's own bound takes some of its
    # deadlines' slack (tests/test_host_cost.py is about the host).
    lf = LocalFleet([SimBoard(b.name, b.platform, b.cameras) for b in BOARDS], dilation=DILATION, host_reserve_ms=0.0)
    lf.start()
    try:
        yield lf
    finally:
        lf.shutdown()


def test_no_board_admits_names_every_board(local_fleet):
    with fleet.connect(local_fleet.address) as fpga:
        with pytest.raises(AdmissionRejected) as info:       # 1080p at 60 fps with a 9 ms deadline
            fpga.pipeline("too_big", EDGES, period_ms=16.7, deadline_ms=9.0, frame_shape=(1080, 1920))
        assert set(info.value.reasons) == {"b1", "b2", "b3"}
        assert "more than its 9.00 ms deadline" in info.value.reasons["b3"]
        with pytest.raises(AdmissionRejected, match="no live board has camera 'cam9'"):
            fpga.pipeline("nocam", EDGES, period_ms=33.3, frame_shape=(120, 160), camera="cam9")
        assert fpga.status()["pipelines"] == {}


def test_dnn_goes_to_boards_with_tiles(local_fleet):
    with fleet.connect(local_fleet.address) as fpga:
        digits = fpga.dnn("digits", "digits_cnn")
        assert sorted(digits.boards) == ["b1", "b2", "b3"]    # pynq-z2's 4x4 tile holds digits_cnn
        rng = np.random.default_rng(1)
        futures = [digits.submit(rng.integers(0, 256, (8, 8), dtype=np.uint8)) for _ in range(200)]
        outputs = [f.result(timeout=60) for f in futures]
        assert all(o.shape == (10,) and o.dtype == np.int8 for o in outputs)
        assert digits.done["b1"] > 0 and digits.done["b2"] > 0    # both boards' queues took images
        digits.close()


def test_app_on_a_board_uses_its_shared_memory(local_fleet):
    """An app on a board's node whose pipeline lands on that board talks to the daemon directly:
    frames go into the daemon's shared-memory ring, not through Ray. Elsewhere they go through Ray."""

    @ray.remote(num_cpus=0, resources={"fpga:b1": 0.001})
    def app_on_b1():
        from fpgashare import fleet as fleet_on_board

        with fleet_on_board.connect() as fpga:
            pipe = fpga.pipeline("onboard", EDGES, period_ms=33.3, frame_shape=(120, 160))
            frame = np.arange(120 * 160, dtype=np.uint8).reshape(120, 160)
            out = pipe.submit(frame).result(timeout=60)
            placed = fpga.status()["pipelines"]["onboard"]["boards"]
            direct = pipe.local is not None
            pipe.close()
            return placed, direct, np.array_equal(out, chain_reference(resolve_chain(EDGES, {}), frame))

    assert ray.get(app_on_b1.remote(), timeout=120) == (["b1"], True, True)
    with fleet.connect(local_fleet.address) as fpga:            # this driver is on the head: no board here
        pipe = fpga.pipeline("remote", EDGES, period_ms=33.3, frame_shape=(120, 160))
        assert pipe.local is None and pipe.board in ("b1", "b2", "b3")
        frame = np.full((120, 160), 9, np.uint8)
        out = asyncio.run(pipe.asubmit(frame))                   # through Ray's object store
        assert np.array_equal(out, chain_reference(resolve_chain(EDGES, {}), frame))
        pipe.close()


def test_fleet_status_command(local_fleet, capsys):
    import json

    from fpgashare.cli.main import main

    assert main(["fleet", "status", "--address", local_fleet.address, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert {n: (b["platform"], b["alive"]) for n, b in status["boards"].items()} == {
        "b1": ("zcu104", True), "b2": ("zcu104", True), "b3": ("pynq-z2", True)}
    assert status["boards"]["b2"]["cameras"] == ["cam0"]
    assert main(["fleet", "status", "--address", local_fleet.address]) == 0
    assert "board b3: pynq-z2  up, cameras cam1" in capsys.readouterr().out


def _told_and_sent_since(placed: dict, killed: dict, events: list, heard: dict, sent: list) -> bool:
    """Whether every pipeline placed on a killed board has moved to a live board or ended, and has
    sent a frame after the client heard of its last event."""
    for name, board in placed.items():
        told = None
        for e in events:
            if e.pipeline != name:
                continue
            if isinstance(e, fleet.PipelineMoved) and e.from_board == board:
                board, told = e.to_board, heard[name, "PipelineMoved", e.from_board]
            elif isinstance(e, fleet.PipelineLost):
                board, told = None, heard[name, "PipelineLost", None]
        if board in killed:
            return False
        if told is not None and not any(n == name and t > told for n, _, t, _, _ in sent):
            return False
    return True


class Streamer:
    """Submits a frame of every pipeline each period (wall = period x dilation) and keeps every
    future with the board it was sent to and when."""

    def __init__(self, pipes: dict, specs: dict) -> None:
        self.pipes, self.specs = pipes, specs
        self.sent: list[tuple[str, str, float, object, np.ndarray]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        rng = np.random.default_rng(7)
        self.frames = {n: rng.integers(0, 256, specs[n][3], dtype=np.uint8) for n in pipes}

    def run(self) -> None:
        due = {n: time.monotonic() for n in self.pipes}
        while not self.stop.is_set():
            now = time.monotonic()
            for name, pipe in self.pipes.items():
                if now >= due[name]:
                    fut = pipe.submit(self.frames[name])
                    self.sent.append((name, fut.board, now, fut, self.frames[name]))
                    due[name] += self.specs[name][2] / 1e3 * DILATION
            time.sleep(0.01)     # real waiting: the app's pacing in wall time


def test_boards_killed_mid_stream(local_fleet):
    """b1 dies (its pipelines move), then b2 (the camera's pipeline and what fits nowhere end)."""
    specs = {p[0]: p for p in PIPELINES}
    with fleet.connect(local_fleet.address) as fpga:
        # The 1080p chains one to a board (the placement order would pack alike chains on one board
        # while it admits them, tests/test_fleet_placement.py), so every board has work to move.
        spread = {f"hd{i}": [f"b{i + 1}"] for i in range(3)}
        pipes = {name: fpga.pipeline(name, stages, period_ms=period, frame_shape=frame, camera=cam,
                                     boards=spread.get(name))
                 for name, stages, period, frame, cam in PIPELINES}
        placed = {name: p.board for name, p in pipes.items()}
        platforms = {fpga.status()["boards"][b]["platform"] for b in placed.values()}
        assert platforms == {"zcu104", "pynq-z2"}
        assert placed["cam0_edges"] == "b2" and placed["cam1_thresh"] == "b3"
        assert [placed[f"hd{i}"] for i in range(3)] == ["b1", "b2", "b3"]
        log.info("placed %s", placed)

        heard: dict[tuple, float] = {}        # (pipeline, kind, from board) -> when the client heard it
        live: list = []                       # the events as they come (the event thread appends)

        def on_event(e) -> None:
            heard.setdefault((e.pipeline, type(e).__name__, getattr(e, "from_board", None)), time.monotonic())
            live.append(e)

        fpga.on_event = on_event
        streamer = Streamer(pipes, specs)
        streamer.thread.start()
        killed: dict[str, float] = {}
        for victim in ("b1", "b2"):
            time.sleep(8.0)                  # real waiting: streaming between the kills
            killed[victim] = time.monotonic()
            local_fleet.kill_board(victim)
        time.sleep(8.0)
        # Then until every pipeline of a killed board has moved or ended and sent a frame since the
        # client heard so (m5 sends every 5 wall seconds: a fixed time would ride on when its event
        # came on a loaded host).
        settled_by = time.monotonic() + 60.0
        while time.monotonic() < settled_by and not _told_and_sent_since(placed, killed, list(live), heard,
                                                                          list(streamer.sent)):
            time.sleep(0.2)                  # real waiting: the fleet's recovery on the wall clock
        streamer.stop.set()
        streamer.thread.join(10)
        events = fpga.poll_events()
        outcomes = settle(streamer, specs)
        assert sum(len(v) for v in outcomes.values()) == len(streamer.sent)    # one outcome per frame

    log.info("events %s", events)
    moved = [e for e in events if isinstance(e, fleet.PipelineMoved)]
    lost = {e.pipeline: e for e in events if isinstance(e, fleet.PipelineLost)}
    first_on = {n for n, b in placed.items() if b == "b1"}
    assert first_on <= {e.pipeline for e in moved} | set(lost)
    assert any(e.from_board == "b1" for e in moved) and any(e.from_board == "b2" for e in moved)
    assert "camera cam0" in lost["cam0_edges"].reason
    assert any("no board admits it" in e.reason for e in lost.values())      # fits nowhere: says why
    for victim in killed:                       # each board's pipelines were re-admitted in deadline order
        order = [specs[e.pipeline][2] for e in events if getattr(e, "from_board", getattr(e, "board", None)) == victim]
        assert order == sorted(order), (victim, order)
    for event in moved:
        # "Streams again" is the move being done (the client told) plus its next frame served on time
        # on the new board. When that frame is sent is the app's pacing (m2 sends every 3.3 wall
        # seconds at this dilation), not the fleet's recovery, so it is not part of the 5 s.
        kill = killed[event.from_board]
        ready = heard[event.pipeline, "PipelineMoved", event.from_board] - kill
        # Frames sent before the client heard of the move were in flight through it (they may end
        # with the board that died, whichever board they are filed under).
        after = [(t, k) for b, t, k in outcomes[event.pipeline] if b == event.to_board and t > kill + ready]
        assert after, event
        log.info("%s: %s -> %s, moved %.2f s after the kill, next frame sent at %.2f s", event.pipeline,
                 event.from_board, event.to_board, ready, after[0][0] - kill)
        # A frame sent to the new board within 2 s of that board's own death may end with it (the
        # rule for every frame below); otherwise the first frame there is served (a result). How
        # soon (the 5 s goal) is benchmarks/fleet_bench.py's to measure: on a shared host it is
        # wall-clock luck, and a test must not ride on it.
        doomed = after[0][0] > killed.get(event.to_board, float("inf")) - 2.0
        assert doomed or after[0][1] == "on_time" or after[0][1].startswith("late"), (
            event, {k: round(t - kill, 2) for k, t in killed.items()},
            {k: round(t - kill, 2) for k, t in heard.items() if k[0] == event.pipeline},
            [(b, round(t - kill, 2), k[:24]) for b, t, k in outcomes[event.pipeline] if t > kill - 1])
    moving = {}                                 # pipeline -> (its board's death - 2 s, when its move was heard)
    for event in moved:
        moving.setdefault(event.pipeline, []).append(
            (killed[event.from_board] - 2.0, heard[event.pipeline, "PipelineMoved", event.from_board]))
    for name, frames in outcomes.items():
        for board, sent_at, kind in frames:
            through_move = any(start < sent_at <= end for start, end in moving.get(name, ()))
            # In flight when its board died: sent before the kill and not answered by then (on a
            # loaded host a frame may wait seconds on its way; one answered is never lost).
            if through_move or (board in killed and sent_at > killed[board] - 2.0) \
                    or (board in killed and kind == "error: board lost" and sent_at < killed[board]):
                assert kind in ("on_time", "error: board lost") or kind.startswith("dropped: pipeline ended"), kind
            elif HOST_LATE in kind:
                # The board's host ran its loop later than the admission allows (a daemon on a
                # loaded 2-core machine, at wall-clock speed): outside the guarantee, and the
                # daemon says so (runtime/daemon/host_overrun.py). Any other miss is a fault.
                log.warning("%s on %s: %s", name, board, kind)
            else:
                assert kind == "on_time", (name, board, kind, {k: sent_at - t for k, t in killed.items()},
                                           placed, events)       # no miss on a live board
    log.info("outcomes: %s", {n: sorted({k for _, _, k in v}) for n, v in outcomes.items()})
    for name, event in lost.items():                # what fits nowhere ends: its later frames say why
        after = [k for _, t, k in outcomes[name] if t > heard[name, "PipelineLost", None]]
        assert after and all(k == f"dropped: pipeline ended: {event.reason}" for k in after), (name, after)


def settle(streamer: Streamer, specs: dict) -> dict[str, list]:
    """Every sent frame's outcome: (board, sent at, kind); outputs checked against OpenCV."""
    outcomes: dict[str, list] = {n: [] for n in streamer.pipes}
    for name, board, sent_at, fut, frame in streamer.sent:
        try:
            out = fut.result(timeout=60)
            kind = "on_time"
            assert np.array_equal(out, chain_reference(resolve_chain(specs[name][1], {}), frame))
        except DeadlineMissed as exc:
            kind = f"late: {exc.reason}" if exc.reason else "late"
        except FrameDropped as exc:
            kind = f"dropped: {exc.reason}"
        except FrameFailed as exc:
            kind = f"error: {getattr(exc, 'reason', exc)}"
        outcomes[name].append((board, sent_at, kind))
    return outcomes
