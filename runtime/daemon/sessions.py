"""Who the daemon serves: a client (its connection, credentials, quotas' counts) and its
pipelines' states, and how they end: a pipeline ends when its client closes it or goes (or the
daemon stops); frames waiting are answered dropped at once, frames on the fabric when they end
(``frame_done``), then its ring is retired."""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import re
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from fpgashare.daemon.limits import Limits, RateLimiter
from fpgashare.sched.core.engine import DnnRequest, Frame
from fpgashare.wire.protocol import ProtocolError, reply
from fpgashare.wire.shm import FrameRing

if TYPE_CHECKING:
    from fpgashare.catalogue.workload import PipelineSpec
    from fpgashare.daemon.driver import Driver
    from fpgashare.daemon.stats import Stats

log = logging.getLogger("fpgashare.daemon")

ANOTHERS = "another client's pipeline"    #: what a client is told in place of another's pipeline name
FD_SEND_WAIT_S = 5.0      #: how long a ring's descriptor waits for room in a client's socket


@dataclass
class PipelineState:
    name: str                     #: the client's name for it
    key: str                      #: the engine's name (unique across clients)
    ring: FrameRing
    free: set[int]
    #: id(item) -> (the item, its ring slot, the submit's request id). Keyed by the item itself, not
    #: by its ``seq``: a seq is unique within one partition's engine only, and a board partitioned
    #: into several streams numbers its partitions' frames independently. Holding the item keeps
    #: its id from being reused while the entry exists.
    in_flight: dict[int, tuple[object, int, int]] = field(default_factory=dict)
    closing: str | None = None    #: why it is ending, once it is
    #: The deadline the app was given (the registration's answer); the engine judges a frame by the
    #: fabric's share of it (the host's reserve taken: runtime/sched/host/host_cost.py). 0: the engine's.
    due_s: float = 0.0
    on_retired: Callable[[], object] | None = None   #: told once it has ended (ring and name given back)


@dataclass
class Client:
    id: int
    pid: int
    uid: int
    gid: int
    writer: asyncio.StreamWriter
    rate: RateLimiter
    pipelines: dict[str, PipelineState] = field(default_factory=dict)   # by the client's name
    shm_bytes: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)     #: its frames and images, by how they ended

    def in_flight(self) -> int:
        return sum(len(s.in_flight) for s in self.pipelines.values())

    def send(self, data: bytes) -> None:
        """Queue ``data`` on the client's socket (dropped once the socket is closing)."""
        if not self.writer.is_closing():
            self.writer.write(data)

    async def send_with_fd(self, data: bytes, fd: int) -> None:
        """``data`` with ``fd`` on its first byte (SCM_RIGHTS), after every byte already queued;
        ``fd`` is closed here. A client whose socket stays full loses its connection."""
        writer = self.writer
        transport = writer.transport
        try:
            if transport.get_write_buffer_size():
                transport.set_write_buffer_limits(high=0)      # drain() now waits for an empty buffer
                try:
                    await writer.drain()
                finally:
                    transport.set_write_buffer_limits()
            raw = socket.socket(fileno=transport.get_extra_info("socket").fileno())
            try:
                deadline = time.monotonic() + FD_SEND_WAIT_S
                while True:
                    try:
                        sent = socket.send_fds(raw, [data], [fd])
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise ConnectionError("the client's socket stayed full") from None
                        await asyncio.sleep(0.001)
            finally:
                raw.detach()
            if sent < len(data):
                writer.write(data[sent:])
        finally:
            os.close(fd)


