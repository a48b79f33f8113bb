"""chronon from Python: run, check and sweep chronon's models, or your own written in Python, under
every executor (sequential, window, null-message, lock-step, Time Warp), on threads or worker
processes, with the same committed history (its fingerprint) under each.

>>> import chronon_pdes as chronon
>>> r = chronon.run("phold", lps=64, end=10, sync="window", threads=2)
>>> r.fingerprint == chronon.run("phold", lps=64, end=10).fingerprint
True

A model in Python is a class with ``lps``, ``init(ctx)`` and ``on_event(state, event, ctx)``
(see :class:`Model` and docs/python.md).
"""

import csv
import json
import os
import re
import sys
import time
from typing import Any, Dict, Iterable, Optional, Union

from . import _child, _here, _runner
from .errors import CheckFailed, ChrononError, ConfigError, ModelError, StoppedError
from .measure import Tally, TimeAverage
from .model import Model
from . import process  # noqa: E402,F401  SimPy's building blocks on LPs (docs/simpy.md)
from .report import CheckResult, Report

__all__ = [
    "run",
    "check",
    "sweep",
    "Model",
    "Tally",
    "TimeAverage",
    "Report",
    "CheckResult",
    "Study",
    "ChrononError",
    "ConfigError",
    "ModelError",
    "StoppedError",
    "CheckFailed",
]

try:
    from ._native import __version__
except ImportError:  # pragma: no cover - the package without its native module
    __version__ = "unknown"


def _show_progress(progress: Optional[bool]) -> bool:
    if progress is not None:
        return progress
    return "ipykernel" in sys.modules or sys.stderr.isatty()


def _validate(model: Any) -> None:
    """A Python model's required parts, checked before it is sent to the run's process."""
    for required in ("init", "on_event"):
        if not callable(getattr(model, required, None)):
            raise ConfigError(f"the model has no method {required}(): a Python model needs "
                              "init(ctx) and on_event(state, event, ctx)")
    if getattr(model, "lps", None) is None:
        raise ConfigError("the model has no `lps` (its number of LPs)")


def _model_args(model: Any, params: Optional[Dict[str, Any]]):
    """(name, Python model or None) and the model's flags."""
    if model is None:
        return None, None, []
    if isinstance(model, str):
        if params:
            raise ConfigError("params= is for models written in Python; give a built-in model's "
                              "parameters as keywords (lps=64)")
        return model, None, []
    _validate(model)
    name = _runner.model_name(model)
    extra = []
    for k in params or {}:
        if not hasattr(model, k):
            raise ConfigError(f"params: the model has no attribute {k!r} (params change the "
                              "model's attributes for one run)")
    for k, v in (params or {}).items():
        extra += ["--param", f"{k}={v!r}"]
    return name, model, extra


def _end_of(model: Any, end: Optional[float],
            params: Optional[Dict[str, Any]] = None) -> Optional[float]:
    """The run's end: ``end``, else an ``end`` in ``params``, else the model's ``end``
    attribute (None for a built-in model: its own default)."""
    if end is not None or isinstance(model, str) or model is None:
        return end
    given = (params or {}).get("end")
    if given is not None and not isinstance(given, (list, tuple, range)):
        return float(given)
    e = getattr(model, "end", None)
    return float(e) if e is not None else None


def _check_end(end: Optional[float], params: Optional[Dict[str, Any]]) -> None:
    """Refuses ``end=`` and ``params={"end": ...}`` that disagree."""
    given = (params or {}).get("end")
    if end is not None and given is not None and float(given) != float(end):
        raise ConfigError(f"end={end!r} and params={{'end': {given!r}}} disagree: give one")


def _settable_end(obj: Any) -> bool:
    """Whether the model has an ``end`` attribute the package may set (not a property)."""
    return hasattr(obj, "end") and not isinstance(getattr(type(obj), "end", None), property)


class _EndSet:
    """Sets the user's model object's ``end`` to the run's end for the run (when the object has
    one and no ``params`` copy is made), and puts the old value back afterwards."""

    def __init__(self, obj: Any, end: Optional[float]):
        self.obj, self.old = None, None
        if obj is not None and end is not None and _settable_end(obj):
            old = getattr(obj, "end")
            if old is None or float(old) != end:
                self.obj, self.old = obj, old
                obj.end = end

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self.obj is not None:
            self.obj.end = self.old


