"""Fresh seeds for the tests' random draws, each one logged so a failing draw can be replayed.

Every run draws new seeds (the tests sample the space rather than fix a point in it); setting
``FPGASHARE_TEST_SEED`` replays one: every seed the run draws is then that one. The ``fresh_seed``
fixture (tests/conftest.py) adds the seed to a failing test's report; a test also puts it in its
assertion messages, so the seed shows wherever the failure is read."""

from __future__ import annotations

import logging
import os
import secrets

log = logging.getLogger(__name__)

ENV = "FPGASHARE_TEST_SEED"


def draw_seed(what: str = "") -> int:
    """A fresh 32-bit seed, or ``FPGASHARE_TEST_SEED``'s to replay a run; logged either way."""
    given = os.environ.get(ENV, "").strip()
    seed = int(given, 0) if given else secrets.randbits(32)
    # Warning level: pytest shows a failing test's captured log from the root logger's level up.
    log.warning("seed %d%s (replay with %s=%d)", seed, f" for {what}" if what else "", ENV, seed)
    return seed
