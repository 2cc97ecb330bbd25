"""Typed access to TOML tables with errors that name the file and the key."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from fpgashare.errors import FpgashareError, ManifestError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (PYNQ images)
    import tomli as tomllib


def read_toml(path: Path, what: str, error: type[FpgashareError]) -> TomlTable:
    """The top-level table of a TOML file; ``error`` names the file when it is missing or malformed."""
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None
    return TomlTable(path, "", raw, error)


class TomlTable:
    """Typed access to one TOML table that reports file and key on every error (raised as
    ``error``: ManifestError for platforms, WorkloadError for workloads)."""

    def __init__(self, path: Path, where: str, data: Any, error: type[FpgashareError] = ManifestError) -> None:
        self.error = error
        if not isinstance(data, dict):
            raise error(f"{path}: [{where}] must be a table")
        self.path, self.where, self.data, self.used = path, where, data, set()

    def _key(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str, typ: type | tuple[type, ...], default: Any = ...) -> Any:
        self.used.add(key)
        if key not in self.data:
            if default is ...:
                raise self.error(f"{self.path}: missing key {self._key(key)}")
            return default
        value = self.data[key]
        if isinstance(value, bool) and typ in (int, float, (int, float)):
            raise self.error(f"{self.path}: {self._key(key)} must be a number, not {value!r}")
        if not isinstance(value, typ):
            want = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
            raise self.error(f"{self.path}: {self._key(key)} must be {want}, not {value!r}")
        return value

    def positive(self, key: str, typ: type | tuple[type, ...] = int, default: Any = ...) -> Any:
        value = self.get(key, typ, default)
        if value <= 0:
            raise self.error(f"{self.path}: {self._key(key)} must be > 0, not {value!r}")
        return value

    def resources(self, key: str) -> dict[str, int]:
        table = TomlTable(self.path, self._key(key), self.get(key, dict, {}), self.error)
        out = {}
        for name in list(table.data):
            value = table.get(name, int)
            if value < 0:
                raise self.error(f"{self.path}: {self._key(key)}.{name} must be >= 0")
            out[name] = value
        return out

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise self.error(f"{self.path}: unknown key {self._key(unknown[0])}")
