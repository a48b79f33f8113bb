"""Checks shared by the examples: every executor gives one fingerprint, and the chronon version
agrees with the SimPy version within confidence intervals over replications."""

import math
import statistics

import chronon_pdes as chronon

EXECUTORS = [dict(sync="seq"), dict(sync="window", threads=2), dict(sync="null-message", threads=2),
             dict(sync="lockstep", threads=2), dict(sync="timewarp", threads=2)]


def every_executor(model, procs=True, quiet=False):
    """Runs `model` under every executor (and with procs=2 when it has 2 LPs or more); returns
    the reports, after checking they committed one history."""
    runs = list(EXECUTORS)
    if procs and model.lps >= 2:
        runs += [dict(sync="window", threads=1, procs=2), dict(sync="timewarp", threads=1, procs=2)]
    reports = []
    for kw in runs:
        r = chronon.run(model, progress=False, **kw)
        reports.append(r)
        if not quiet:
            print(f"{str(kw):50} {r.committed:>8} events  fingerprint {r.fingerprint}  "
                  f"rolled back {r.rolled_back}")
    prints = {r.fingerprint for r in reports}
    assert len(prints) == 1, f"executors disagree: {prints}"
    return reports


def interval(xs):
    """Mean and the half-width of its 95 % confidence interval (normal)."""
    m = statistics.fmean(xs)
    return m, 1.96 * statistics.stdev(xs) / math.sqrt(len(xs))


def against_simpy(ours, theirs, reps=10, quiet=False, **kw):
    """Runs `reps` replications of both (`f(seed, **kw)` -> dict of figures) and checks each
    figure's means differ by less than 3 standard errors of the difference. Returns the rows."""
    a = [ours(seed + 1, **kw) for seed in range(reps)]
    b = [theirs(seed + 1001, **kw) for seed in range(reps)]
    rows, bad = [], []
    for k in a[0]:
        (ma, ha), (mb, hb) = interval([x[k] for x in a]), interval([x[k] for x in b])
        se = math.hypot(ha, hb) / 1.96
        ok = abs(ma - mb) <= 3 * se
        rows.append((k, ma, ha, mb, hb, ok))
        if not quiet:
            print(f"{k:32} chronon {ma:10.4f} ± {ha:.4f}   SimPy {mb:10.4f} ± {hb:.4f}   {'ok' if ok else 'DIFFERS'}")
        if not ok:
            bad.append(k)
    assert not bad, f"chronon and SimPy differ in {bad}"
    return rows