def _in_process(options: Dict[str, Any], program: Optional[str]) -> bool:
    """Whether a run goes on in the caller's process: anything but worker processes, MPI ranks,
    a config file (which may ask for them) and another program."""
    return program is None and not any(options.get(k) for k in ("procs", "ranks", "config"))


def run(model: Any, end: Optional[float] = None, *, params: Optional[Dict[str, Any]] = None,
        progress: Optional[bool] = None, output: Optional[str] = None,
        program: Optional[str] = None, **options: Any) -> Report:
    """Runs ``model`` once and returns its :class:`Report`.

    ``model`` is a model's name (``"phold"``, ``"pcs"``...; its parameters as keywords:
    ``lps=1024``) or a Python model object (its attributes changed for this run by ``params``).
    ``end`` is the end time (an ``end`` in ``params``, else the model's ``end`` attribute, else
    a built-in model's default, when left out); a Python model's ``end`` attribute is the run's
    end while it runs (and is set back afterwards). Every option of ``chronon run`` is a
    keyword: ``sync="timewarp"``, ``threads=2``, ``procs=2``, ``seed=7``, ``queue="heap"``...
    (``--state-saving`` is ``state_saving``; checkpoints: ``checkpoint_every=5,
    checkpoint_dir="ckpt"`` saves the run at t = 5, 10, ... in ``ckpt/t5``...,
    ``restore="ckpt/t10"`` continues from one, ``reseed=3`` with it branches the random streams
    there). ``output`` keeps the report file (or, ending in ``/``, the directory of report.json,
    progress.csv, series.csv) there too. ``program`` runs the models of another program made
    with chronon's runner (a Rust ``chronon_cli::App``, its path; ``model=None`` for a program
    of one model) instead of this package's.

    Without ``procs``, ``ranks``, ``config`` or ``program`` the run goes on in this process
    (with the model object itself when there are no ``params``); with them, in a child process.

    Ctrl-C (a notebook's stop button) stops the run and returns its incomplete report
    (``complete`` is False). A refused option raises :class:`ConfigError`; a model that fails,
    :class:`ModelError` (with ``lp``, ``time`` and the handler's own exception, with its
    traceback, as its cause). A checkpoint that cannot be written stops the run at its cut and
    raises :class:`ChrononError`, whose ``report`` is the run's report up to the cut (its
    ``checkpoint_error`` says why).
    """
    _child.refuse_in_main_script("run")
    _check_end(end, params)
    run_end = _end_of(model, end, params)
    name, obj, extra = _model_args(model, params)
    if obj is not None and params and run_end is not None and _settable_end(obj) \
            and "end" not in params:
        extra += ["--param", f"end={run_end!r}"]
    args = ["run"] + ([name] if name is not None else []) + extra + _runner.flags(options)
    if run_end is not None:
        args += ["--end", repr(float(run_end))]
    bar = _runner.Progress(_show_progress(progress))
    with _EndSet(None if params else obj, run_end):
        if _in_process(options, program):
            return _run_here(args, obj, name, run_end, output, options, bar)
        return _run_child(args, obj, run_end, output, options, program, bar)


def _sequential(options: Dict[str, Any]) -> bool:
    return options.get("sync") in (None, "seq") and not options.get("threads")


def _report_path(target: str) -> str:
    """Where a run given ``--output target`` writes its report."""
    return os.path.join(target, "report.json") if target.endswith(os.sep) else target


def _read_report(path: str) -> Report:
    """The run's report, the model's counters (whole counts) as ints; a warning when the run
    was stopped."""
    with open(path) as f:
        report = Report(json.load(f))
    stats = report.get("model_stats")
    for name in report.get("model_counters") or []:
        v = stats.get(name) if isinstance(stats, dict) else None
        if isinstance(v, float) and v.is_integer():
            stats[name] = int(v)
    if not report.get("complete", True):
        import warnings

        warnings.warn("the run was stopped: its report covers the events committed before the stop",
                      stacklevel=4)
    return report


