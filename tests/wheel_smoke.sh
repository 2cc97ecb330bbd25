#!/usr/bin/env bash
# The wheel as a user gets it: built from the checkout, installed into a fresh venv in a temporary
# folder, and used from there (cwd outside the checkout, so nothing is imported from it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m pip wheel -q --no-deps -w "$work/dist" .
wheel=$(ls "$work"/dist/fpgashare-*.whl)
"$PY" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip
"$work/venv/bin/python" -m pip install -q "$wheel[demo]"
cd "$work"
venv/bin/python - <<'PY'
import fpgashare, fpgashare.sched.policies.edf, fpgashare.backends.model, fpgashare.hdl_sim.board  # noqa: F401
from fpgashare import connect  # noqa: F401
from fpgashare.catalogue.resources import names
assert "zcu104" in names("platform") and "nh_720p60_zcu104" in names("suite"), "package data missing"
assert "site-packages" in fpgashare.__file__, fpgashare.__file__
print("wheel: import fpgashare from", fpgashare.__file__)
PY
venv/bin/fpgashare bench nh_720p60_zcu104 --scheduler edf --json > bench.json
venv/bin/python -c "import json; r = json.load(open('bench.json')); print('wheel: bench by name ok,', list(r)[:3])"
venv/bin/fpgashare demo --backend model --frames 8 --out demo > demo.txt
tail -n 3 demo.txt
echo "wheel smoke: import, bench by name and demo ran from the installed wheel"