class Sessions:
    """The daemon's side of its clients: who is connected (``clients``), every pipeline by its
    engine name (``states``: owner and state), the rings' bytes (``shm_bytes``), and how frames
    and pipelines end. Handed the driver (the engine on the loop), the statistics and the limits."""

    def __init__(self, driver: Driver, stats: Stats, limits: Limits) -> None:
        self.driver, self.stats, self.limits = driver, stats, limits
        self.clients: dict[int, Client] = {}
        self.states: dict[str, tuple[Client, PipelineState]] = {}    # engine name -> owner, state
        self.shm_bytes = 0                                           # every ring together
        self.metrics = None             #: the Prometheus metrics, once the daemon serves them

    def is_admin(self, client: Client) -> bool:
        """Root, the daemon's own user, or a member of ``limits.admin_gid``."""
        if client.uid in (0, os.getuid()):
            return True
        admin = self.limits.admin_gid
        if admin is None:
            return False
        if client.gid == admin:
            return True
        try:
            return admin in os.getgrouplist(pwd.getpwuid(client.uid).pw_name, client.gid)
        except KeyError:
            return False

    def check_name_free(self, client: Client, name: str) -> None:
        # Names are the client's own (a closing pipeline keeps its name until retired).
        state = client.pipelines.get(name)
        if state is not None and state.closing:
            raise ProtocolError("bad_request", f"the pipeline named {name!r} of this client is still closing "
                                f"({state.closing}): its frames on the fabric end first")
        if state is not None:
            raise ProtocolError("bad_request", f"a pipeline named {name!r} is already registered by this client")

    def redact(self, text: str, client: Client, asked: object = None) -> str:
        """``text`` with every other client's pipeline (by its engine name) put as ANOTHERS: a
        refusal computed over the whole set (admission, the host's check) may name any pipeline
        in it, and no client may learn another's names or figures. A name counts where it stands
        alone (not inside a longer name: ``edges`` is not replaced in ``edges@7``). A key that is
        one of the client's own names (its pipelines', or ``asked``, the name its request gave) is
        left: the text may be naming the client's own, and that name tells it nothing new."""
        mine = {state.name for state in client.pipelines.values()} | {asked if isinstance(asked, str) else None}
        others = sorted((key for key, (owner, _) in self.states.items()
                         if owner is not client and key in text and key not in mine), key=len, reverse=True)
        if not others:
            return text
        return re.sub(r"(?<![\w@])(?:" + "|".join(map(re.escape, others)) + r")(?![\w@])", ANOTHERS, text)

    def engine_name(self, client: Client, name: str) -> str:
        """The client's name if no pipeline has it and it holds no ``@``, else ``name@client``.

        Why no client can take another's key: a plain key holds no ``@`` and is given once; a
        suffixed key ends in ``@`` and the id of the client it was made for (the text after the last
        ``@``), so it is that client's alone, and within it the name part tells its names apart.
        So squatting ``edges`` and ``edges@7`` cannot block client 7's ``edges``."""
        return name if name not in self.states and "@" not in name else f"{name}@{client.id}"

    def begun(self, key: str) -> None:
        """A pipeline registered under engine name ``key`` starts with no statistics or metrics
        (the name may have been another client's pipeline's, now ended: stats.py)."""
        self.stats.begun(key)
        if self.metrics is not None:
            self.metrics.forget(key)

    def end_pipeline(self, client: Client, name: str, reason: str) -> None:
        state = client.pipelines[name]
        if state.closing:
            return
        state.closing = reason
        self.driver.step(self.driver.engine.remove_pipeline, state.key, reason)   # waiting frames: dropped
        if not state.in_flight:             # else frames on the fabric end first (answered dropped)
            self.retire(client, state)

    def retire(self, client: Client, state: PipelineState) -> None:
        state.ring.close()
        if client.pipelines.get(state.name) is state:
            del client.pipelines[state.name]
            client.shm_bytes -= state.ring.nbytes
            self.shm_bytes -= state.ring.nbytes
        self.states.pop(state.key, None)
        if state.on_retired is not None:
            state.on_retired()
        for name in self.stats.retired(state.key, self.states):
            if self.metrics is not None:       # its series go with its statistics: churn cannot grow them
                self.metrics.forget(name)

    def client_gone(self, client: Client, reason: str) -> None:
        if self.clients.pop(client.id, None) is None:
            return
        for name in list(client.pipelines):
            self.end_pipeline(client, name, reason)
        log.info("client %d gone (%s)", client.id, reason)

    def frame_done(self, frame: Frame | DnnRequest) -> None:
        """Answer an item that ended: a frame's output into its client's ring and the reply onto
        its socket; a DNN image's output in the reply."""
        owner = self.states.get(frame.pipeline.name)
        entry = None if owner is None else owner[1].in_flight.get(id(frame))
        if entry is None or entry[0] is not frame:
            return                          # already answered
        client, state = owner
        outcome, reason = frame.outcome, frame.reason
        if state.closing and outcome in ("on_time", "late", "done"):
            # Its ring is going away: the output is not written, so it must not pass for a result.
            outcome, reason = "dropped", f"{state.closing} while the frame was on the fabric"
        elif outcome in ("on_time", "late", "done"):
            garbage = bad_output(frame, state.ring)
            if garbage:                     # the board's DMA returned something else: not a result
                outcome, reason = "error", garbage
        if outcome == "late" and isinstance(frame, Frame):
            judged = judged_by(frame.pipeline, state.due_s)
            reason = f"{reason}; {judged}" if reason and judged else reason or judged
        # From when the app's frame came (a DNN image: its submission; a frame with CPU stages
        # first: its release, not the fabric's).
        came = frame.release if isinstance(frame, DnnRequest) else frame.origin
        latency = None if frame.end is None else (frame.end - came) * 1e3
        self.stats.ended(frame.pipeline.name, frame.pipeline.klass, outcome, latency)
        client.outcomes[outcome] = client.outcomes.get(outcome, 0) + 1
        _, slot, rid = state.in_flight.pop(id(frame))
        if isinstance(frame, DnnRequest):   # outputs are a few int8 values: they ride in the reply
            output = frame.output if outcome == "done" else None
            extra = {"output": None if output is None else [int(v) for v in output]}
            metric_latency = None
            frame.image = None
        else:                               # a frame's output goes next to its input in the ring
            if frame.output is not None and outcome in ("on_time", "late"):
                state.ring.output(slot)[...] = frame.output
            extra = {"latency_ms": latency}
            if frame.results and outcome in ("on_time", "late"):
                extra["results"] = frame.results      # registers the modules left (moments, template_match)
            metric_latency = None if latency is None else latency / 1e3
            frame.pixels = frame.output = None      # the ring's views: let it close
        try:
            answer = reply(rid, outcome=outcome, reason=reason, slot=slot, **extra)
        except ProtocolError as exc:        # (too big for a message): still its one answer, and this
            # runs inside the engine's step, where an exception would leave every tenant's next event unset
            outcome, metric_latency = "error", None
            answer = reply(rid, outcome=outcome, reason=f"its answer cannot be sent: {exc}", slot=slot)
        if self.metrics is not None:        # the outcome the app was sent
            self.metrics.frame_ended(frame.pipeline.name, outcome, metric_latency)
        client.send(answer)
        state.free.add(slot)
        if state.closing and not state.in_flight:
            self.retire(client, state)


