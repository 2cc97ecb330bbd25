"""Our .bit writer and parser agree with the pynq package's parser on every generated file.

Runs in the venv with the ``board`` extra (the real pynq package, numpy 1.x), see tests/run.sh.
"""

from __future__ import annotations

import numpy as np
import pytest
from fpgashare.bitstream.bitfile import parse_bit
from fpgashare.bitstream.registry import build_all

pynq_device = pytest.importorskip("pynq.pl_server.embedded_device", reason="needs the board extra (pynq)")

pytestmark = pytest.mark.board


@pytest.mark.parametrize("name", ["pynq-z2", "zcu104"])
def test_pynq_parses_every_generated_file_like_we_do(tmp_path, name):
    from fpgashare.catalogue.platform import load_platform

    platform = load_platform(name)
    entries = build_all(platform, tmp_path)
    assert entries
    for entry in entries:
        data = entry.path.read_bytes()
        ours, config = parse_bit(data)
        theirs = pynq_device.parse_bit_header(data)
        assert theirs["design"] == ours.design.split(";")[0]
        assert theirs["version"] == ours.design.split(";")[-1]
        assert (theirs["part"], theirs["date"], theirs["time"]) == (ours.part, ours.date, ours.time)
        assert int(theirs["length"]) == len(config)
        assert theirs["data"] == config
        # What pynq hands to fpga_manager: the configuration words in little-endian order.
        words = np.frombuffer(config, dtype=">u4")
        assert pynq_device.bit2bin(data) == words.astype("<u4").tobytes()
