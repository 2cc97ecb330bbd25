"""What an admission trial remembers for the registration that asked it, kept per spec object.

An admission test (board_admission.py, relayout.py, registrations.py) runs off the daemon's loop
and leaves its choice (partition, verdict, the host's delay it was checked with) for
``add_pipeline`` to take. A trial past the daemon's time limit still finishes on its worker, after
its registration was refused and the next one, maybe of the same name, was tested: so an entry
is kept by name and by the very spec object the trial was made for, and taken only for that
object. A late trial's leftovers are never another registration's choice (another spec, another
partition, another contract), and they do not overwrite the current one's. ``forget`` drops every
entry of a name, for a registration that ends without its pipeline (refused after its trial, or
over a quota): names never registered leave nothing behind.

An entry holds its spec, so the object's id cannot be reused while the entry exists.
"""

from __future__ import annotations

from typing import Any

from fpgashare.catalogue.workload import PipelineSpec

#: name -> {id(spec): (spec, what the trial left)}
Store = dict[str, dict[int, tuple[PipelineSpec, Any]]]


def remember(store: Store, spec: PipelineSpec, value: Any) -> None:
    """Keep ``value`` for ``spec`` (this object, under its name)."""
    store.setdefault(spec.name, {})[id(spec)] = (spec, value)


def recall(store: Store, spec: PipelineSpec, default: Any = None, take: bool = False) -> Any:
    """What a trial kept for ``spec`` itself, or ``default``; ``take``: removed as well."""
    entries = store.get(spec.name)
    entry = entries.get(id(spec)) if entries else None
    if entry is None or entry[0] is not spec:
        return default
    if take:
        del entries[id(spec)]
        if not entries:
            store.pop(spec.name, None)
    return entry[1]


def forget(store: Store, name: str) -> None:
    """Drop every entry of ``name``, whichever trial made it."""
    store.pop(name, None)
