"""A dnn_tile variant as a platform manifest declares it: ``params`` of the dnn_tile module entry.

    [[module]]
    name = "dnn_tile"
    params = { p = 4, act_entries = 4096, w_entries = 1024, pg_entries = 64, max_layers = 16, memory = "block" }

Every key is optional (the default is the zcu104 tile, ``DEFAULT_TILE``). The figures become the RTL's
parameters (``TileSpec.rtl_parameters``) and the cycle model's, partitioner's and planner's sizes, so
the tile a platform synthesizes, simulates and plans for is one and the same. ``memory`` is where the
activations and weights live: "ultra" (UltraRAM, UltraScale+ only) or "block" (block RAM).
"""

from __future__ import annotations

from dataclasses import replace

from fpgashare.catalogue.toml_table import TomlTable
from fpgashare.dnn.tile_format import DEFAULT_TILE, TileSpec
from fpgashare.errors import ManifestError

#: Families with UltraRAM (platform.family values).
URAM_FAMILIES = ("zynqmp",)
MEMORIES = ("ultra", "block")


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def tile_variant(table: TomlTable, family: str) -> TileSpec:
    """The TileSpec a module entry's ``params`` table declares (``table`` is that table); ManifestError
    names the key when a value cannot be built: P a multiple of 4 from 4 to 32, buffer depths powers of
    two (the activation address is {buffer, entry}), 1..64 layers, UltraRAM only where the family has it."""
    where = f"{table.path}: {table.where}"
    ints = {}
    for key in ("p", "act_entries", "w_entries", "pg_entries", "max_layers"):
        ints[key] = table.positive(key, int, getattr(DEFAULT_TILE, key))
    memory = table.get("memory", str, "ultra" if DEFAULT_TILE.uram else "block")
    table.done()
    if ints["p"] % 4 or not 4 <= ints["p"] <= 32:
        raise ManifestError(f"{where}.p must be a multiple of 4 from 4 to 32 (an entry is P/4 stream words), "
                            f"not {ints['p']}")
    for key in ("act_entries", "w_entries", "pg_entries", "max_layers"):
        if not _power_of_two(ints[key]):
            raise ManifestError(f"{where}.{key} must be a power of two, not {ints[key]}")
    if ints["max_layers"] > 32:
        raise ManifestError(f"{where}.max_layers must be at most 32 (the register map holds 16 + max_layers "
                            f"registers), not {ints['max_layers']}")
    if memory not in MEMORIES:
        raise ManifestError(f"{where}.memory must be one of {', '.join(MEMORIES)}, not {memory!r}")
    if memory == "ultra" and family not in URAM_FAMILIES:
        raise ManifestError(f"{where}.memory is 'ultra' but family {family!r} has no UltraRAM: use 'block'")
    return replace(DEFAULT_TILE, **ints, uram=memory == "ultra")
