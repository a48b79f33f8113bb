"""``python -m chronon_pdes ARGS`` (and the ``chronon`` command): the chronon command line.

Every ``run``, ``check`` and ``sweep`` of the package runs this in a child process. A Python
model comes from the file named by ``CHRONON_PY_MODEL`` (see ``_child.py``).
"""

import sys


def main() -> None:
    from chronon_pdes import _child, _native

    _child.die_with_parent()
    model, name, end = _child.load_model()
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
