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


def save_error(exc, tb, handler, lp, now) -> None:
    """Keeps the first exception a handler raised for the caller to re-raise: in this process
    the exception itself with its traceback ``tb``; from a child or worker process its pickle
    and its traceback as text (best effort)."""
    if caught is not None:
        if not caught:
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
    try:
        with open(path, "xb") as f:
            f.write(data)
    except OSError:
        pass
