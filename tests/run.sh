#!/usr/bin/env bash
# The whole test suite on a fresh machine (Python 3.10+, g++, make, perl): installs what it needs
# into virtual environments and runs everything:
#   1. lint and the suite (editable install, two workers);
#   2. the wheel, built and installed into a fresh venv outside the checkout: import, a bench suite
#      by name and the demo on the model backend, from there (tests/wheel_smoke.sh);
#   3. the board extra (pynq pins numpy<2), installed from the checkout as a user would, non-editable.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

"$PY" -m venv .venv-test
.venv-test/bin/python -m pip install -q --upgrade pip
.venv-test/bin/python -m pip install -q -e ".[test,fleet]"
.venv-test/bin/python -m ruff check runtime hdl_sim tests benchmarks apps setup.py
time .venv-test/bin/python -m pytest -n 2 --dist loadfile -q -rs --durations=25 tests --ignore=tests/board

bash tests/wheel_smoke.sh "$PY"

"$PY" -m venv .venv-board
.venv-board/bin/python -m pip install -q --upgrade pip
.venv-board/bin/python -m pip install -q ".[board]" pytest
.venv-board/bin/python -m pytest -q -p no:cacheprovider tests/board
