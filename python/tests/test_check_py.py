"""check and sweep for Python models: slow is not failed, a hang is caught, reproductions run as
printed, a model that is not deterministic is named as such; events stay objects inside a worker
process; sweeps over several parameters."""

import time

import pytest

import chronon_pdes
import chronon_pdes as chronon

import models


def test_a_slow_but_correct_model_is_not_a_failure():
    # Every parallel run sleeps 2 ms per event: far slower than the 0.1 s floor, yet correct,
    # and within the limit measured against the sequential run.
    result = chronon.check(models.SlowOffMain(nap=0.002, end=40.0), runs=1, per_config=2,
                           seed=3, sync="window", slow_floor=0.1)
    assert result.ok, result.lines
    assert result.passed == 2


def test_a_hang_under_one_executor_is_caught_against_the_sequential_time():
    started = time.time()
    result = chronon.check(models.SlowOffMain(hang=30.0, end=40.0), runs=1, per_config=1,
                           seed=3, sync="window", slow_floor=1, slow_factor=2)
    assert not result.ok
    line = next(l for l in result.lines if "FAILED" in l)
    assert "slow/hung: killed after" in line and "the sequential run took" in line, line
    assert time.time() - started < 25, "the hung run was not killed in time"


def test_python_random_is_named_not_deterministic():
    result = chronon.check(models.PythonRandom(end=100.0), runs=2, seed=11)
    assert not result.ok
    assert result.nondeterministic
    verdicts = [l for l in result.lines if "FAILED: the model is not deterministic" in l]
    assert len(verdicts) == 1, result.lines
    assert "random module" in verdicts[0] and "ctx.rng()" in verdicts[0]
    # The verdict is the failure's first line.
    first = next(l for l in result.lines if "FAILED" in l)
    assert first == verdicts[0]
    assert not chronon.check(models.Tandem(end=50.0), runs=1, seed=11).nondeterministic


def test_a_printed_reproduction_runs_and_reproduces(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = models.SharedCounter(end=100.0)
    result = chronon.check(model, runs=3, seed=2, sync="window")
    assert not result.ok and not result.nondeterministic, result.lines
    calls = result.reproductions
    assert calls and all(c.startswith("chronon_pdes.run(model, ") for c in calls), result.lines
    assert not any("chronon run" in l for l in result.lines), result.lines
    # Each printed line runs as printed (with `model` the object given to check) ...
    reports = [eval(c, {"chronon_pdes": chronon_pdes, "model": model}) for c in calls]
    assert all(r.complete for r in reports)
    # ... and the parallel one differs from the sequential one, as check found.
    seq = [r for r, c in zip(reports, calls) if "sync='seq'" in c]
    par = [r for r, c in zip(reports, calls) if "sync='seq'" not in c]
    assert seq and par, calls
    assert any(p.fingerprint != seq[0].fingerprint for p in par)


def test_a_dataclass_model_is_printed_as_its_constructor():
    from chronon_pdes import _check

    line = "check:   and:       chronon run tandem --end 5 --seed 9 --sync window --threads 2 " \
           "--check-reverse --queue heap"
    out = _check.rewrite(line, "tandem", "Tandem(rate=0.5)")
    assert out == ("check:   and:       chronon_pdes.run(Tandem(rate=0.5), end=5.0, seed=9, "
                   "sync='window', threads=2, check_reverse=True, queue='heap')")
    assert _check.model_expr(models.Tandem()) == "model"
    # Another model's line is left alone.
    assert _check.rewrite(line, "other", "model") == line


@pytest.mark.parametrize("opts", [dict(sync="window"), dict(sync="null-message"),
                                  dict(sync="timewarp"), dict(sync="window", payload="copy")],
                         ids=["window", "null-message", "timewarp", "copy-transport"])
def test_an_event_to_a_local_lp_is_not_pickled(opts):
    # Lambdas do not pickle: the run works only if no event is pickled.
    seq = chronon.run(models.LocalLambdas())
    r = chronon.run(models.LocalLambdas(), threads=1, procs=2, **opts)
    assert r.complete
    assert r.fingerprint == seq.fingerprint
    assert r.model_stats == seq.model_stats


def test_an_event_crossing_processes_names_its_type():
    # Tandem's station 1 sends to station 2, which is in the other process.
    with pytest.raises(chronon.ModelError, match="an event of type tuple cannot be pickled"):
        chronon.run(models.Unpicklable(end=50.0), sync="timewarp", threads=1, procs=2)


def test_sweep_over_two_params_is_their_cross_product(tmp_path):
    study = chronon.sweep(models.Tandem(end=40.0), str(tmp_path / "s"),
                          params={"rate": [0.2, 0.4], "stations": [2, 3]}, progress=False)
    rows = study.runs if isinstance(study.runs, list) else study.runs.to_dict("records")
    points = {(float(r["rate"]), int(r["stations"])) for r in rows}
    assert points == {(0.2, 2), (0.2, 3), (0.4, 2), (0.4, 3)}
    # Each point ran with its own values: only 3 stations have a station 2.
    for r in rows:
        has_third = str(r["mean_sojourn_2"]) not in ("", "nan")
        assert has_third == (int(r["stations"]) == 3), r


def test_the_busy_example_has_one_history_under_procs():
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
    from busy import Busy

    model = Busy(work=50, end=10.0)
    seq = chronon.run(model, progress=False)
    par = chronon.run(model, sync="window", threads=1, procs=2, progress=False)
    assert par.fingerprint == seq.fingerprint and par.model_stats == seq.model_stats
    assert 0 < seq.model_stats["remote"] < seq.committed / 10
