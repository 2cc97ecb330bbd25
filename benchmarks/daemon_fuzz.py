"""Fuzz the daemon: seeded typed requests with wrong field types and values (NaN, inf, huge,
negative, wrong types, nested garbage) over one raw connection to its Unix socket, and the same
over its TCP listener (with inline frames, good and bad), then a fresh client must still get
correct frames. Fails (exit 1) on any ``internal`` reply or a request left unanswered.

    python -m benchmarks.daemon_fuzz [--quick] [--messages 100000] [--seed 1]

tests/test_daemon_validation.py runs the same fuzzer for 20,000 messages in CI.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import select
import socket
import sys
import tempfile
import time
from pathlib import Path

import msgpack
from fpgashare.wire.protocol import HEADER, VERSION, encode

OPS = ("hello", "clock", "status", "pipeline", "dnn", "submit", "infer", "close", "teleport", "", "_serve")
NAMES = ("f0", "f1", "f2", "d0")
GOOD = {
    "name": lambda r: r.choice(NAMES),
    "pipeline": lambda r: r.choice(NAMES),
    "stages": lambda r: r.choice([["threshold"], ["gauss3x3", "threshold"], ["box3x3"]]),
    "period_ms": lambda r: r.choice([20.0, 50, 100.0]),
    "deadline_ms": lambda r: r.choice([20.0, 50.0]),
    "frame_shape": lambda r: [r.choice([16, 60]), r.choice([16, 80])],
    "params": lambda r: r.choice([{}, {"threshold": {"LEVEL": 100}}]),
    "model": lambda r: "digits_cnn",
    "slot": lambda r: r.randrange(4),
    "shape": lambda r: r.choice([[60, 80], [16, 16], [8, 8]]),
    "dtype": lambda r: "uint8",
}
FIELDS = {"pipeline": ("name", "stages", "period_ms", "deadline_ms", "frame_shape", "params"),
          "dnn": ("name", "model"), "submit": ("pipeline", "slot", "shape", "dtype"),
          "infer": ("pipeline", "slot", "shape", "dtype"), "close": ("pipeline",)}


SCALARS = (float("nan"), float("inf"), -float("inf"), -1, 0, 1 << 63, -(1 << 63), (1 << 64) - 1, 1e308, -0.0,
           "x", "", "\x00" * 3, b"\xff\xfe", None, True, False)


def garbage(r: random.Random, depth: int = 0):
    """A value of a random wrong type or out of range, nested now and then."""
    pick = r.randrange(len(SCALARS) + (4 if depth < 3 else 0))
    if pick < len(SCALARS):
        return SCALARS[pick]
    pick -= len(SCALARS)
    if pick == 0:
        return [garbage(r, depth + 1) for _ in range(r.randrange(4))]
    if pick == 1:
        return {str(r.randrange(9)): garbage(r, depth + 1) for _ in range(r.randrange(4))}
    if pick == 2:
        return "é" * r.randrange(200)
    return r.uniform(-1e9, 1e9)


def message(r: random.Random, rid: int) -> dict:
    op = r.choice(OPS)
    fields = {}
    for key in FIELDS.get(op, r.sample(list(GOOD), 2)):
        roll = r.random()
        if roll < 0.55:
            fields[key] = GOOD[key](r)
        elif roll < 0.95:
            fields[key] = garbage(r)
        # else: the field is missing
    if r.random() < 0.05:
        fields[r.choice(["extra", "v2", "op2"])] = garbage(r)
    return {"op": op if r.random() > 0.03 else garbage(r), "id": rid, **fields}


def frame(msg: dict) -> bytes:
    try:
        return encode(msg)
    except Exception:                     # a value msgpack cannot pack: send bytes it can
        return encode({"op": msg["op"] if isinstance(msg["op"], str) else "x", "id": msg["id"]})


def fuzz(path: Path, messages: int, seed: int, window: int = 64, timeout_s: float = 120.0) -> collections.Counter:
    """Send ``messages`` fuzzed requests; a Counter of reply kinds ('ok' for successes). Raises
    AssertionError on an ``internal`` reply or when a request is never answered."""
    r = random.Random(seed)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    kinds: collections.Counter = collections.Counter()
    kinds.examples = {}                   # the first message of each error kind
    buffer = bytearray()
    sent = answered = 0
    deadline = time.monotonic() + timeout_s
    try:
        while answered < messages:
            while sent < messages and sent - answered < window:
                sent += 1
                sock.sendall(frame(message(r, sent)))
            if time.monotonic() > deadline:
                raise AssertionError(f"{messages - answered} of {messages} requests unanswered after {timeout_s} s")
            if not select.select([sock], [], [], 1.0)[0]:
                # Submits held to their period answer later; close one pipeline to move on.
                sock.sendall(encode({"op": "close", "id": -2, "pipeline": r.choice(NAMES)}))
                continue
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 16)
            for fd in fds:
                os.close(fd)
            if not data:
                raise AssertionError("the daemon closed the fuzzer's connection")
            buffer += data
            while len(buffer) >= HEADER.size and len(buffer) >= HEADER.size + HEADER.unpack_from(buffer)[0]:
                end = HEADER.size + HEADER.unpack_from(buffer)[0]
                reply = msgpack.unpackb(bytes(buffer[HEADER.size:end]), raw=False)
                del buffer[:end]
                kind = "ok" if reply.get("ok") else reply["error"]["kind"]
                if kind == "internal":
                    raise AssertionError(f"internal reply: {reply}")
                if reply.get("id") == -2:
                    continue
                kinds[kind] += 1
                if kind != "ok":
                    kinds.examples.setdefault(kind, reply["error"]["message"])
                answered += 1
    finally:
        sock.close()
    assert kinds["ok"] > 0 and VERSION
    return kinds


def fuzz_tcp(address: tuple[str, int], token: bytes, messages: int, seed: int, window: int = 64,
             timeout_s: float = 600.0) -> collections.Counter:
    """``fuzz`` over the TCP listener: the same requests, submits with inline frames (good bytes,
    wrong sizes, garbage shapes and dtypes). Raises AssertionError on an ``internal`` reply, one
    left unanswered, or the listener hanging up."""
    import concurrent.futures

    from fpgashare.client.tcp import connect_tcp

    r = random.Random(seed)
    fpga = connect_tcp(*address, token, timeout=timeout_s)
    kinds: collections.Counter = collections.Counter()
    kinds.examples = {}
    pending: list = []
    deadline = time.monotonic() + timeout_s
    try:
        for rid in range(1, messages + 1):
            msg = message(r, rid)
            op, fields = msg.pop("op"), {k: v for k, v in msg.items() if k != "id"}
            if op in ("submit", "infer") and r.random() < 0.9:
                size = r.choice([60 * 80, 16 * 16, 7])
                fields.update(frame=r.randbytes(size), frame_shape=r.choice([[60, 80], [16, 16], [7], garbage(r)]),
                              frame_dtype=r.choice(["uint8", "uint8", "float64", garbage(r)]))
            try:
                pending.append(fpga.send(op, **fields))
            except (TypeError, ValueError):      # a value msgpack cannot pack: nothing sent
                continue
            while len(pending) >= window or (rid == messages and pending):
                done, _ = concurrent.futures.wait(pending, timeout=max(0.0, deadline - time.monotonic()),
                                                  return_when=concurrent.futures.FIRST_COMPLETED)
                if not done:
                    raise AssertionError(f"{len(pending)} TCP requests unanswered after {timeout_s} s")
                for future in done:
                    pending.remove(future)
                    reply = future.result()
                    kind = "ok" if reply.get("ok") else reply["error"]["kind"]
                    if kind == "internal" or (kind == "gone" and "went away" in reply["error"]["message"]):
                        raise AssertionError(f"TCP reply: {reply}")
                    kinds[kind] += 1
                    if kind != "ok":
                        kinds.examples.setdefault(kind, reply["error"]["message"])
    finally:
        fpga.close()
    return kinds


def main() -> int:
    from fpgashare.backends import make_backend
    from fpgashare.catalogue.platform import load_platform
    from fpgashare.client import connect
    from fpgashare.daemon import Daemon, DaemonThread, Limits

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000, help="each over the Unix socket and TCP")
    parser.add_argument("--quick", action="store_true", help="2,000 messages each")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    messages = 2_000 if args.quick else args.messages
    import numpy as np
    from fpgashare.backends.simrun import resolve_chain
    from fpgashare.catalogue.vision_ref import chain_reference
    from fpgashare.daemon.tcp_listener import TcpListener, TokenQuota

    path = Path(tempfile.mkdtemp()) / "fuzz.sock"
    token = os.urandom(32)
    # The host taken as free (reserve 0): what is measured is surviving the fuzz, and a calibration
    # on a busy machine could refuse the check's pipeline for the host's sake (host_limit measures that).
    daemon = Daemon(make_backend("model", load_platform("zcu104")), path, dilation=1.0,
                    limits=Limits(messages_per_s=1e9), host_reserve_s=0.0)
    start = time.perf_counter()
    with DaemonThread(daemon):
        kinds = fuzz(path, messages, args.seed, timeout_s=3600)
        unix_s = time.perf_counter() - start
        listener = TcpListener(path, token, ("127.0.0.1", 0), TokenQuota(8, 8, 64, 1e9, 256 << 20)).start()
        try:
            tcp_kinds = fuzz_tcp(listener.address, token, messages, args.seed + 1, timeout_s=3600)
        finally:
            listener.close()
        tcp_s = time.perf_counter() - start - unix_s
        with connect(path) as fpga:
            pipe = fpga.pipeline("after", ["threshold"], period_ms=10.0, frame_shape=(60, 80))
            image = np.arange(60 * 80, dtype=np.uint8).reshape(60, 80)
            good = np.array_equal(pipe.submit(image).result(timeout=10),
                                  chain_reference(resolve_chain(["threshold"], {}), image))
        rss_mib = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    for where, counts, seconds in (("Unix socket", kinds, unix_s), ("TCP", tcp_kinds, tcp_s)):
        print(f"{sum(counts.values())} fuzzed requests over the {where} in {seconds:.1f} s: "
              + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
        for kind, example in sorted(counts.examples.items()):
            print(f"  e.g. {kind}: {example[:110]}")
    from benchmarks.results import write_result

    write_result("daemon_fuzz", {"messages_each": messages, "seed": args.seed,
                                 "unix": dict(kinds.most_common()), "tcp": dict(tcp_kinds.most_common()),
                                 "internal_replies": kinds.get("internal", 0) + tcp_kinds.get("internal", 0),
                                 "fresh_client_frame_equals_opencv": good, "daemon_failure": repr(daemon.failure)},
                 quick=args.quick)
    print(f"no internal reply in {sum(kinds.values()) + sum(tcp_kinds.values())}; a fresh client's frame "
          f"{'equals' if good else 'DIFFERS FROM'} OpenCV's; daemon failure: {daemon.failure!r}; "
          f"process RSS {rss_mib:.0f} MiB")
    return 0 if good and daemon.failure is None else 1


if __name__ == "__main__":
    sys.exit(main())
