"""Shared fixtures: one simulated board per platform per test session (the RTL build is cached)."""

from __future__ import annotations

import pytest
from fpgashare.catalogue.platform import load_platform

from tests.seeds import ENV, draw_seed

try:
    from hypothesis import settings
except ImportError:     # the board extra's venv runs tests/board, which has no property tests
    settings = None

# No property test has a time limit per example: hypothesis's default (200 ms, checked on the wall
# clock) fails an example the host happened to stall, which says nothing about the code (tests
# assert no timings). Loaded here, before the test modules, so every ``@settings`` inherits it.
if settings is not None:
    settings.register_profile("suite", deadline=None)
    settings.load_profile("suite")


@pytest.fixture
def fresh_seed(request) -> int:
    """A seed drawn fresh for this test (``FPGASHARE_TEST_SEED`` replays one), logged and named in
    the test's report if it fails."""
    seed = draw_seed(request.node.nodeid)
    request.node.user_properties.append(("seed", seed))
    return seed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test that drew a fresh seed says how to replay it, beside its traceback."""
    report = yield
    seeds = [value for name, value in item.user_properties if name == "seed"]
    if report.failed and seeds:
        report.sections.append(("seed", f"replay with {ENV}={seeds[0]}"))
    return report


@pytest.fixture(scope="session")
def pynq_z2():
    return load_platform("pynq-z2")


@pytest.fixture(scope="session")
def zcu104():
    return load_platform("zcu104")


@pytest.fixture(scope="session")
def _boards():
    return {}


@pytest.fixture
def board(_boards, pynq_z2):
    """A reset PYNQ-Z2 shell in RTL (built once per session)."""
    from fpgashare.hdl_sim.board import SimBoard

    if "pynq-z2" not in _boards:
        _boards["pynq-z2"] = SimBoard(pynq_z2)
    sim = _boards["pynq-z2"]
    sim.rtl.reset()
    return sim


@pytest.fixture(autouse=True)
def _cwd_unchanged():
    """A test that leaves the process in another folder breaks every later test's relative paths."""
    import os

    before = os.getcwd()
    yield
    after = os.getcwd()
    if after != before:
        os.chdir(before)
        pytest.fail(f"the test left the working directory at {after} (was {before})")
