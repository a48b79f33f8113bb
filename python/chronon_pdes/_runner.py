"""The caller's side: each run, check and sweep is the chronon command line in a child process
(``python -m chronon_pdes``), so a crash or a runaway run never takes the caller (a notebook's
kernel) with it, Ctrl-C stops the run cleanly, and worker processes (``procs``) start the same
way on every platform.
"""

import json
import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any, Dict, List, Optional, Tuple

from . import _child
from .errors import ChrononError, ConfigError, ModelError, StoppedError

# Where a model failed, in chronon's message.
_WHERE = re.compile(r"LP (\d+) at time ([0-9.eE+-]+|inf)")

# Exit codes of the command line.
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def flags(options: Dict[str, Any]) -> List[str]:
    """Keyword options as command-line flags: ``threads=2`` is ``--threads 2``, ``safe_commit=True``
    is ``--safe-commit true``, a list is comma-separated (a sweep's values), a path (``str`` or
    ``pathlib.Path``: ``checkpoint_dir=``, ``restore=``) is the path's text."""
    out: List[str] = []
    for key, value in options.items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            out += [flag, "true" if value else "false"]
        elif isinstance(value, (list, tuple, range)):
            out += [flag, ",".join(_word(v) for v in value)]
        else:
            out += [flag, _word(value)]
    return out


def _word(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, os.PathLike):
        return os.fsdecode(os.fspath(v))
    return str(v)


def model_name(model: Any) -> str:
    """The name a Python model runs under: its class's name, lower case."""
    return type(model).__name__.lower()


def _pickle_model(model: Any, name: str, end: Optional[float]) -> Tuple[bytes, Optional[str]]:
    """The model's pickle for the child and the main script the child must run first (when the
    class is defined there)."""
    cls = type(model)
    main = sys.modules.get("__main__")
    main_file = None
    if cls.__module__ == "__main__":
        main_file = getattr(main, "__file__", None)
        if main_file is None:
            try:
                import cloudpickle  # type: ignore
            except ImportError:
                raise ChrononError(
                    f"the model class {cls.__qualname__} is defined in a notebook or an interactive "
                    "session, where a child process cannot find it: define it in a module (a .py "
                    "file), or pip install cloudpickle"
                ) from None
            return cloudpickle.dumps((model, name, end)), None
    try:
        return pickle.dumps((model, name, end)), main_file
    except Exception as e:
        raise ChrononError(
            f"the model ({cls.__qualname__}) cannot be pickled for the run's process: {e}"
        ) from None


class Child:
    """One child run of the command line, with its scratch directory."""

    def __init__(self, args: List[str], model: Any = None, end: Optional[float] = None,
                 progress: bool = False, program: Optional[str] = None):
        if program is not None:
            if model is not None:
                raise ConfigError("a model written in Python runs in this package's own program, "
                                  "not in program=")
            if not (os.path.isfile(program) and os.access(program, os.X_OK)):
                raise ConfigError(f"program={program!r} is not an executable file")
        self.dir = tempfile.TemporaryDirectory(prefix="chronon-")
        env = dict(os.environ)
        env[_child.PARENT_ENV] = str(os.getpid())
        env[_child.PATH_ENV] = json.dumps([p or os.getcwd() for p in sys.path])
        self.error_file = os.path.join(self.dir.name, "error.pickle")
        env[_child.ERROR_ENV] = self.error_file
        if progress:
            env["CHRONON_PROGRESS_LINES"] = "1"
        if model is not None:
            blob, main_file = _pickle_model(model, model_name(model), end)
            path = os.path.join(self.dir.name, "model.pickle")
            with open(path, "wb") as f:
                f.write(blob)
            env[_child.MODEL_ENV] = path
            if main_file:
                env[_child.MAIN_ENV] = os.path.abspath(main_file)
        if program is not None:
            self.args = [os.path.abspath(program)] + args
        else:
            self.args = [sys.executable, "-m", "chronon_pdes"] + args
        self.env = env
        self.stderr: List[str] = []

    def path(self, name: str) -> str:
        return os.path.join(self.dir.name, name)

    def run(self, on_line=None, capture_stdout: bool = False) -> Tuple[int, str]:
        """Runs the child to its end; Ctrl-C (KeyboardInterrupt) stops it cleanly (SIGINT, then
        its incomplete report) and is raised again only if it does not stop. Returns the exit
        code and stdout."""
        proc = subprocess.Popen(
            self.args,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        out: List[str] = []
        reader = None
        if capture_stdout:
            reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
            reader.start()
        interrupted = False
        try:
            while True:
                try:
                    for line in proc.stderr:
                        line = line.rstrip("\n")
                        if on_line is not None and on_line(line):
                            continue
                        self.stderr.append(line)
                    proc.wait()
                    break
                except KeyboardInterrupt:
                    # The first stops the run (its report covers what was committed); a
                    # second one kills it.
                    if interrupted:
                        raise
                    interrupted = True
                    proc.send_signal(signal.SIGINT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if reader is not None:
            reader.join()
        return proc.returncode, "".join(out)

    def fail(self, code: int) -> ChrononError:
        """The exception for a child that ended with `code`."""
        lines = [l for l in self.stderr if l.startswith("error: ")]
        line = lines[-1][len("error: "):] if lines else (
            self.stderr[-1] if self.stderr else f"the run ended with code {code}")
        if os.path.exists(self.error_file):
            try:
                with open(self.error_file, "rb") as f:
                    exc, handler, lp, now = pickle.load(f)
            except Exception:
                exc = handler = lp = now = None
            if exc is not None:
                err = ModelError(line, lp=lp, time=now, handler=handler, exception=exc)
                err.__cause__ = exc
                return err
        if line.startswith("model "):
            where = _WHERE.search(line)
            if where:
                return ModelError(line, lp=int(where.group(1)), time=float(where.group(2)))
            return ModelError(line)
        if code == EXIT_BAD_INPUT:
            return ConfigError(line)
        if code == EXIT_INTERRUPTED:
            return StoppedError(line)
        return ChrononError(line)

    def close(self) -> None:
        self.dir.cleanup()


class Progress:
    """Draws a run's progress (``progress NOW END EVENTS`` lines from the child): a tqdm bar
    when tqdm is installed (a widget in Jupyter), else one line on stderr."""

    def __init__(self, show: bool):
        self.show = show
        self.bar = None
        self.drawn = False

    def __call__(self, line: str) -> bool:
        if not line.startswith("progress "):
            return False
        if not self.show:
            return True
        try:
            _, now, end, events = line.split()
            now, end, events = float(now), float(end), int(events)
        except ValueError:
            return True
        if self.bar is None:
            try:
                from tqdm.auto import tqdm  # type: ignore

                self.bar = tqdm(total=end, unit="sim-s", leave=False)
            except ImportError:
                self.bar = False
        if self.bar:
            self.bar.n = min(now, end)
            self.bar.set_postfix(events=events, refresh=False)
            self.bar.refresh()
        else:
            pct = 100.0 * min(now / end, 1.0) if end > 0 else 0.0
            sys.stderr.write(f"\rchronon: t={now:.6g} of {end:.6g} ({pct:5.1f} %), {events} events")
            sys.stderr.flush()
            self.drawn = True
        return True

    def close(self) -> None:
        if self.bar:
            self.bar.close()
        if self.drawn:
            sys.stderr.write("\r" + " " * 72 + "\r")
            sys.stderr.flush()
