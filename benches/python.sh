#!/usr/bin/env bash
# The Python benchmark: a fresh virtual environment with SimPy 4 and chronon-pdes built with
# --release, then benches/python_tandem.py (ARGS go to it) and examples/python/busy.py (work per
# event: procs=2 against seq). Usage: benches/python.sh [VENV] [-- ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-target/bench-venv}"
python3 -m venv "$venv"
"$venv/bin/pip" install -q maturin simpy
(. "$venv/bin/activate" && maturin develop --release -q)
"$venv/bin/python" benches/python_tandem.py "${@:2}"
"$venv/bin/python" examples/python/busy.py
