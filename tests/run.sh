#!/usr/bin/env bash
# The whole test suite on a fresh machine (Python 3.10+, g++, make, perl): installs what it needs
# into two virtual environments and runs everything. The board extra pins numpy<2 (pynq), so its
# tests run in a venv of their own.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

"$PY" -m venv .venv-test
.venv-test/bin/python -m pip install -q --upgrade pip
.venv-test/bin/python -m pip install -q -e ".[test]"
.venv-test/bin/python -m ruff check runtime hdl_sim tests benchmarks apps
.venv-test/bin/python -m pytest -n 2 -q tests --ignore=tests/board

"$PY" -m venv .venv-board
.venv-board/bin/python -m pip install -q --upgrade pip
.venv-board/bin/python -m pip install -q -e ".[board]" pytest
.venv-board/bin/python -m pytest -q tests/board
