"""The assertion checkers: a producer that breaks the handshake stops the simulation with the
checker's message, one that keeps it runs to the end; every simulation build has them bound and on."""

from __future__ import annotations

import random
import subprocess

import pytest
from fpgashare.hdl_sim import build
from fpgashare.hdl_sim.toolchain import setup_environment, verilator_binary

pytestmark = pytest.mark.rtl

#: Drives sva_handshake (W = 8) as a producer and a consumer would: argv[1] is the producer's
#: behaviour, argv[2] a seed for the consumer's READY. "keep" follows the rules; "drop" takes VALID
#: back before READY once; "change" changes the payload while VALID waits once.
MAIN_CPP = r"""
#include <cstdlib>
#include <cstring>
#include "Vsva_handshake.h"
#include "verilated.h"

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "keep";
    unsigned seed = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1;
    Verilated::commandArgs(argc, argv);
    Vsva_handshake t;
    bool broken = false;
    unsigned char next = 1;
    t.rst = 1; t.en = 1; t.valid = 0; t.ready = 0; t.payload = 0;
    for (int cycle = 0; cycle < 400 && !Verilated::gotFinish(); cycle++) {
        if (cycle == 3) t.rst = 0;
        t.clk = 0; t.eval();
        bool fire = t.valid && t.ready;
        t.clk = 1; t.eval();
        // after the edge: the producer and consumer decide the next cycle's signals
        seed = seed * 1103515245u + 12345u;
        t.ready = (seed >> 16) % 3 == 0;
        bool waiting = t.valid && !fire;
        if (!waiting) {
            t.valid = cycle > 4 && (seed >> 20) % 2;
            if (t.valid) t.payload = next++;
        } else if (!broken && cycle > 20 && std::strcmp(mode, "drop") == 0) {
            t.valid = 0; broken = true;
        } else if (!broken && cycle > 20 && std::strcmp(mode, "change") == 0) {
            t.payload = t.payload ^ 0x80; broken = true;
        }
    }
    t.final();
    return 0;
}
"""


@pytest.fixture(scope="module")
def handshake_sim() -> str:
    """A Verilator model of sva_handshake alone, with --assert, driven by MAIN_CPP (built once, cached)."""
    setup_environment()
    source = build.RTL_DIR / "sva_handshake.sv"
    key = build.content_key("sva-demo", [source], {"main": MAIN_CPP, "flags": build.ASSERT_FLAGS,
                                                   "verilator": str(verilator_binary())})
    folder = build.cache_root() / "sva-demo" / key
    binary = folder / "obj" / "sim"
    with build.build_lock(folder):
        if not binary.exists():
            (folder / "main.cpp").write_text(MAIN_CPP)
            build.run_step([str(verilator_binary()), "--cc", "--exe", "--build", "-j", "2", *build.ASSERT_FLAGS,
                            "-Wall", "--top-module", "sva_handshake", "-GW=8", "-Mdir", "obj", "-o", "sim",
                            str(source), "main.cpp"], folder)
    return str(binary)


def run(sim: str, mode: str, seed: int) -> subprocess.CompletedProcess:
    return subprocess.run([sim, mode, str(seed)], capture_output=True, text=True, timeout=60)


def test_a_producer_that_keeps_the_rules_runs_to_the_end(handshake_sim, fresh_seed):
    for seed in random.Random(fresh_seed).sample(range(1, 1 << 30), 3):
        result = run(handshake_sim, "keep", seed)
        assert result.returncode == 0 and "Assertion failed" not in result.stdout + result.stderr, seed


@pytest.mark.parametrize("mode, says", [("drop", "VALID dropped before READY"),
                                        ("change", "payload changed while VALID waited")])
def test_a_broken_handshake_stops_the_simulation(handshake_sim, mode, says, fresh_seed):
    seed = random.Random(fresh_seed).randrange(1, 1 << 30)
    result = run(handshake_sim, mode, seed)
    out = result.stdout + result.stderr
    assert result.returncode != 0, (fresh_seed, f"seed {seed}: {out}")
    assert "Assertion failed" in out and says in out, (fresh_seed, f"seed {seed}: {out}")


def test_every_simulation_build_has_the_checkers_on():
    """The cocotb builds and the harness compile the checkers and run with --assert; synthesis does not."""
    from fpgashare.hdl_sim.harness import VERILATOR_FLAGS

    assert "--assert" in build.ASSERT_FLAGS and "--noassert" not in VERILATOR_FLAGS
    assert set(build.ASSERT_FLAGS) <= set(VERILATOR_FLAGS)
    names = [f.name for f in build.sim_sources()]
    assert {"sva_handshake.sv", "sva_axil.sv", "sva_decoupler.sv", "sva_config_port.sv"} <= set(names)
    assert names[-1] == "sva_binds.sv"   # the checkers it binds come before it
    assert not any(f.name.startswith("sva_") for f in build.rtl_sources())
