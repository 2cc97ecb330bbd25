"""The fpgashare daemon, split by role: ``server`` (lifecycle) owns the parts ``connections`` (each
client's requests in and replies out), ``driver`` (the engine on the loop), ``sessions`` (clients,
pipelines, frames ending) and ``ops`` (one method per request), each handed its collaborators;
``checks`` (field validation), ``limits`` (quotas), ``tenants``, ``lock`` (one daemon per board),
``stats`` (counts and status), ``runner`` (a daemon on a thread)."""

from fpgashare.daemon.connections import CLIENT_GONE
from fpgashare.daemon.limits import Limits
from fpgashare.daemon.lock import DaemonRunningError
from fpgashare.daemon.ops import RING_SLOTS
from fpgashare.daemon.runner import DaemonThread, calibrate_dilation
from fpgashare.daemon.server import DEFAULT_SOCKET, Daemon

__all__ = ["CLIENT_GONE", "DEFAULT_SOCKET", "RING_SLOTS", "Daemon", "DaemonRunningError", "DaemonThread", "Limits",
           "calibrate_dilation"]