def _run_here(args, obj, name, end, output, options, bar) -> Report:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="chronon-") as scratch:
        target = output if output is not None else os.path.join(scratch, "out") + os.sep
        argv = ["chronon"] + args + ["--output", target]
        started = time.time() - 1.0  # file times may be coarser than time.time()
        sequential = obj is not None and _sequential(options)
        try:
            code, line, saved = _here.run(argv, obj, name, end, sequential,
                                          bar.draw if bar.show else None)
        finally:
            bar.close()
        report_path = _report_path(target)
        if code in (0, _runner.EXIT_INTERRUPTED) and line is None and os.path.exists(report_path):
            return _read_report(report_path)
        err = _runner.error_for(code, line or f"the run ended with code {code}", saved)
        if isinstance(err, KeyboardInterrupt):
            raise err
        err.report = _failed_report(report_path, started)
        raise err


def _run_child(args, obj, end, output, options, program, bar) -> Report:
    child = _runner.Child([], model=obj, end=end, progress=True, program=program)
    if obj is not None and _sequential(options) and not options.get("procs"):
        # Every handler runs on the child's main thread, which then keeps the GIL.
        child.env["CHRONON_PY_SEQUENTIAL"] = "1"
    try:
        target = output if output is not None else child.path("out") + os.sep
        child.args += args + ["--output", target]
        started = time.time() - 1.0  # file times may be coarser than time.time()
        def on_line(line: str) -> bool:
            # Progress is drawn; error lines make the exception; anything else (a handler's
            # logging in a worker process, a stall warning) is the caller's stderr.
            if bar(line):
                return True
            if line.startswith("warning: "):  # chronon's own (a stall)
                line = _runner.python_words(line)
            if not line.startswith(("error: ", "interrupted: ")):
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
            return False

        try:
            code, _ = child.run(on_line=on_line)
        finally:
            bar.close()
        report_path = _report_path(target)
        if code in (0, _runner.EXIT_INTERRUPTED) and os.path.exists(report_path):
            return _read_report(report_path)
        err = child.fail(code)
        err.report = _failed_report(report_path, started)
        raise err
    finally:
        child.close()


def _failed_report(path: str, started: float) -> Optional[Report]:
    """The report a failed run wrote (a checkpoint that could not be written: the run stopped at
    its cut), None if it wrote none (an older file at ``path`` is not this run's)."""
    try:
        if os.path.getmtime(path) < started:
            return None
        with open(path) as f:
            return Report(json.load(f))
    except (OSError, ValueError):
        return None


_COUNTS = re.compile(r"check: (\d+) passed, (\d+) failed")
_SEED = re.compile(r"check: seed (\d+)")


def check(model: Any = None, *, seconds: Optional[float] = None, runs: Optional[int] = None,
          seed: Optional[int] = None, sync: Optional[Union[str, Iterable[str]]] = None,
          end: Optional[float] = None, params: Optional[Dict[str, Any]] = None,
          raise_on_failure: bool = False, verbose: bool = False, program: Optional[str] = None,
          **options: Any) -> CheckResult:
    """chronon's differential check: random configurations (executor, threads, processes,
    queue, seed...) of ``model`` run in parallel and compared with the sequential run; a run
    whose committed history (fingerprint, committed count or model statistics) differs is a
    failure, printed with the command line that reproduces it.

    ``model``: a built-in model's name, a Python model object, or None (every built-in model).
    ``seconds`` / ``runs`` bound the campaign (default 60 seconds); ``seed`` replays one.
    Returns a :class:`CheckResult` (true when every run agreed); with ``raise_on_failure``,
    raises :class:`CheckFailed` instead of returning a failed one. ``program``: check the
    models of another program made with chronon's runner (see :func:`run`).

    For a Python model a failure's reproduction is printed as a Python call,
    ``chronon_pdes.run(model, sync='window', threads=2, seed=..., end=...)`` (``model``: the
    object given to ``check``), and a model whose two sequential runs with one seed differ is
    named as not deterministic (``result.nondeterministic``).
    """
    _child.refuse_in_main_script("check")
    from . import _check

    obj = None
    args = ["check"]
    if model is not None:
        name, obj, extra = _model_args(model, params)
        if extra:
            raise ConfigError("check() draws its configurations from the model's defaults: set "
                              "the model's attributes instead of params=")
        args += ["--models", name]
    end = _end_of(model, end) if model is not None else end
    if obj is not None and end is None:
        raise ConfigError("check() of a Python model needs an end time: give end=, or an `end` "
                          "attribute on the model")
    if isinstance(sync, (list, tuple)):
        sync = ",".join(sync)
    args += _runner.flags({"seconds": seconds, "runs": runs, "seed": seed, "sync": sync, **options})
    if verbose:
        args.append("--verbose")
    child = _runner.Child(args, model=obj, end=end, program=program)
    expr = _check.model_expr(obj) if obj is not None else None

    def words(line: str) -> str:
        return _check.rewrite(line, name, expr) if obj is not None else line

    try:
        # A failure's block: its FAILED line and the indented lines after it (the diagnosis,
        # the lines that reproduce it).
        in_failure = [False]

        def echo(line: str) -> bool:
            line = words(line)
            if "FAIL" in line:
                in_failure[0] = True
            elif not line.startswith("check:   "):
                in_failure[0] = False
            if verbose or in_failure[0]:
                print(line, file=sys.stderr)
            return False

        code, out = child.run(on_line=echo, capture_stdout=True)
        lines = [words(l) for l in child.stderr] + out.splitlines()
        counts = [m for m in map(_COUNTS.search, lines) if m]
        if code not in (0, 1) or not counts:
            raise child.fail(code)
        passed, failed = int(counts[-1].group(1)), int(counts[-1].group(2))
        seeds = [m for m in map(_SEED.search, lines) if m]
        result = CheckResult(passed, failed, int(seeds[0].group(1)) if seeds else None, lines,
                             nondeterministic=_check.nondeterministic(lines),
                             reproductions=_check.reproductions(lines))
        if raise_on_failure and not result.ok:
            raise CheckFailed(f"check: {failed} of {passed + failed} runs differ from the "
                              f"sequential run (seed {result.seed})", result)
        return result
    finally:
        child.close()


