"""Files shipped inside the package, found by name: platform manifests and bench suites.

A bare name (``zcu104``, ``nh_720p60_zcu104``) is looked up in the package data; anything that
exists as a path is used as it is, so a user's own manifest or suite works the same way.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: kind -> (package holding the files, what the CLI calls them)
_KINDS = {"platform": "fpgashare.platforms", "suite": "fpgashare.suites"}


def data_dir(kind: str) -> Path:
    """The folder of shipped ``kind`` files (``platform`` or ``suite``)."""
    return Path(str(resources.files(_KINDS[kind])))


def names(kind: str) -> list[str]:
    """Every shipped ``kind`` by name, sorted."""
    return sorted(p.stem for p in data_dir(kind).glob("*.toml"))


def resolve(kind: str, name_or_path: str | Path) -> Path:
    """A path that exists; else, for a bare name (no folder; ``.toml`` optional), the shipped file
    of that name; else the path as given (the loader then reports it missing, naming it)."""
    path = Path(name_or_path)
    if path.exists() or path.parent != Path("."):
        return path
    stem = path.name[:-5] if path.name.endswith(".toml") else path.name
    shipped = data_dir(kind) / f"{stem}.toml"
    return shipped if shipped.is_file() else path
