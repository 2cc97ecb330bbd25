"""A fleet of boards on Ray (the ``fleet`` extra): boards as Ray nodes, pipelines placed where a
board's daemon admits them, moved when a board dies, DNN images spread over the boards.

``connect`` needs Ray; the event and error types import without it."""

from fpgashare.fleet.events import INSTALL_HINT, BoardLost, FleetRejected, FleetUnavailable, PipelineLost, PipelineMoved


def connect(address: str = "auto", timeout: float = 30.0):
    """A client of the fleet at ``address``: the API of ``fpgashare.connect()`` (see fleet.client)."""
    from fpgashare.fleet.client import connect as _connect

    return _connect(address, timeout)


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = ["INSTALL_HINT", "BoardLost", "FleetRejected", "FleetUnavailable", "PipelineLost", "PipelineMoved",
           "connect", "ray_available"]
