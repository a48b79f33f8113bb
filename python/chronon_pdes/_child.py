"""The run's side: the Python model a child process runs, and a handler's exception kept for
the caller (in the caller's own process for an in-process run).

The caller (``_runner.py``) pickles ``(model, name, end)`` into a file and names it in the
environment, with its ``sys.path`` and, when the model's class lives in the caller's main
script, that script's path (which is then run as ``__mp_main__``, as ``multiprocessing`` does,
so the class can be found by name).
"""

import json
import os
import pickle
import re
import sys
import traceback
from typing import Any, List, Optional

MODEL_ENV = "CHRONON_PY_MODEL"
PATH_ENV = "CHRONON_PY_PATH"
MAIN_ENV = "CHRONON_PY_MAIN"
ERROR_ENV = "CHRONON_PY_ERROR"
PARENT_ENV = "CHRONON_PY_PARENT"

# True while a child process runs the caller's main script as ``__mp_main__`` (to find the
# model's class there): a run started by that script's top level is the main-guard mistake.
in_main_script = False

# The handler exceptions of the in-process run going on (None when there is none).
caught: Optional[List[Any]] = None

# Where a model failed, in chronon's message.
WHERE = re.compile(r"LP (\d+) at time ([0-9.eE+-]+|inf)")


class MainGuardError(Exception):
    """``run``/``check``/``sweep`` called while a child process imports the caller's script."""


def die_with_parent() -> None:
    """A child of the package's caller ends when the caller dies (Linux)."""
    # Only the caller's own child: its worker processes and check's runs have their own parent.
    parent = os.environ.pop(PARENT_ENV, None)
    if not parent:
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG, SIGKILL = 1, 9
        libc.prctl(PR_SET_PDEATHSIG, SIGKILL)
    except (OSError, AttributeError):
        return
    if str(os.getppid()) != parent:
        os._exit(1)


def _fixup_main(path: str) -> None:
    import runpy
    import types

    global in_main_script
    in_main_script = True
    try:
        mod = types.ModuleType("__mp_main__")
        mod.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
    finally:
        in_main_script = False
    sys.modules["__main__"] = sys.modules["__mp_main__"] = mod


def refuse_in_main_script(what: str) -> None:
    """Raises :class:`MainGuardError` when ``what`` (``run``...) is called by the caller's main
    script while a child process imports it: without ``if __name__ == "__main__":`` each child
    would start the run again, and its child again."""
    if in_main_script:
        raise MainGuardError(
            f"{what}() was called while a process of the run imported the main script, which would "
            f"start the run again in every process: put the call under "
            f"if __name__ == '__main__': in {os.path.basename(os.environ.get(MAIN_ENV, 'the script'))}")


def load_model():
    """``(model, name, end)`` from the caller, or ``(None, None, None)``."""
    path = os.environ.get(MODEL_ENV)
    if not path:
        return None, None, None
    for p in reversed(json.loads(os.environ.get(PATH_ENV, "[]"))):
        if p not in sys.path:
            sys.path.insert(0, p)
    main = os.environ.get(MAIN_ENV)
    if main:
        _fixup_main(main)
    with open(path, "rb") as f:
        return pickle.load(f)


# How many handler exceptions a run keeps (under Time Warp several events may fail on paths a
# rollback undoes; the one the run reports is picked by its LP and time).
KEEP = 64


def _key_path(path: str, lp, now) -> str:
    return f"{path}.{lp}.{float(now).hex()}"


def save_error(exc, tb, handler, lp, now) -> None:
    """Keeps an exception a handler raised for the caller to re-raise: in this process the
    exception itself with its traceback ``tb``; from a child or worker process its pickle and
    its traceback as text (best effort). The first is kept, and each one by its LP and time,
    so the caller re-raises the one of the event the run failed at."""
    if caught is not None:
        if len(caught) < KEEP:
            if tb is not None and exc.__traceback__ is None:
                exc = exc.with_traceback(tb)
            caught.append((exc, handler, lp, now))
        return
    path = os.environ.get(ERROR_ENV)
    if not path:
        return
    try:
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    except Exception:
        text = None
    try:
        data = pickle.dumps((exc, handler, lp, now, text))
    except Exception:
        data = pickle.dumps((RuntimeError(f"{type(exc).__name__}: {exc}"), handler, lp, now, text))
    for target in (path, _key_path(path, lp, now)):
        try:
            with open(target, "xb") as f:
                f.write(data)
        except OSError:
            pass


def pick(saved: List[Any], line: Optional[str]):
    """The exception (of those ``save_error`` kept here) of the event the error ``line`` names
    (``LP n at time t``), else the first."""
    where = WHERE.search(line or "")
    if where:
        lp, now = int(where.group(1)), float(where.group(2))
        for s in saved:
            if s[2] == lp and float(s[3]) == now:
                return s
    return saved[0] if saved else None


def load_error(path: str, line: Optional[str]):
    """What a child or worker process kept (see ``save_error``) for the event the error
    ``line`` names, else the first it kept; None when nothing was kept or it cannot be read."""
    where = WHERE.search(line or "")
    targets = [path]
    if where:
        targets.insert(0, _key_path(path, int(where.group(1)), float(where.group(2))))
    for target in targets:
        try:
            with open(target, "rb") as f:
                return pickle.load(f)
        except Exception:
            continue
    return None
