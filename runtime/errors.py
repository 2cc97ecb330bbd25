"""Exception types shared across the runtime. Each message names the thing that was wrong."""


class FpgashareError(Exception):
    """Base class of every error fpgashare raises on bad input or a failed operation."""


class ManifestError(FpgashareError):
    """A platform manifest is malformed: the message names the file, the key and the problem."""


class BitstreamError(FpgashareError):
    """A bitstream file is malformed or does not fit the platform."""


class FrameError(FpgashareError):
    """A frame has the wrong shape, dtype or size for the pipeline."""


class ModuleError(FpgashareError):
    """An unknown module or preset, or a bad register setting."""


class LoadError(FpgashareError):
    """The configuration port rejected a partial bitstream; ``code`` is the port's error code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class NetworkError(FpgashareError):
    """A network description or its weights are malformed, or the network does not fit the tiles."""


class HardwareError(FpgashareError):
    """The board, or the harness simulating it, failed an operation (a load, a frame, a DNN batch).

    The contract of a backend (runtime/backends/base.py): ``load``, ``start_load``, ``start_frame``,
    ``run_frame``, ``run_dnn`` and ``Pending.report()`` raise FpgashareError subclasses for bad
    requests and HardwareError for faults; the engine treats *anything* a backend raises as a
    hardware fault (wrapped in HardwareError with the original's name) and gives back the slot,
    the port, the clock and the queued work it held. ``Pending.ready()`` never blocks."""


class HardwareTimeout(HardwareError):  # noqa: N818 (what happened: the watchdog's verdict)
    """A load or frame overran its expected time by more than the watchdog's margin."""


class WorkloadError(FpgashareError):
    """A workload file is malformed: the message names the file, the pipeline and the key."""
