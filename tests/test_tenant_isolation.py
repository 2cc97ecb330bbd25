"""Tenants are isolated: the daemon runs as root with the systemd unit's socket settings (mode 0660,
group fpgashare, in a 0750 runtime folder), an ordinary user in the group streams 100 frames
bit-exact, and another member of the group can neither read nor write them (nothing in /dev/shm,
EACCES on the other processes' descriptors and memory, no other client's details in status, no
way to name another client's pipeline). Creates two users (kept for later runs); root only."""

from __future__ import annotations

import grp
import json
import os
import pwd
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

GROUP, APP_USER, OTHER_USER = "fpgashare", "fpgashare-app", "fpgashare-other"
#: The host's response bound the daemon is started with (board ms). Derived from the 5 ms period
#: instead (5% of it), it refused the app's pipeline once the host cost measured at start passed
#: about 1.2 ms a frame, as a loaded 2-core machine measures; at 1.5 ms that takes about 7 ms.
HOST_RESERVE_MS = 1.5

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="creates users and runs the daemon as root (CI runs as root)")

def app(sock: str) -> dict:
    """The ordinary user's app: 100 frames through a two-stage chain, each compared with OpenCV."""
    import numpy as np
    from fpgashare.backends.simrun import resolve_chain
    from fpgashare.catalogue.vision_ref import chain_reference
    from fpgashare.client import DeadlineMissed, FrameDropped, connect

    stages = resolve_chain(["gauss3x3", "threshold"], {})
    fpga = connect(sock)
    pipe = fpga.pipeline("iso", ["gauss3x3", "threshold"], period_ms=5.0, frame_shape=(60, 80))
    exact = dropped = 0
    rng = np.random.default_rng(3)
    for _ in range(100):
        frame = rng.integers(0, 256, (60, 80), dtype=np.uint8)
        while True:                          # a frame the scheduler drops (a loaded host) goes again
            try:
                out = pipe.submit(frame).result(timeout=20)
                break
            except DeadlineMissed as late:   # late is still a result: its pixels count
                out = late.output
                break
            except FrameDropped:
                dropped += 1
                if dropped > 100:
                    raise
        exact += bool(np.array_equal(out, chain_reference(stages, frame)))
    app.keep = fpga                          # the ring stays mapped while the intruder tries
    return {"pid": os.getpid(), "uid": os.getuid(), "ring": pipe.ring.spec.name, "exact": exact, "dropped": dropped}


def intruder(sock: str, targets: list[int], ring: str) -> dict:
    """Another member of the group: looks for the app's frames everywhere it could reach them."""
    from fpgashare.client import DaemonError, connect

    found = [n for n in os.listdir("/dev/shm") if ring in n or n.startswith("fpgashare")]
    denied = {}
    for pid in targets:
        for what in ("fd", "map_files", "mem"):
            path = f"/proc/{pid}/{what}"
            try:
                if what == "mem":
                    open(path, "rb").close()
                else:
                    for name in os.listdir(path):          # a listing alone is no access: open each
                        open(os.path.join(path, name), "r+b").close()
                denied[path] = "opened"
            except PermissionError:
                denied[path] = "EACCES"
            except OSError as exc:
                denied[path] = type(exc).__name__
    with connect(sock) as fpga:
        status = fpga.status()
        try:
            fpga.request("submit", pipeline="iso", slot=0, shape=[60, 80], dtype="uint8")
            submit = "accepted"
        except DaemonError as exc:
            submit = f"{exc.kind}: {exc}"
    return {"uid": os.getuid(), "found": found, "denied": denied, "pipelines": list(status["pipelines"]),
            "clients": len(status["clients"]), "submit": submit}


def held_files(pids: list[int]) -> set[str]:
    """The files these processes have mapped or open (root reads any process's /proc)."""
    held: set[str] = set()
    for pid in pids:
        with open(f"/proc/{pid}/maps") as maps:
            held |= {line.split()[5] for line in maps if len(line.split()) >= 6}
        fds = f"/proc/{pid}/fd"
        for fd in os.listdir(fds):
            try:
                held.add(os.readlink(os.path.join(fds, fd)))
            except OSError:                       # closed since the listing
                pass
    return held


