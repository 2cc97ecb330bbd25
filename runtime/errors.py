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


class WorkloadError(FpgashareError):
    """A workload file is malformed: the message names the file, the pipeline and the key."""
