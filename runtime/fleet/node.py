"""Joining a real fleet: ``python -m fpgashare.fleet.node board|controller``.

``board`` runs on a board (or on a gateway, as the proxy of an armv7 board behind its TCP listener)
and execs ``ray start --block`` with the board's resources and labels, so systemd supervises the
Ray node itself (systemd/fpgashare-raynode.service binds it to the daemon's unit: a dead daemon is
a dead node). ``controller`` starts the fleet's controller on the head (once; it is detached)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

from fpgashare.errors import FpgashareError
from fpgashare.fleet.board import node_labels, node_resources


def board_command(head: str, board: str, platform: str, cameras: list[str], memory_mb: int | None = None) -> list[str]:
    """The ``ray start`` command line of a board's node."""
    ray = shutil.which("ray") or os.path.join(os.path.dirname(sys.executable), "ray")
    labels = ",".join(f"{k}={v}" for k, v in node_labels(board, platform, cameras).items() if v)
    argv = [ray, "start", "--block", f"--address={head}", "--num-cpus=0", "--include-dashboard=false",
            f"--resources={json.dumps(node_resources(board))}", f"--labels={labels}"]
    if memory_mb:
        argv.append(f"--object-store-memory={memory_mb << 20}")
    return argv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fpgashare.fleet.node")
    sub = parser.add_subparsers(dest="role", required=True)
    b = sub.add_parser("board", help="exec this board's Ray node (ray start --block)")
    b.add_argument("--head", default=os.environ.get("FPGASHARE_HEAD"), help="HOST:PORT of the Ray head")
    b.add_argument("--board", default=os.environ.get("FPGASHARE_BOARD"), help="the board's name in the fleet")
    b.add_argument("--platform", default=os.environ.get("FPGASHARE_PLATFORM", "zcu104"))
    b.add_argument("--cameras", default=os.environ.get("FPGASHARE_CAMERAS", ""), help="comma-separated")
    b.add_argument("--object-store-mb", type=int, default=int(os.environ.get("FPGASHARE_OBJECT_STORE_MB", "128")))
    c = sub.add_parser("controller", help="start the fleet's controller on the head (detached)")
    c.add_argument("--address", default=os.environ.get("FPGASHARE_HEAD", "auto"))
    args = parser.parse_args(argv)
    try:
        if args.role == "board":
            if not args.head or not args.board:
                raise FpgashareError("board: --head and --board (or FPGASHARE_HEAD, FPGASHARE_BOARD) are needed")
            cmd = board_command(args.head, args.board, args.platform,
                                [c for c in args.cameras.split(",") if c], args.object_store_mb)
            os.execv(cmd[0], cmd)
        from fpgashare.fleet.client import _ray
        from fpgashare.fleet.controller import NAMESPACE, ensure_controller

        ray = _ray()
        ray.init(address=args.address, namespace=NAMESPACE)
        controller = ensure_controller()
        boards = ray.get(controller.refresh.remote())
        sys.stdout.write(f"fpgashare fleet controller running; {boards} live boards\n")
    except (FpgashareError, OSError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