def _user(name: str, gid: int) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--gid", str(gid), "--shell", "/usr/sbin/nologin",
                        name], check=True)
        return pwd.getpwnam(name)


class AsUser:
    """``fn(*args)`` in a forked child that dropped to ``user`` (with the group as a supplementary
    one): modules are imported before the fork, as the interpreter may live where the user cannot
    read. ``result()`` is its JSON answer; the child lives until ``finish()``."""

    def __init__(self, user: pwd.struct_passwd, gid: int, fn, *args) -> None:
        out_r, out_w = os.pipe()
        go_r, go_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:                                     # the child
            code = 0
            try:
                os.close(out_r)
                os.close(go_w)
                os.setgroups([gid])
                os.setgid(user.pw_gid)
                os.setuid(user.pw_uid)
                answer = json.dumps(fn(*args))
            except BaseException as exc:                      # reported to the parent as its answer
                answer, code = json.dumps({"error": repr(exc)}), 1
            os.write(out_w, answer.encode() + b"\n")
            os.read(go_r, 1)
            os._exit(code)
        os.close(out_w)
        os.close(go_r)
        self._out, self._go = os.fdopen(out_r), go_w

    def result(self) -> dict:
        return json.loads(self._out.readline())

    def finish(self) -> int:
        os.write(self._go, b"x")
        os.close(self._go)
        self._out.close()
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


def test_an_ordinary_user_streams_and_another_member_cannot_touch_it(tmp_path):
    import cv2  # noqa: F401  (imported before the fork: see AsUser)

    try:
        gid = grp.getgrnam(GROUP).gr_gid
    except KeyError:
        subprocess.run(["groupadd", "--system", GROUP], check=True)
        gid = grp.getgrnam(GROUP).gr_gid
    app_user, other_user = _user(APP_USER, gid), _user(OTHER_USER, gid)
    runtime = Path(tempfile.mkdtemp(prefix="fpgashare-run-"))
    os.chown(runtime, 0, gid)
    os.chmod(runtime, 0o750)                       # RuntimeDirectoryMode=0750
    sock = runtime / "fpgashare.sock"
    # As the unit runs it: root, primary group fpgashare (the socket's group), mode 0660.
    daemon = subprocess.Popen([sys.executable, "-m", "fpgashare.cli", "daemon", "--board", "model",
                               "--socket", str(sock), "--dilation", "10", "--host-reserve-ms", str(HOST_RESERVE_MS)],
                              group=gid, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not sock.exists() and daemon.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)                       # waiting for another process to start
        stat = sock.stat()
        assert (stat.st_mode & 0o777, stat.st_gid) == (0o660, gid)
        owner = AsUser(app_user, gid, app, str(sock))
        try:
            mine = owner.result()
            assert mine.get("uid") == app_user.pw_uid and mine["exact"] == 100, mine
            other = AsUser(other_user, gid, intruder, str(sock), [mine["pid"], daemon.pid], mine["ring"])
            seen = other.result()
            assert other.finish() == 0, seen
            assert seen["uid"] == other_user.pw_uid
            # Nothing in /dev/shm to open: no file there names the app's ring or is one the daemon
            # or the app holds. Other fpgashare files may be there: test files run beside this one
            # by pytest's other worker make their own (a named ring, a dead daemon's planted one).
            theirs = held_files([mine["pid"], daemon.pid])
            assert [n for n in seen["found"] if mine["ring"] in n or f"/dev/shm/{n}" in theirs] == [], seen["found"]
            assert set(seen["denied"].values()) == {"EACCES"}, seen["denied"]
            assert seen["pipelines"] == [] and seen["clients"] == 1   # only itself in status
            assert seen["submit"].startswith("bad_request: submit: no real-time pipeline 'iso' of this client")
        finally:
            code = owner.finish()
        assert code == 0
    finally:
        daemon.terminate()
        daemon.wait(30)
