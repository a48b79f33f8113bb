"""``python -m chronon_pdes ARGS`` (and the ``chronon`` command): the chronon command line.

The package runs this in a child process for ``check``, ``sweep`` and runs with worker
processes; each worker process is this too. A Python
model comes from the file named by ``CHRONON_PY_MODEL`` (see ``_child.py``).
"""

import sys


def main() -> None:
    from chronon_pdes import _child, _native

    # Line by line: the caller forwards this process's stdout, which it shares with the run's
    # worker processes; a line is written whole, and none is lost when a worker ends.
    try:
        sys.stdout.reconfigure(line_buffering=True)
    except AttributeError:
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
