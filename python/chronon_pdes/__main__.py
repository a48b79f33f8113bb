"""``python -m chronon_pdes ARGS`` (and the ``chronon`` command): the chronon command line.

The package runs this in a child process for ``check``, ``sweep`` and runs with worker
processes; each worker process is this too. A Python
model comes from the file named by ``CHRONON_PY_MODEL`` (see ``_child.py``).
"""

import io
import sys


def main() -> None:
    from chronon_pdes import _child, _native

    # Line by line, each line in one write (even under PYTHONUNBUFFERED, which writes every
    # piece of a print on its own): the caller forwards this process's stdout, which it shares
    # with the run's worker processes, so lines must not interleave, and none is lost when a
    # worker ends.
    try:
        sys.stdout = io.TextIOWrapper(open(sys.stdout.fileno(), "wb", closefd=False),
                                      encoding=sys.stdout.encoding, errors=sys.stdout.errors,
                                      line_buffering=True)
    except (AttributeError, OSError, ValueError):
        pass
    _child.die_with_parent()
    try:
        model, name, end = _child.load_model()
    except _child.MainGuardError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    code = _native.main(
        ["chronon"] + sys.argv[1:],
        sys.executable,
        ["-m", "chronon_pdes"],
        model,
        name,
        end,
    )
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