def judged_by(pipeline: PipelineSpec, app_due_s: float) -> str:
    """What a late frame's reason says of the deadline it missed when that is not the one its app
    was given: the engine judges it by the fabric's share, from when it reached the daemon, the
    host's response bound taken each way (runtime/sched/host/host_cost.py); '' when they agree.
    Without it a frame 7 ms after its arrival would be "past its deadline" of 33 ms."""
    due = pipeline.due_s + pipeline.handover_s
    kept = app_due_s - due
    if kept <= 1e-12:
        return ""
    return (f"due {due * 1e3:.3f} ms after it reached the daemon: its {app_due_s * 1e3:.3f} ms "
            f"deadline less the {kept * 1e3:.3f} ms the admission keeps for the daemon's own work on the "
            f"host (its response bound each way)")


def bad_output(item: Frame | DnnRequest, ring: FrameRing) -> str | None:
    """Why the output the board returned cannot be a result (None if it can)."""
    out = item.output
    if isinstance(item, DnnRequest):
        if isinstance(out, np.ndarray) and out.ndim == 1 and out.dtype.kind in "iu" and out.size \
                and int(out.min()) >= -128 and int(out.max()) <= 127:
            return None
        what = f"shape {getattr(out, 'shape', None)}, dtype {getattr(out, 'dtype', type(out).__name__)}"
        return f"the board returned a DNN output of {what}, not int8 values"
    if isinstance(out, np.ndarray) and out.shape == ring.spec.out_shape and out.dtype == ring.spec.np_dtype:
        return None
    what = f"shape {getattr(out, 'shape', None)}, dtype {getattr(out, 'dtype', type(out).__name__)}"
    return f"the board returned a frame of {what}; the pipeline's output is {ring.spec.out_shape} {ring.spec.dtype}"


def peer_credentials(writer: asyncio.StreamWriter) -> tuple[int, int, int]:
    sock = writer.get_extra_info("socket")
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)
    except (AttributeError, OSError):
        return (-1, -1, -1)
