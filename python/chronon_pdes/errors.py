"""The exceptions of chronon's Python package. Each carries the command line's one-line message."""

from typing import Any, Optional


class ChrononError(Exception):
    """A run, check or sweep failed (the message is chronon's one line). ``report`` is the
    report a failed run still wrote (a run stopped at a checkpoint that could not be written:
    the events before its cut, and ``checkpoint_error``), else None."""

    report: Any = None


class ConfigError(ChrononError, ValueError):
    """An option or parameter was refused before anything ran."""


class ModelError(ChrononError):
    """The model failed during the run: a handler raised, or broke a rule of the engine (a send
    below the lookahead, to an LP that does not exist). Every worker was stopped.

    ``lp`` and ``time`` say where, when known; ``exception`` is the handler's own exception
    (also this one's ``__cause__``)."""

    def __init__(self, message: str, lp: Optional[int] = None, time: Optional[float] = None,
                 handler: Optional[str] = None, exception: Optional[BaseException] = None):
        super().__init__(message)
        self.lp = lp
        self.time = time
        self.handler = handler
        self.exception = exception


class StoppedError(ChrononError):
    """A run was stopped (Ctrl-C) before it could write a report."""


class CheckFailed(ChrononError):
    """``check(..., raise_on_failure=True)`` found runs whose history differs."""

    def __init__(self, message: str, result: Any):
        super().__init__(message)
        self.result = result
