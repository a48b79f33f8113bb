"""The caller's side of a child process: a run with worker processes (``procs``, ``ranks``),
another program (``program=``), ``check`` and ``sweep`` are the chronon command line in a child
process (``python -m chronon_pdes``). What the child and its workers print is forwarded to the
caller's ``sys.stdout``; Ctrl-C stops every process of the run cleanly. Errors and progress are
shared with the in-process runs (``_here.py``).
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

# Set by the package for its child: no summary on the child's stdout (forwarded to the caller's).
NO_SUMMARY_ENV = "CHRONON_PY_NO_SUMMARY"

# Where a model failed, in chronon's message.
_WHERE = _child.WHERE

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
            env[NO_SUMMARY_ENV] = "1"
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
        """Runs the child to its end; Ctrl-C (KeyboardInterrupt) stops it cleanly (SIGINT to
        the child and its worker processes, then its incomplete report) and is raised again
        only if it does not stop. What the child prints is forwarded line by line to
        ``sys.stdout``, or with ``capture_stdout`` kept and returned. Returns the exit code and
        the kept stdout."""
        proc = subprocess.Popen(
            self.args,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        out: List[str] = []
        if capture_stdout:
            reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
        else:
            reader = threading.Thread(target=_forward, args=(proc.stdout,), daemon=True)
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
                    _interrupt(proc)
        finally:
            if proc.poll() is None:
                _kill(proc)
        reader.join()
        return proc.returncode, "".join(out)

    def fail(self, code: int) -> ChrononError:
        """The exception for a child that ended with `code`."""
        lines = [l for l in self.stderr if l.startswith("error: ")]
        line = lines[-1][len("error: "):] if lines else (
            self.stderr[-1] if self.stderr else f"the run ended with code {code}")
        return error_for(code, line, _child.load_error(self.error_file, line))

    def close(self) -> None:
        self.dir.cleanup()


def _forward(stream) -> None:
    """Copies the child's stdout to the caller's ``sys.stdout``, line by line (so that it shows
    in Jupyter too, whose ``sys.stdout`` is not the process's)."""
    for line in stream:
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except Exception:
            pass


def _interrupt(proc: subprocess.Popen) -> None:
    """SIGINT to the child's whole process group (the child and its worker processes), as a
    terminal's Ctrl-C does: each stops its part of the run."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except OSError:
        proc.send_signal(signal.SIGINT)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()


class RemoteTraceback(Exception):
    """The traceback of an exception raised in another process, as text (the cause of the
    exception the package re-raises, as ``concurrent.futures`` does)."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return self.text


# Rust words in chronon's messages, in the words of a Python model.
_WORDS = [
    ("model panicked: ", ""),
    ("Model::topology", "topology()"),
    ("Model::finish", "finish()"),
    ("Model::global_events", "global_events"),
    ("Model::lookahead", "lookahead"),
    ("Model::lp_count", "lps"),
    ("Model::reverse_handler", "reverse()"),
    ("Model::init", "init()"),
    ("Model::on_event", "on_event()"),
]


# The parallel executors, for a run with worker processes and no executor.
_PARALLEL = re.compile(r"--procs needs a parallel --sync \(([^)]*)\), not seq")


def _executors(m) -> str:
    names = [n.strip() for n in m.group(1).replace(" or ", ", ").split(",") if n.strip()]
    first, rest = names[0], ", ".join(f'"{n}"' for n in names[1:])
    return (f'procs needs a parallel executor: give sync="{first}" (or {rest}); without procs '
            f'a sequential run goes on in this process')


def python_words(line: str) -> str:
    """chronon's message, in Python's words: "model panicked: LP 1 at time 2: on_event raised
    ValueError" is "LP 1 at time 2: on_event raised ValueError", ``Model::topology`` is
    ``topology()``, a flag ``--state-saving`` the keyword ``state_saving=``."""
    for rust, py in _WORDS:
        line = line.replace(rust, py)
    line = _PARALLEL.sub(_executors, line)
    line = re.sub(r"unexpected argument '--([a-z0-9-]+)' found \(see --help for the allowed flags\)",
                  lambda m: f"unknown option {m.group(1).replace('-', '_')}= (the options are "
                            f"chronon run's flags, docs/cli.md, with _ for -)", line)
    line = re.sub(r"(?<![\w-])--sync ([a-z][a-z-]*)", r'sync="\1"', line)
    line = re.sub(r"(?<![\w-])--([a-z][a-z0-9-]*)( (?=')|)",
                  lambda m: m.group(1).replace("-", "_") + "=", line)
    return line


def error_for(code: int, line: str, saved=None) -> ChrononError:
    """The exception for a run that ended with ``code`` and the error line ``line``; ``saved``
    is what a handler's exception left: ``(exception, handler, lp, now[, traceback text])``,
    the exception with its ``__traceback__`` when it was raised in this process."""
    about_model = line.startswith("model ")
    line = python_words(line)
    if saved is not None:
        exc, handler, lp, now = saved[:4]
        text = saved[4] if len(saved) > 4 else None
        if isinstance(exc, KeyboardInterrupt):
            return exc
        err = ModelError(line, lp=lp, time=now, handler=handler, exception=exc)
        if text:
            # Raised in another process: its frames come as text.
            err.remote_traceback = text
            exc.__cause__ = RemoteTraceback('\n"""\n' + text.rstrip("\n") + '\n"""')
            if hasattr(err, "add_note"):
                err.add_note("the handler's traceback, in its worker process:\n" + text.rstrip("\n"))
        err.__cause__ = exc
        return err
    if about_model:
        where = _WHERE.search(line)
        if where:
            return ModelError(line, lp=int(where.group(1)), time=float(where.group(2)))
        return ModelError(line)
    if code == EXIT_BAD_INPUT:
        return ConfigError(line)
    if code == EXIT_INTERRUPTED:
        return StoppedError(line)
    return ChrononError(line)


def _tqdm():
    """The tqdm class that draws well here: the widget in Jupyter when ipywidgets is installed,
    the text bar otherwise (``tqdm.auto`` without ipywidgets warns and draws a bar unformatted);
    None without tqdm."""
    try:
        if "ipykernel" in sys.modules:
            try:
                import ipywidgets  # type: ignore  # noqa: F401
                from tqdm.notebook import tqdm  # type: ignore

                return tqdm
            except ImportError:
                pass
        from tqdm.std import tqdm  # type: ignore

        return tqdm
    except ImportError:
        return None


class Progress:
    """Draws a run's progress: a tqdm bar when tqdm is installed (a widget in Jupyter), else
    one line on stderr. Fed ``progress NOW END EVENTS`` lines by a child (``__call__``) or the
    figures of an in-process run (``draw``)."""

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
            self.draw(float(now), float(end), int(events))
        except ValueError:
            pass
        return True

    def draw(self, now: float, end: float, events: int) -> None:
        if not self.show:
            return
        if self.bar is None:
            cls = _tqdm()
            self.bar = cls(total=end, unit="sim-s", leave=False) if cls is not None else False
        if self.bar:
            self.bar.n = min(now, end)
            self.bar.set_postfix(events=events, refresh=False)
            self.bar.refresh()
        else:
            pct = 100.0 * min(now / end, 1.0) if end > 0 else 0.0
            sys.stderr.write(f"\rchronon: t={now:.6g} of {end:.6g} ({pct:5.1f} %), {events} events")
            sys.stderr.flush()
            self.drawn = True

    def close(self) -> None:
        if self.bar:
            self.bar.close()
        if self.drawn:
            sys.stderr.write("\r" + " " * 72 + "\r")
            sys.stderr.flush()
