"""Frames in shared memory: the daemon and a client exchange pixels through a ring of frame slots
in one POSIX shared-memory segment (``/dev/shm``), and only a slot index crosses the socket.

The daemon creates a ring per pipeline (input and output frames side by side in each slot) and
owns it. Both sides see the same bytes through numpy views, so nothing is copied on the way.

A daemon's rings are private (``FrameRing.create_private``): an anonymous memory file
(``memfd_create``) that has no name anywhere, whose descriptor the daemon hands to the one client
that asked for it over the Unix socket (SCM_RIGHTS) and then closes. No other process can open
it — there is nothing in ``/dev/shm`` to list or open — and nothing is left behind when the daemon
dies, however it dies. Named rings (``create`` / ``attach``) remain for tools and tests in one
trust domain.

A private ring is *sealed* before it is handed over: ``F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL``
(checked with ``F_GET_SEALS``; a ring whose seals did not take is never handed over, and a client
refuses a descriptor without them). Why the daemon cannot take a bus error from a tenant's ring:
a read or write of a shared file mapping faults with SIGBUS only where the page lies past the
file's end (or the filesystem cannot supply the page). The daemon maps exactly the file's size at
creation; with the size sealed no process — the tenant included, whatever descriptor it holds —
can make the file shorter (``ftruncate`` fails with EPERM), so every mapped page stays inside the
file. Hole punching (``fallocate(PUNCH_HOLE)``) is allowed on a shrink-sealed memfd but only
frees pages: reading one back yields zeros, never a fault. ``F_SEAL_SEAL`` stops the tenant from
adding seals of its own (a write seal would fail on the daemon's writable mapping anyway). memfd
pages come from the kernel's internal shm mount, which has no size limit to run out of.
"""

from __future__ import annotations

import fcntl
import logging
import mmap
import os
import secrets
from dataclasses import dataclass
from functools import cached_property
from multiprocessing import resource_tracker, shared_memory

import numpy as np
from fpgashare.errors import FrameError

log = logging.getLogger(__name__)

PREFIX = "fpgashare"
#: The seals every private ring carries: its size is fixed and no one can add another seal.
RING_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
_CREATED: set[str] = set()     # segments this process made (its resource tracker owns them)


