"""Results as Python objects: a run's :class:`Report` and a check's :class:`CheckResult`."""

from typing import Any, Dict, List, Optional


def _pandas():
    try:
        import pandas  # type: ignore

        return pandas
    except ImportError:
        return None


class Fields(dict):
    """A JSON object whose keys are also attributes (``report.config.threads``)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return _wrap(self[name])
        except KeyError:
            raise AttributeError(f"no field {name!r} (fields: {', '.join(sorted(self))})") from None

    def __dir__(self):
        return list(self.keys())


def _wrap(v: Any) -> Any:
    if isinstance(v, dict) and not isinstance(v, Fields):
        return Fields(v)
    return v


PROGRESS_COLUMNS = ["wall_s", "sim_time", "events", "rolled_back"]


class Report(Fields):
    """A run's report: every field of the JSON report (``chronon run --output``) as an attribute:
    ``fingerprint``, ``committed``, ``events_per_s``, ``wall_s``, ``complete``, ``model_stats``,
    ``config``... ``progress_series`` is a pandas DataFrame (columns wall_s, sim_time, events and,
    under Time Warp, rolled_back) and ``model_series`` a dict of DataFrames (time, value) when
    pandas is installed; plain lists otherwise.

    Checkpoints: ``checkpoints`` lists those the run saved (each with ``cut``, ``path``, ``bytes``,
    ``seconds``; empty when none), ``restored`` says where a restored run started (``path``,
    ``cut``, ``saved_by``, ``seed``, ``committed``, ``reseed`` when given; None when the run
    started anew) and ``checkpoint_error`` why a checkpoint could not be written (None when every
    one was; such a run raises :class:`ChrononError`, whose ``report`` this is)."""

    def __getattr__(self, name: str) -> Any:
        if name == "checkpoints":
            return [_wrap(c) for c in self.get("checkpoints", [])]
        if name in ("restored", "checkpoint_error"):
            return _wrap(self.get(name))
        if name == "progress_series":
            rows = self.get("progress_series", [])
            pd = _pandas()
            if pd is None:
                return rows
            width = max((len(r) for r in rows), default=3)
            return pd.DataFrame(rows, columns=PROGRESS_COLUMNS[:width])
        if name == "model_series":
            series: Dict[str, List] = self.get("model_series", {})
            pd = _pandas()
            if pd is None:
                return series
            return {k: pd.DataFrame(v, columns=["time", "value"]) for k, v in series.items()}
        return super().__getattr__(name)

    def __repr__(self) -> str:
        keys = ["model", "sync", "threads", "committed", "fingerprint", "complete", "wall_s"]
        inner = ", ".join(f"{k}={self[k]!r}" for k in keys if k in self)
        return f"Report({inner})"


class CheckResult:
    """What ``check`` found: ``passed`` and ``failed`` parallel runs, the campaign's ``seed``,
    ``ok`` (no failure), the ``lines`` it printed (each failure with the command line that
    reproduces it), ``reproductions`` (those command lines; for a Python model, Python calls
    of ``chronon_pdes.run``) and ``nondeterministic`` (two sequential runs with the same seed
    differed: the model itself is at fault, not an executor)."""

    def __init__(self, passed: int, failed: int, seed, lines: List[str], *,
                 nondeterministic: bool = False, reproductions: Optional[List[str]] = None):
        self.passed = passed
        self.failed = failed
        self.seed = seed
        self.lines = lines
        self.ok = failed == 0 and passed > 0
        self.nondeterministic = nondeterministic
        self.reproductions = list(reproductions or [])

    @property
    def failures(self) -> List[str]:
        """The lines about failed runs."""
        return [l for l in self.lines if "FAIL" in l or "differ" in l.lower()]

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"CheckResult(passed={self.passed}, failed={self.failed}, seed={self.seed})"
