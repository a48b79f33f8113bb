"""The child process's side: the Python model it runs, and a handler's exception kept for the
caller.

The caller (``_runner.py``) pickles ``(model, name, end)`` into a file and names it in the
environment, with its ``sys.path`` and, when the model's class lives in the caller's main
script, that script's path (which is then run as ``__mp_main__``, as ``multiprocessing`` does,
so the class can be found by name).
"""

import json
import os
import pickle
import sys

MODEL_ENV = "CHRONON_PY_MODEL"
PATH_ENV = "CHRONON_PY_PATH"
MAIN_ENV = "CHRONON_PY_MAIN"
ERROR_ENV = "CHRONON_PY_ERROR"
PARENT_ENV = "CHRONON_PY_PARENT"


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

    mod = types.ModuleType("__mp_main__")
    mod.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
    sys.modules["__main__"] = sys.modules["__mp_main__"] = mod


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


def save_error(exc, handler, lp, now) -> None:
    """Keeps the first exception a handler raised for the caller to re-raise (best effort)."""
    path = os.environ.get(ERROR_ENV)
    if not path:
        return
    try:
        data = pickle.dumps((exc, handler, lp, now))
    except Exception:
        data = pickle.dumps((RuntimeError(f"{type(exc).__name__}: {exc}"), handler, lp, now))
    try:
        with open(path, "xb") as f:
            f.write(data)
    except OSError:
        pass