def _read_csv(path: str):
    try:
        import pandas  # type: ignore

        return pandas.read_csv(path)
    except ImportError:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))


class Study:
    """A sweep's results: ``runs`` (one row per run) and ``summary`` (per point: mean, sd and the
    95 % interval of every statistic), as pandas DataFrames when pandas is installed, lists of
    dicts otherwise; ``dir`` is the study's directory (plots in ``dir/plots``)."""

    def __init__(self, directory: str):
        self.dir = directory
        self.runs = _read_csv(os.path.join(directory, "runs.csv"))
        self.summary = _read_csv(os.path.join(directory, "summary.csv"))

    def __repr__(self) -> str:
        return f"Study({self.dir!r}, runs={len(self.runs)})"


def sweep(model: Any, out: str, end: Optional[float] = None, *, replications: int = 1,
          jobs: Optional[int] = None, plot: Optional[Iterable[str]] = None,
          params: Optional[Dict[str, Any]] = None, progress: Optional[bool] = None,
          program: Optional[str] = None, **options: Any) -> Study:
    """A study of ``model``: every option given a list (``threads=[1, 2]``) or a ``range`` is
    swept, every point run ``replications`` times with independent seeds; the runs, the summary
    (mean, standard deviation, 95 % confidence interval) and plots go to the directory ``out``
    (a rerun with the same ``out`` skips finished runs). A Python model's ``params`` may give
    lists of values for several attributes: ``params={"rate": [0.5, 0.7], "servers": [1, 2]}``
    runs every combination (4 points; the tables have a column per attribute). ``program``:
    another program made with chronon's runner (see :func:`run`)."""
    _child.refuse_in_main_script("sweep")
    obj = None
    if model is None or isinstance(model, str):
        name, extra = model, []
    else:
        _validate(model)
        name, obj = _runner.model_name(model), model
        extra = []
        for k, v in (params or {}).items():
            values = v if isinstance(v, (list, tuple, range)) else [v]
            extra += ["--param", ",".join(f"{k}={x!r}" for x in values)]
    end = _end_of(model, end, params)
    args = ["sweep", "--out", out, "--replications", str(replications)]
    if jobs is not None:
        args += ["--jobs", str(jobs)]
    if plot is not None:
        args += ["--plot", ",".join(plot)]
    args += ([name] if name is not None else []) + extra + _runner.flags(options)
    if end is not None:
        args += ["--end", repr(float(end))]
    child = _runner.Child(args, model=obj, end=end, program=program)
    try:
        show = _show_progress(progress)

        def echo(line: str) -> bool:
            if show:
                print(line, file=sys.stderr)
            return False

        code, _ = child.run(on_line=echo)
        if code != 0:
            raise child.fail(code)
        return Study(out)
    finally:
        child.close()
