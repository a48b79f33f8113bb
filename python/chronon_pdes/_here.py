"""Runs in the caller's own process: ``run`` without worker processes (``procs``, ``ranks``) or
another program. The model object is the caller's (a handler's ``print`` is the caller's, its
exception comes back with its traceback, ``breakpoint()`` works under ``seq``, attributes set
during the run stay set), and nothing is started but threads.

Ctrl-C: while the run goes on, the package's SIGINT handler (installed from the main thread
only) asks the run to stop; the run ends at its next look at the stop flag and returns its
incomplete report. A second Ctrl-C raises ``KeyboardInterrupt`` in the handler that runs (for a
handler that never returns): under ``seq`` on the caller's thread, on threads in each of the
run's threads.
"""

import signal
import sys
import threading
from typing import Any, Callable, List, Optional, Tuple

from . import _child, _runner

# How often the progress is drawn, in seconds.
DRAW_EVERY = 0.25


class _Drawer:
    """A thread that, every ``DRAW_EVERY`` seconds, shows on ``sys.stderr`` what the run printed
    (a stall warning) and draws its progress with ``draw(now, end, events)`` once the run knows
    its end."""

    def __init__(self, handle, draw: Optional[Callable[[float, float, int], None]]):
        self.handle = handle
        self.draw = draw
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="chronon-progress", daemon=True)
        self.thread.start()

    def _say(self) -> None:
        for line in self.handle.messages():
            sys.stderr.write(_runner.python_words(line) + "\n")
            sys.stderr.flush()

    def _loop(self) -> None:
        while not self.done.wait(DRAW_EVERY):
            self._say()
            end = self.handle.end()
            if self.draw is not None and end is not None:
                try:
                    self.draw(self.handle.now(), end, self.handle.events())
                except Exception:
                    self.draw = None

    def close(self) -> None:
        self.done.set()
        self.thread.join()
        self._say()


def _on_sigint(handle, sequential: bool):
    pressed = [0]

    def handler(signum, frame):
        pressed[0] += 1
        handle.stop()
        if pressed[0] > 1:
            if sequential:
                raise KeyboardInterrupt
            handle.interrupt()

    return handler


def run(argv: List[str], obj: Any, name: Optional[str], end: Optional[float], sequential: bool,
        draw: Optional[Callable[[float, float, int], None]]) -> Tuple[int, Optional[str], Any]:
    """Runs the command line ``argv`` here. Returns the exit code, the error line (None when it
    succeeded) and what a handler's exception left: ``(exception, handler, lp, now)`` or
    None."""
    if _child.caught is not None:
        return 2, "another run is going on in this process (one at a time: a handler cannot start one)", None
    from . import _native

    handle = _native.RunHandle()
    installed, previous = False, None
    try:
        previous = signal.signal(signal.SIGINT, _on_sigint(handle, sequential))
        installed = True
    except ValueError:
        pass  # not the main thread: Ctrl-C is the caller's
    _child.caught = []
    drawer = _Drawer(handle, draw)
    try:
        code, error = _native.run_here(argv, handle, obj, name, end, sequential)
        saved = _child.pick(_child.caught, error)
        return code, error, saved
    finally:
        _child.caught = None
        drawer.close()
        if installed:
            # None: a handler not installed from Python, which Python cannot put back.
            signal.signal(signal.SIGINT, previous if previous is not None
                          else signal.default_int_handler)
