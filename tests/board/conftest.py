"""Shared by the board-extra tests: an FPGA manager and a firmware folder in a temporary directory."""

from __future__ import annotations

import pytest


@pytest.fixture
def board_dirs(tmp_path):
    manager = tmp_path / "sys" / "fpga0"
    manager.mkdir(parents=True)
    for name, value in (("flags", "0"), ("firmware", ""), ("state", "operating")):
        (manager / name).write_text(value)
    return tmp_path / "bits", tmp_path / "firmware", manager
