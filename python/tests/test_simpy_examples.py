"""SimPy's classic examples ported to the process layer (examples/python/simpy/): each agrees
with its SimPy 4 version within confidence intervals over replications, and each commits one
history under every executor. SimPy must be installed: these tests fail without it."""

import os
import sys

import pytest
import simpy  # noqa: F401  (required: a missing SimPy is a failure, never a skip)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python", "simpy"))

import bank  # noqa: E402
import bank_simpy  # noqa: E402
import carwash  # noqa: E402
import carwash_simpy  # noqa: E402
import gas_station  # noqa: E402
import gas_station_simpy  # noqa: E402
import machineshop  # noqa: E402
import machineshop_simpy  # noqa: E402
from validate import against_simpy, every_executor  # noqa: E402

EXAMPLES = {
    "bank": (bank.run, bank_simpy.run, 5000.0, lambda end: bank.Bank(end=end)),
    "carwash": (carwash.run, carwash_simpy.run, 3000.0, lambda end: carwash.Carwash(end=end)),
    "machineshop": (machineshop.run, machineshop_simpy.run, 2000.0, lambda end: machineshop.MachineShop(end=end)),
    "gas_station": (gas_station.run, gas_station_simpy.run, 50000.0, lambda end: gas_station.GasStation(end=end)),
}


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_agrees_with_simpy(name):
    ours, theirs, end, _ = EXAMPLES[name]
    rows = against_simpy(ours, theirs, reps=8, quiet=True, end=end)
    assert all(ok for *_, ok in rows) and len(rows) >= 2


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_has_one_history_under_every_executor(name):
    _, _, end, make = EXAMPLES[name]
    reports = every_executor(make(end / 4), quiet=True)
    assert len(reports) == 7 and reports[0].committed > 100


def test_machine_shop_availability_matches_theory_without_delay():
    # With calls that take no time the shop is the machine-repairman queue M/M/3//20.
    runs = [machineshop.run(seed, end=4000.0, call=0.0) for seed in range(1, 7)]
    mean = sum(r["availability"] for r in runs) / len(runs)
    assert abs(mean - machineshop.availability_theory(20, 3, 10.0, 1.0)) < 0.004
