"""``check`` of a model written in Python: its output in Python's words.

The command line prints a failure's reproduction as ``chronon run NAME --flag value ...``, which
names a model only the checking process had. For a Python model each such line becomes the
Python call that reproduces it, ``chronon_pdes.run(model, sync='window', threads=2, ...)``, and
the verdict for a model whose two sequential runs differ names Python's usual causes.
"""

import re
import shlex
from typing import Any, List, Optional

# A reproduction line: its label, then the command.
_RUN = re.compile(r"^(?P<head>.*(?:reproduce:|and again:|and:|then:)\s+)(?P<cmd>\S+ run .*)$")
_NOT_DETERMINISTIC = re.compile(
    r"FAILED: the model is not deterministic: two sequential runs of \S+ with the same seed differ")

VERDICT = ("FAILED: the model is not deterministic: two sequential runs with the same seed "
           "differ (e.g. it uses the random module, the clock, or iterates a set or dict of "
           "objects ordered by id(); draw from ctx.rng())")

# Constructor-like reprs (dataclasses, namedtuples): the printed call builds the model itself.
_CONSTRUCTOR = re.compile(r"^[A-Za-z_][\w.]*\(.*\)$", re.S)


def model_expr(model: Any) -> str:
    """How a printed call names the model: its repr when that rebuilds it (a dataclass), else
    ``model``, the object given to ``check``."""
    try:
        r = repr(model)
    except Exception:
        return "model"
    return r if _CONSTRUCTOR.match(r) and "\n" not in r else "model"


def _value(word: str) -> Any:
    for kind in (int, float):
        try:
            return kind(word)
        except ValueError:
            pass
    return word


def python_call(cmd: str, name: str, expr: str) -> Optional[str]:
    """``chronon run NAME --a 1 --b x`` as ``chronon_pdes.run(EXPR, a=1, b='x')``; None when
    ``cmd`` is not a run of the model ``name``."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    if words[:1] == ["mpirun"] or len(words) < 3 or words[1] != "run" or words[2] != name:
        return None
    args: List[str] = [expr]
    rest = words[3:]
    i = 0
    while i < len(rest):
        flag = rest[i]
        if not flag.startswith("--"):
            return None
        key = flag[2:].replace("-", "_")
        if i + 1 < len(rest) and not rest[i + 1].startswith("--"):
            value: Any = _value(rest[i + 1])
            i += 2
        else:
            value = True
            i += 1
        if key == "end":
            value = float(value)
        args.append(f"{key}={value!r}")
    return f"chronon_pdes.run({', '.join(args)})"


def rewrite(line: str, name: str, expr: str) -> str:
    """One line of ``check``'s output for a Python model (see the module's docs)."""
    if _NOT_DETERMINISTIC.search(line):
        return _NOT_DETERMINISTIC.sub(VERDICT, line)
    m = _RUN.match(line)
    if m:
        call = python_call(m.group("cmd"), name, expr)
        if call is not None:
            return m.group("head") + call
    return line


def nondeterministic(lines: List[str]) -> bool:
    """Whether the check found that two sequential runs with one seed differ."""
    return any("FAILED: the model is not deterministic" in l for l in lines)


def reproductions(lines: List[str]) -> List[str]:
    """The reproduction commands (Python calls for a Python model) of the printed failures."""
    out = []
    for line in lines:
        m = re.match(r"^.*(?:reproduce:|and again:|and:|then:)\s+(.*)$", line)
        if m and ("chronon_pdes.run(" in m.group(1) or " run " in m.group(1)):
            out.append(m.group(1).strip())
    return out
