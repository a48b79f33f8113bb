"""The Python package: built-in models from Python, models written in Python under every
executor, check, sweep, and the bad inputs."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import chronon_pdes as chronon
import models

HERE = os.path.dirname(os.path.abspath(__file__))

EXECUTORS = [
    dict(sync="window", threads=2),
    dict(sync="null-message", threads=2),
    dict(sync="lockstep", threads=2),
    dict(sync="timewarp", threads=2),
    dict(sync="window", threads=1, procs=2),
    dict(sync="null-message", threads=2, procs=2),
    dict(sync="timewarp", threads=1, procs=2),
]


def test_builtin_model_same_history_everywhere():
    seq = chronon.run("phold", lps=64, end=10)
    assert seq.complete and seq.committed > 0
    for opts in [dict(sync="window", threads=2), dict(sync="timewarp", threads=2, procs=2)]:
        r = chronon.run("phold", lps=64, end=10, **opts)
        assert (r.fingerprint, r.committed) == (seq.fingerprint, seq.committed), opts


def test_report_fields_are_attributes():
    r = chronon.run("phold", lps=16, end=5, sync="timewarp", threads=2, seed=7)
    assert r.model == "phold" and r.sync == "timewarp" and r.threads == 2
    assert r.config.seed == 7 and r.config["lps"] == 16
    assert r.lps == 16 and r.end_time == 5.0
    assert "events" in r.model_stats
    series = r.progress_series
    assert len(series) >= 1
    with pytest.raises(AttributeError, match="no field 'nonsense'"):
        r.nonsense


def test_output_keeps_the_report(tmp_path):
    out = str(tmp_path / "run") + os.sep
    r = chronon.run("phold", lps=8, end=3, output=out)
    assert os.path.exists(os.path.join(out, "report.json"))
    assert os.path.exists(os.path.join(out, "progress.csv"))
    assert r.complete


@pytest.mark.parametrize("opts", EXECUTORS, ids=lambda o: "-".join(f"{k}{v}" for k, v in o.items()))
def test_python_tandem_same_history_under_every_executor(opts):
    m = models.Tandem(end=150.0)
    seq = chronon.run(m)
    assert seq.committed > 200
    r = chronon.run(m, **opts)
    assert r.fingerprint == seq.fingerprint
    assert r.committed == seq.committed
    assert r.model_stats == seq.model_stats


def test_python_model_statistics_and_counters():
    r = chronon.run(models.Tandem(end=100.0))
    s = r.model_stats
    assert s["served"] > 0 and s["arrivals"] >= s["served"]
    assert 0 < s["mean_sojourn_0"] < 100


def test_python_model_params_change_the_run():
    a = chronon.run(models.Tandem(end=100.0))
    b = chronon.run(models.Tandem(end=100.0), params={"rate": 0.2})
    assert b.model_stats["arrivals"] < a.model_stats["arrivals"]
    with pytest.raises(chronon.ConfigError, match="no attribute 'nope'"):
        chronon.run(models.Tandem(end=10.0), params={"nope": 1})


def test_reverse_handler_global_events_and_series():
    seq = chronon.run(models.Ring())
    assert seq.model_stats["hops"] > 0
    assert [p[0] for p in seq["model_series"]["hops"]] == [10.0, 20.0, 30.0]
    tw = chronon.run(models.Ring(), sync="timewarp", threads=2, check_reverse=True)
    assert tw.fingerprint == seq.fingerprint
    assert tw["model_series"] == seq["model_series"]


def test_global_events_change_states_and_send_everywhere():
    seq = chronon.run(models.Shuffled())
    assert seq.model_stats["moved"] == 9 and seq.model_stats["marks"] == sum(range(4, 40, 4))
    for opts in [
        dict(sync="timewarp", threads=2),
        dict(sync="window", threads=2),
        dict(sync="lockstep", procs=2),
        dict(sync="timewarp", threads=1, procs=3),
    ]:
        r = chronon.run(models.Shuffled(), **opts)
        assert (r.fingerprint, r.model_stats) == (seq.fingerprint, seq.model_stats), opts
    # Without the changes the history differs: the test sees what the handler did.
    assert chronon.run(models.Ring()).fingerprint != seq.fingerprint


def test_a_global_event_with_a_bad_send_or_lp_is_one_line():
    class BadSend(models.Shuffled):
        def on_global(self, ctx):
            ctx.send(2, 0.0, "now")

    class BadLp(models.Shuffled):
        def on_global(self, ctx):
            ctx.set_state(99, 1)

    with pytest.raises(chronon.ModelError, match="delay 0; it must be finite and > 0"):
        chronon.run(BadSend())
    with pytest.raises(chronon.ModelError, match=r"set_state\(99\): there are 5 LPs"):
        chronon.run(BadLp())


def test_check_passes_a_deterministic_python_model():
    result = chronon.check(models.Tandem(end=100.0), runs=3, seed=11)
    assert result.ok, result.lines
    assert result.passed >= 3 and result.failed == 0


def test_check_catches_python_random():
    result = chronon.check(models.PythonRandom(end=100.0), runs=2, seed=11)
    assert not result.ok
    assert result.failed > 0
    assert any("reproduce: chronon_pdes.run(model, " in l for l in result.lines)
    with pytest.raises(chronon.CheckFailed):
        chronon.check(models.PythonRandom(end=100.0), runs=1, seed=11, raise_on_failure=True)


def test_check_of_a_builtin_model():
    assert chronon.check("phold", runs=2, seed=5).ok


@pytest.mark.parametrize("opts", [dict(), dict(sync="window", threads=2),
                                  dict(sync="timewarp", threads=1, procs=2)],
                         ids=["seq", "window", "timewarp-procs"])
def test_a_raising_handler_reraises_with_lp_and_time(opts):
    with pytest.raises(chronon.ModelError) as info:
        chronon.run(models.Raises(end=100.0), **opts)
    e = info.value
    assert e.lp == 1 and e.time >= 20.0
    assert isinstance(e.__cause__, ValueError)
    assert "broken at" in str(e.__cause__)
    assert "ValueError" in str(e)


def test_unpicklable_event_between_processes_names_its_type():
    with pytest.raises(chronon.ModelError, match="cannot be pickled"):
        chronon.run(models.Unpicklable(end=50.0), sync="window", threads=1, procs=2)
    # In one process events are not pickled: the same model runs.
    assert chronon.run(models.Unpicklable(end=50.0), sync="window", threads=2).complete


def test_send_below_lookahead_is_a_model_error():
    with pytest.raises(chronon.ModelError, match="below the model's declared lookahead") as info:
        chronon.run(models.BelowLookahead(end=50.0))
    assert info.value.lp == 0


def test_init_returning_none_is_a_type_error():
    with pytest.raises(chronon.ModelError, match="init\\(\\) returned None") as info:
        chronon.run(models.NoState(end=10.0))
    assert isinstance(info.value.__cause__, TypeError)


def test_bad_options_are_config_errors():
    with pytest.raises(chronon.ConfigError, match="lps"):
        chronon.run("phold", lps=0, end=5)
    with pytest.raises(chronon.ConfigError, match="nope"):
        chronon.run("phold", end=5, sync="nope")
    with pytest.raises(chronon.ConfigError):
        chronon.run("no-such-model", end=5)
    with pytest.raises(chronon.ConfigError, match="end"):
        chronon.run(models.Tandem(end=None))


def test_a_model_without_on_event_is_refused():
    class Empty:
        lps = 2

        def init(self, ctx):
            return 0

    with pytest.raises(chronon.ConfigError, match="on_event"):
        chronon.run(Empty(), end=5)


def test_sweep_runs_every_point(tmp_path):
    study = chronon.sweep("phold", str(tmp_path / "study"), end=3, lps=16, threads=[1, 2],
                          sync="window", replications=2, progress=False)
    assert len(study.runs) == 4
    assert os.path.exists(os.path.join(study.dir, "summary.csv"))


def test_sweep_of_python_model_params(tmp_path):
    study = chronon.sweep(models.Tandem(end=60.0), str(tmp_path / "s"),
                          params={"rate": [0.2, 0.4]}, progress=False)
    assert len(study.runs) == 2


def test_notebook_class_runs_in_process_and_needs_a_module_for_procs():
    code = textwrap.dedent("""
        import chronon_pdes as chronon
        class M:
            lps = 2
            lookahead = 1.0
            def init(self, ctx):
                ctx.send(ctx.me(), 1.0, 0)
                return 0
            def on_event(self, s, e, ctx):
                ctx.send(ctx.me(), 1.0, 0)
        print("SEQ", chronon.run(M(), end=5).committed)
        try:
            chronon.run(M(), end=5, sync="window", procs=2)
            print("PROCS ran")
        except chronon.ChrononError as e:
            print("ERR", e)
    """)
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    # In the caller's process nothing is pickled: the class needs no module.
    assert "SEQ 8" in out.stdout, out.stdout + out.stderr
    try:
        import cloudpickle  # noqa: F401
        assert "PROCS ran" in out.stdout, out.stdout + out.stderr
    except ImportError:
        assert "ERR" in out.stdout and "defined in a notebook" in out.stdout, out.stdout + out.stderr


def test_model_in_the_main_script_runs_under_procs(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""
        import chronon_pdes as chronon
        class Pair:
            lps = 2
            lookahead = 1.0
            def init(self, ctx):
                ctx.send(1 - ctx.me(), 1.0, 0)
                return 0
            def on_event(self, n, hop, ctx):
                ctx.send(1 - ctx.me(), 1.0 + ctx.rng().random(), hop + 1)
                return n + 1
        if __name__ == "__main__":
            a = chronon.run(Pair(), end=50)
            b = chronon.run(Pair(), end=50, sync="window", procs=2)
            print("SAME", a.fingerprint == b.fingerprint, a.committed)
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert "SAME True" in out.stdout, out.stdout + out.stderr


def test_ctrl_c_returns_the_incomplete_report(tmp_path):
    script = tmp_path / "long.py"
    script.write_text(textwrap.dedent("""
        import warnings, chronon_pdes as chronon
        warnings.simplefilter("ignore")
        print("START", flush=True)
        r = chronon.run("phold", lps=64, end=1e12, progress=False)
        print("DONE", r.complete, r.committed > 0, flush=True)
    """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "START"
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert "DONE False True" in out, out + err


def test_the_chronon_command():
    out = subprocess.run([sys.executable, "-m", "chronon_pdes", "run", "phold", "--lps", "8",
                          "--end", "3"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "fingerprint" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "chronon_pdes", "run", "phold", "--lps", "0"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("error:") and len(bad.stderr.strip().splitlines()) == 1


def test_series_are_lists_without_pandas(monkeypatch):
    from chronon_pdes import report

    monkeypatch.setattr(report, "_pandas", lambda: None)
    r = chronon.run(models.Ring())
    assert r.model_series == {"hops": [[10.0, 6.0], [20.0, 13.0], [30.0, 20.0]]}
    assert isinstance(r.progress_series, list) and len(r.progress_series[0]) >= 3


def test_series_are_dataframes_with_pandas():
    pd = pytest.importorskip("pandas", reason="CI installs pandas; this checks the DataFrame path")
    r = chronon.run(models.Ring())
    assert isinstance(r.progress_series, pd.DataFrame)
    assert list(r.progress_series.columns[:3]) == ["wall_s", "sim_time", "events"]
    assert r.model_series["hops"]["value"].tolist() == [6.0, 13.0, 20.0]


def test_the_tandem_example_matches_theory():
    example = os.path.join(HERE, "..", "..", "examples", "python", "tandem.py")
    out = subprocess.run([sys.executable, example, "--quick"], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "M/M/1 theory" in out.stdout and "DIFFERENT" not in out.stdout


def test_a_ctx_used_after_its_handler_raises():
    with pytest.raises(chronon.ChrononError, match="handler that has returned"):
        chronon.run(models.KeepsCtx(end=20.0))


def test_declared_topology_under_null_messages():
    seq = chronon.run(models.Links())
    for opts in [dict(sync="null-message", threads=2), dict(sync="null-message", threads=1, procs=2)]:
        assert chronon.run(models.Links(), **opts).fingerprint == seq.fingerprint, opts
    with pytest.raises(chronon.ModelError, match="LP"):
        chronon.run(models.BadLink())


REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))


def built(path):
    """A program `cargo test --workspace` builds (run it first)."""
    full = os.path.join(TARGET, "debug", path)
    assert os.path.exists(full), f"{full} is missing: run cargo test --workspace first"
    return full


def test_another_program_made_with_the_runner():
    # The chronon binary itself, and the one-model ring example (no model name).
    r = chronon.run("phold", lps=16, end=5, program=built("chronon"))
    assert r.fingerprint == chronon.run("phold", lps=16, end=5).fingerprint
    ring = built(os.path.join("examples", "ring"))
    a = chronon.run(None, program=ring, end=50)
    b = chronon.run(None, program=ring, end=50, sync="window", threads=2)
    assert a.fingerprint == b.fingerprint and a.committed > 0
    assert chronon.check(None, program=ring, runs=1, seed=3).ok
    with pytest.raises(chronon.ConfigError, match="not an executable"):
        chronon.run(None, program=os.path.join(REPO, "README.md"))
    with pytest.raises(chronon.ConfigError, match="own program"):
        chronon.run(models.Tandem(end=5.0), program=ring)