@dataclass(frozen=True)
class RingSpec:
    """What a client needs to attach: the segment's name and the layout of its slots."""

    name: str
    slots: int
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    dtype: str = "uint8"

    @cached_property
    def in_bytes(self) -> int:
        return int(np.prod(self.in_shape)) * np.dtype(self.dtype).itemsize

    @cached_property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)

    @cached_property
    def slot_bytes(self) -> int:
        return self.in_bytes + int(np.prod(self.out_shape)) * np.dtype(self.dtype).itemsize

    def to_wire(self) -> dict:
        return {"name": self.name, "slots": self.slots, "in_shape": list(self.in_shape),
                "out_shape": list(self.out_shape), "dtype": self.dtype}

    @classmethod
    def from_wire(cls, data: dict) -> RingSpec:
        try:
            return cls(str(data["name"]), int(data["slots"]), tuple(int(v) for v in data["in_shape"]),
                       tuple(int(v) for v in data["out_shape"]), str(data["dtype"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise FrameError(f"a frame ring description needs name, slots, in_shape, out_shape, dtype: {exc}") from None


class FrameRing:
    """``spec.slots`` (input frame, output frame) pairs in one shared-memory segment."""

    def __init__(self, spec: RingSpec, segment: shared_memory.SharedMemory | None, owner: bool,
                 mapping: mmap.mmap | None = None, fd: int | None = None) -> None:
        self.spec, self._segment, self.owner = spec, segment, owner
        self._mapping = mapping     # a private ring's memory (no segment)
        self.fd = fd                # a private ring's descriptor until it is handed over (take_fd)
        buf = segment.buf if segment is not None else mapping
        # Views made once: a frame's path asks for them several times.
        self._views = [(np.ndarray(spec.in_shape, spec.dtype, buf, i * spec.slot_bytes),
                        np.ndarray(spec.out_shape, spec.dtype, buf, i * spec.slot_bytes + spec.in_bytes))
                       for i in range(spec.slots)]

    @property
    def nbytes(self) -> int:
        return self.spec.slots * self.spec.slot_bytes

    @classmethod
    def create_private(cls, slots: int, in_shape: tuple[int, ...], out_shape: tuple[int, ...],
                       dtype: str = "uint8", tag: str = "") -> FrameRing:
        """A ring in an anonymous memory file: reachable only through ``fd`` (hand it to one
        client with ``take_fd``, then it is the client's and the daemon's alone)."""
        if slots < 1:
            raise FrameError(f"a frame ring needs at least one slot, got {slots}")
        name = f"{PREFIX}-{tag + '-' if tag else ''}{secrets.token_hex(6)}"
        spec = RingSpec(name, slots, tuple(in_shape), tuple(out_shape), dtype)
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, spec.slots * spec.slot_bytes)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, RING_SEALS)
            check_sealed(fd, spec.name)
            mapping = mmap.mmap(fd, spec.slots * spec.slot_bytes)
        except BaseException:
            os.close(fd)
            raise
        return cls(spec, None, owner=True, mapping=mapping, fd=fd)

    @classmethod
    def attach_fd(cls, spec: RingSpec, fd: int) -> FrameRing:
        """The client's side of a private ring: map the descriptor the daemon passed (closed here;
        the mapping stays)."""
        try:
            check_sealed(fd, spec.name)
            size = os.fstat(fd).st_size
            if size < spec.slots * spec.slot_bytes:
                raise FrameError(f"frame ring {spec.name} holds {size} bytes, the layout needs "
                                 f"{spec.slots * spec.slot_bytes}")
            mapping = mmap.mmap(fd, spec.slots * spec.slot_bytes)
        finally:
            os.close(fd)
        return cls(spec, None, owner=False, mapping=mapping)

    def take_fd(self) -> int | None:
        """The private ring's descriptor, once; the ring no longer holds it (the caller closes it)."""
        fd, self.fd = self.fd, None
        return fd

    @classmethod
    def create(cls, slots: int, in_shape: tuple[int, ...], out_shape: tuple[int, ...],
               dtype: str = "uint8", tag: str = "") -> FrameRing:
        if slots < 1:
            raise FrameError(f"a frame ring needs at least one slot, got {slots}")
        name = f"{PREFIX}-{tag + '-' if tag else ''}{secrets.token_hex(6)}"
        spec = RingSpec(name, slots, tuple(in_shape), tuple(out_shape), dtype)
        segment = shared_memory.SharedMemory(name=name, create=True, size=spec.slots * spec.slot_bytes)
        _CREATED.add(name)
        log.debug("created frame ring %s (%d x %d bytes)", name, slots, spec.slot_bytes)
        return cls(spec, segment, owner=True)

    @classmethod
    def attach(cls, spec: RingSpec) -> FrameRing:
        try:
            segment = shared_memory.SharedMemory(name=spec.name)
        except FileNotFoundError:
            raise FrameError(f"frame ring {spec.name} does not exist (its pipeline has ended?)") from None
        # Python < 3.13 registers an attached segment with this process's resource tracker, which
        # would unlink it when this process exits: the daemon owns it, so take it off the list.
        if spec.name not in _CREATED:
            resource_tracker.unregister(segment._name, "shared_memory")
        if segment.size < spec.slots * spec.slot_bytes:
            segment.close()
            raise FrameError(f"frame ring {spec.name} holds {segment.size} bytes, the layout needs "
                             f"{spec.slots * spec.slot_bytes}")
        return cls(spec, segment, owner=False)

    def _check(self, index: int) -> int:
        if not 0 <= index < self.spec.slots:
            raise FrameError(f"frame slot {index} is outside 0..{self.spec.slots - 1} of ring {self.spec.name}")
        return index

    def input(self, index: int) -> np.ndarray:
        """The input frame of slot ``index`` (a view into shared memory)."""
        return self._views[self._check(index)][0]

    def output(self, index: int) -> np.ndarray:
        """The output frame of slot ``index`` (a view into shared memory)."""
        return self._views[self._check(index)][1]

    def close(self) -> None:
        """Drop this process's mapping; the owner also removes the segment."""
        self._views = []
        if self.fd is not None:
            os.close(self.take_fd())
        if self._mapping is not None:
            try:
                self._mapping.close()
            except BufferError:
                log.warning("frame ring %s: views still alive at close; the mapping stays until they go",
                            self.spec.name)
            return
        try:
            self._segment.close()
        except BufferError:
            log.warning("frame ring %s: views still alive at close; the mapping stays until they go",
                        self.spec.name)
            return
        if self.owner:
            try:
                self._segment.unlink()
            except FileNotFoundError:
                pass
            _CREATED.discard(self.spec.name)


def check_sealed(fd: int, name: str) -> None:
    """Refuse a ring descriptor whose size is not sealed (someone could shrink it under a mapping)."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError as exc:
        raise FrameError(f"frame ring {name}: its descriptor takes no seals ({exc.strerror}); "
                         "a ring must be a sealed memfd") from None
    missing = RING_SEALS & ~seals
    if missing:
        raise FrameError(f"frame ring {name}: not sealed against resizing (seals 0x{seals:x}, "
                         f"missing 0x{missing:x})")


def check_frame(frame: np.ndarray, shape: tuple[int, ...], dtype: str = "uint8") -> None:
    """Refuse a frame that does not match its pipeline, saying what was expected."""
    if not isinstance(frame, np.ndarray):
        raise FrameError(f"a frame must be a numpy array, got {type(frame).__name__}")
    check_layout(tuple(frame.shape), str(frame.dtype), shape, dtype)


def check_layout(shape: tuple[int, ...], dtype: str, want_shape: tuple[int, ...], want_dtype: str) -> None:
    """Refuse a frame of ``shape`` and ``dtype`` where the pipeline takes ``want_shape`` and
    ``want_dtype``, saying what was expected."""
    try:       # the same name is the same dtype: no parsing on a frame's path
        same_dtype = dtype == want_dtype or np.dtype(dtype) == np.dtype(want_dtype)
    except (TypeError, ValueError, SyntaxError):     # numpy parses dtype strings and raises all three
        raise FrameError(f"frame dtype {dtype!r} is not a numpy dtype; the pipeline takes {want_dtype}") from None
    if not same_dtype:
        raise FrameError(f"frame dtype is {dtype}, the pipeline takes {want_dtype}")
    if tuple(shape) != tuple(want_shape):
        raise FrameError(f"frame shape is {tuple(shape)}, the pipeline takes {tuple(want_shape)}")
