#!/usr/bin/env bash
# The Python benchmarks: a fresh virtual environment with SimPy 4 and chronon-pdes built with
# --release, then benches/python_tandem.py (the tandem, handler cost, procs; ARGS go to it),
# benches/python_simpy.py (SimPy's machine shop and bank against chronon, plain and on the
# process layer) and examples/python/busy.py (work per event: procs=2 against seq).
# Usage: benches/python.sh [VENV] [-- ARGS for python_tandem.py...]
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-target/bench-venv}"
python3 -m venv "$venv"
"$venv/bin/pip" install -q maturin simpy
(. "$venv/bin/activate" && maturin develop --release -q)
"$venv/bin/python" benches/python_tandem.py "${@:2}"
echo
"$venv/bin/python" benches/python_simpy.py
echo
"$venv/bin/python" examples/python/busy.py
