"""What a Python user meets first: runs in the caller's process (prints, tracebacks, the model's
attributes after the run, no main guard), the main-guard mistake with worker processes refused
in one line, Ctrl-C with worker processes, and the run's end as the model sees it."""

import glob
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import pytest

import chronon_pdes as chronon
import models

HERE = os.path.dirname(os.path.abspath(__file__))

PAIR = """
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
"""


def script(tmp_path, body, name="flat.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(PAIR) + textwrap.dedent(body))
    return path


def scratch_env(tmp_path):
    """An environment whose temporary directories go to tmp_path/tmp, to count them after."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    env["PYTHONPATH"] = os.pathsep.join([HERE] + sys.path)
    return env, tmp


def test_a_flat_script_runs_sequentially(tmp_path):
    path = script(tmp_path, """
        r = chronon.run(Pair(), end=50, progress=False)
        print("RESULT", r.complete, r.committed)
    """)
    env, tmp = scratch_env(tmp_path)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("RESULT True "), out.stdout + out.stderr
    assert int(out.stdout.split()[2]) > 50
    assert os.listdir(tmp) == []


CHILD_CALLS = {
    "run": 'chronon.run(Pair(), end=50, sync="window", procs=2, progress=False)',
    "check": "chronon.check(Pair(), runs=1, end=20)",
    "sweep": 'chronon.sweep(Pair(), "study", end=20, progress=False)',
}


@pytest.mark.parametrize("call", sorted(CHILD_CALLS))
def test_a_flat_script_with_procs_is_refused_in_one_line(tmp_path, call):
    path = script(tmp_path, f"""
        a = chronon.run(Pair(), end=50, progress=False)
        b = {CHILD_CALLS[call]}
        print("RESULT", b)
    """)
    env, tmp = scratch_env(tmp_path)
    started = time.monotonic()
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    took = time.monotonic() - started
    assert out.returncode != 0
    assert "RESULT" not in out.stdout
    last = out.stderr.strip().splitlines()[-1]
    assert "put the call under if __name__ == '__main__':" in last, out.stderr
    assert last.startswith("chronon_pdes.errors.ConfigError: run() was called while"), last
    # One child, refused at once: no chain of processes, nothing left behind.
    assert took < 30, took
    assert glob.glob(str(tmp / "chronon-*")) == []


def test_ctrl_c_with_worker_processes_returns_the_incomplete_report(tmp_path):
    path = script(tmp_path, """
        import time, warnings
        if __name__ == "__main__":
            warnings.simplefilter("ignore")
            print("START", flush=True)
            r = chronon.run(Pair(), end=1e9, sync="timewarp", procs=2, progress=False)
            print("DONE", r.complete, r.committed > 0, flush=True)
    """, name="long.py")
    env, tmp = scratch_env(tmp_path)
    p = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l.strip()) for l in p.stdout], daemon=True).start()
    try:
        assert lines.get(timeout=60) == "START"
        time.sleep(4)
        assert p.poll() is None, p.stderr.read()
        p.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            line = lines.get(timeout=30)
        except queue.Empty:
            line = "still running 30 s after Ctrl-C"
        took = time.monotonic() - sent
        assert line == "DONE False True", line
        assert took < 2.0, took
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert glob.glob(str(tmp / "chronon-*")) == []


def frames(err):
    """The whole printed traceback of `err`, with its causes."""
    return "".join(traceback.format_exception(type(err), err, err.__traceback__))


def raise_line():
    """The line of models.Raises that raises."""
    with open(os.path.join(HERE, "models.py")) as f:
        lines = f.read().splitlines()
    return next(i + 1 for i, l in enumerate(lines) if "broken at" in l and "raise" in l)


@pytest.mark.parametrize("opts", [dict(), dict(sync="window", threads=2)], ids=["seq", "window"])
def test_a_handlers_traceback_names_its_file_and_line_in_process(opts):
    with pytest.raises(chronon.ModelError) as info:
        chronon.run(models.Raises(end=100.0), **opts)
    cause = info.value.__cause__
    assert isinstance(cause, ValueError) and cause.__traceback__ is not None
    text = frames(info.value)
    assert f'models.py", line {raise_line()}, in on_event' in text, text
    assert "on_event raised ValueError" in str(info.value)
    assert "panicked" not in str(info.value)


def test_a_handlers_traceback_comes_back_from_a_worker_process():
    with pytest.raises(chronon.ModelError) as info:
        chronon.run(models.Raises(end=100.0), sync="timewarp", threads=1, procs=2)
    cause = info.value.__cause__
    assert isinstance(cause, ValueError)
    text = frames(info.value)
    assert f'models.py", line {raise_line()}, in on_event' in text, text
    assert f'line {raise_line()}' in info.value.remote_traceback


class Talks:
    """Prints from its handlers and counts into itself and a module-level list."""

    lps = 2
    lookahead = 1.0
    end = 10.0
    seen_by_module = []

    def __init__(self):
        self.seen = 0

    def init(self, ctx):
        ctx.send(ctx.me(), 1.0, "tick")
        return 0

    def on_event(self, n, ev, ctx):
        print(f"HELLO lp {ctx.me()} t {ctx.now()}")
        self.seen += 1
        Talks.seen_by_module.append(ctx.now())
        if ctx.now() + 1.0 < 10.0:
            ctx.send(ctx.me(), 1.0, "tick")
        return n + 1


@pytest.mark.parametrize("opts", [dict(), dict(sync="window", threads=2)], ids=["seq", "window"])
def test_prints_and_attributes_of_an_in_process_run(capsys, opts):
    m = Talks()
    Talks.seen_by_module.clear()
    r = chronon.run(m, progress=False, **opts)
    out = capsys.readouterr().out
    assert out.count("HELLO lp ") == r.committed == 18
    assert "HELLO lp 1 t 9.0" in out
    assert m.seen == 18 and len(Talks.seen_by_module) == 18


def test_prints_of_worker_processes_reach_the_caller(tmp_path):
    path = script(tmp_path, """
        import logging
        class Loud(Pair):
            def on_event(self, n, hop, ctx):
                print("HOP", ctx.me(), hop)
                if hop == 3:
                    logging.warning("LOGGED at hop 3 on LP %d", ctx.me())
                return super().on_event(n, hop, ctx)
        if __name__ == "__main__":
            r = chronon.run(Loud(), end=20, sync="window", procs=2, progress=False)
            print("COMMITTED", r.committed)
    """, name="loud.py")
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    committed = int(lines[-1].split()[1])
    hops = [l for l in lines if l.startswith("HOP ")]
    assert len(hops) == committed > 10
    assert {l.split()[1] for l in hops} == {"0", "1"}
    assert not any(l.startswith("fingerprint") for l in lines)
    assert out.stderr.count("LOGGED at hop 3 on LP") == 2, out.stderr


class Ends:
    """Records what finish sees of the run's end."""

    lps = 2
    lookahead = 1.0
    end = 10000.0

    def init(self, ctx):
        ctx.send(ctx.me(), 1.0, None)
        return 0

    def on_event(self, n, ev, ctx):
        ctx.send(ctx.me(), 1.0, None)
        return n + 1

    def finish(self, lp, n, stats):
        stats.set("end_attr", self.end)
        stats.set("end_time", stats.end_time)
        stats.max("last", float(n))


@pytest.mark.parametrize("opts", [dict(), dict(sync="window", threads=1, procs=2)],
                         ids=["seq", "procs"])
def test_finish_sees_the_end_of_the_run(opts):
    m = Ends()
    a = chronon.run(m, end=100, **opts)
    assert a.end_time == 100.0
    assert a.model_stats["end_attr"] == 100.0 and a.model_stats["end_time"] == 100.0
    assert m.end == 10000.0  # set back after the run
    b = chronon.run(m, params={"end": 100}, **opts)
    assert b.end_time == 100.0 and b.committed == a.committed
    assert b.model_stats["end_attr"] == 100.0 and b.model_stats["end_time"] == 100.0
    with pytest.raises(chronon.ConfigError, match="disagree"):
        chronon.run(m, end=50, params={"end": 100}, **opts)


class StopsItself(Ends):
    """Presses Ctrl-C at time 50 (a SIGINT to its own process)."""

    def on_event(self, n, ev, ctx):
        if ctx.now() == 50.0 and ctx.me() == 0:
            os.kill(os.getpid(), signal.SIGINT)
        return super().on_event(n, ev, ctx)


@pytest.mark.parametrize("opts", [dict(), dict(sync="window", threads=2)], ids=["seq", "window"])
def test_a_stopped_run_in_process_returns_its_report_and_finish_sees_the_stop(opts):
    with pytest.warns(UserWarning, match="stopped"):
        r = chronon.run(StopsItself(), end=1e9, progress=False, **opts)
    assert not r.complete
    assert 50.0 <= r.model_stats["end_time"] < 1e9
    assert r.model_stats["end_time"] == r.model_stats["last"]
    # The package's SIGINT handler is gone again.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_breakpoint_in_a_handler_under_seq(tmp_path):
    path = script(tmp_path, """
        class Stops(Pair):
            def on_event(self, n, hop, ctx):
                if hop == 3:
                    breakpoint()
                return super().on_event(n, hop, ctx)
        r = chronon.run(Stops(), end=20, progress=False)
        print("RESULT", r.complete)
    """, name="debug.py")
    env = dict(os.environ)
    env.pop("PYTHONBREAKPOINT", None)
    out = subprocess.run([sys.executable, str(path)], input="p ('HOP', hop, n)\nc\nc\n",
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "(Pdb)" in out.stdout and "('HOP', 3, " in out.stdout, out.stdout
    assert "RESULT True" in out.stdout


class KeepsCtxForLater:
    lps = 1
    end = 10.0

    def init(self, ctx):
        self.kept = ctx
        ctx.send(0, 1.0, None)
        return 0

    def on_event(self, n, ev, ctx):
        self.kept.now()
        return n + 1


def test_a_ctx_kept_past_its_handler_raises_under_seq():
    with pytest.raises(chronon.ModelError, match="handler that has returned") as info:
        chronon.run(KeepsCtxForLater())
    assert isinstance(info.value.__cause__, RuntimeError)
    assert info.value.time == 1.0


class ReturnsTrue:
    lps = 1
    end = 10.0

    def init(self, ctx):
        ctx.send(0, 1.0, None)
        return {"n": 0}

    def on_event(self, st, ev, ctx):
        st["n"] += 1
        ctx.send(0, 1.0, None)
        return ctx.now() >= 3.0  # a mistake: the state is a dict


@pytest.mark.parametrize("opts", [dict(), dict(sync="window", threads=2)], ids=["seq", "window"])
def test_a_wrong_return_fails_at_that_event(opts):
    with pytest.raises(chronon.ModelError, match=r"on_event returned False \(bool\) while the state is a dict") as info:
        chronon.run(ReturnsTrue(), **opts)
    assert info.value.time == 1.0 and info.value.lp == 0


def test_numbers_and_tuples_may_be_returned():
    assert chronon.run(models.Ring()).model_stats["hops"] > 0


def test_procs_without_sync_says_which_executor():
    with pytest.raises(chronon.ConfigError, match='sync="window"'):
        chronon.run(models.Tandem(end=10.0), procs=2)


def test_counters_are_ints():
    for opts in [dict(), dict(sync="window", threads=1, procs=2)]:
        r = chronon.run(models.Tandem(end=100.0), **opts)
        assert isinstance(r.model_stats["arrivals"], int) and r.model_stats["arrivals"] > 0
        assert isinstance(r.model_stats["sojourn"], float)
    r = chronon.run("phold", lps=16, end=5)
    assert r.model_counters == ["remote_sends"]
    assert isinstance(r.model_stats["remote_sends"], int) and r.model_stats["remote_sends"] > 0


def fake_tqdm(monkeypatch, widgets):
    import types

    made = {}
    for name in ("tqdm", "tqdm.std", "tqdm.notebook"):
        mod = types.ModuleType(name)
        mod.tqdm = type(f"Bar_{name.replace('.', '_')}", (), {})
        made[name] = mod.tqdm
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setitem(sys.modules, "ipywidgets", types.ModuleType("ipywidgets") if widgets else None)
    return made


def test_the_progress_bar_without_ipywidgets_is_tqdms_text_bar(monkeypatch, capsys):
    from chronon_pdes import _runner

    made = fake_tqdm(monkeypatch, widgets=False)
    monkeypatch.setitem(sys.modules, "ipykernel", sys)
    assert _runner._tqdm() is made["tqdm.std"]
    made = fake_tqdm(monkeypatch, widgets=True)
    assert _runner._tqdm() is made["tqdm.notebook"]
    monkeypatch.delitem(sys.modules, "ipykernel")
    assert _runner._tqdm() is made["tqdm.std"]
    # Without tqdm: one line on stderr, cleared at the end.
    for name in ("tqdm", "tqdm.std", "tqdm.notebook"):
        monkeypatch.setitem(sys.modules, name, None)
    assert _runner._tqdm() is None
    bar = _runner.Progress(True)
    bar.draw(5.0, 10.0, 42)
    bar.close()
    assert "chronon: t=5 of 10 ( 50.0 %), 42 events" in capsys.readouterr().err


class Slow(Ends):
    """About 0.3 s of handlers."""

    def on_event(self, n, ev, ctx):
        time.sleep(0.002)
        return super().on_event(n, ev, ctx)


@pytest.mark.parametrize("opts", [dict(), dict(sync="window", threads=2)], ids=["seq", "window"])
def test_progress_is_drawn_in_process(monkeypatch, capsys, opts):
    from chronon_pdes import _here, _runner

    monkeypatch.setattr(_here, "DRAW_EVERY", 0.02)
    monkeypatch.setattr(_runner, "_tqdm", lambda: None)
    r = chronon.run(Slow(), end=80, progress=True, **opts)
    err = capsys.readouterr().err
    assert "\rchronon: t=" in err and " of 80 (" in err, err
    assert r.complete
    quiet = chronon.run(Slow(), end=20, progress=False, **opts)
    assert quiet.complete and capsys.readouterr().err == ""


class Loops:
    """A handler that never returns."""

    lps = 1
    end = 10.0

    def init(self, ctx):
        ctx.send(0, 1.0, None)
        return 0

    def on_event(self, n, ev, ctx):
        while True:
            pass


@pytest.mark.parametrize("opts", [dict(), dict(sync="window", threads=2)], ids=["seq", "window"])
def test_a_second_ctrl_c_ends_a_handler_that_never_returns(opts):
    def press():
        for _ in range(2):
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        chronon.run(Loops(), progress=False, **opts)
    assert time.monotonic() - started < 10
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


class CtxInAThread(KeepsCtxForLater):
    def on_event(self, n, ev, ctx):
        seen = []

        def use():
            try:
                ctx.now()
            except RuntimeError as e:
                seen.append(str(e))

        t = threading.Thread(target=use)
        t.start()
        t.join()
        self.seen = seen
        return n


def test_a_ctx_used_from_another_thread_raises():
    m = CtxInAThread()
    chronon.run(m, end=1.5)
    assert m.seen == ["this context belongs to a handler running on another thread; use it only "
                      "inside its handler"]


def test_ctrl_c_after_an_in_process_run_is_pythons_again(tmp_path):
    path = script(tmp_path, """
        import time
        chronon.run(Pair(), end=20, progress=False)
        chronon.run("phold", lps=8, end=2, sync="window", threads=2, progress=False)
        print("READY", flush=True)
        try:
            time.sleep(60)
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
    """, name="after.py")
    p = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "READY"
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
        assert out.strip() == "INTERRUPTED", out + err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


class Naps(Ends):
    """One long handler: no simulated progress for about a second."""

    def on_event(self, n, ev, ctx):
        if ctx.now() == 2.0 and ctx.me() == 0:
            time.sleep(1.2)
        return super().on_event(n, ev, ctx)


@pytest.mark.parametrize("opts", [dict(), dict(sync="window", threads=2)], ids=["seq", "window"])
def test_a_stall_warning_in_process_reaches_sys_stderr(capsys, opts):
    r = chronon.run(Naps(), end=5, progress=False, stall_secs=0.3, **opts)
    assert r.complete
    err = capsys.readouterr().err
    assert "warning: simulated time has advanced only" in err, err
    assert "--" not in err and 'sync="window" rather than null messages' in err
