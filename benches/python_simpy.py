"""SimPy's classics against chronon: the machine shop as a plain chronon model (a state machine
of events), the same machine shop on chronon's process layer, and the bank on the process
layer, each against its SimPy 4 version; start-up included.

    python benches/python_simpy.py [--end-shop T] [--end-bank T] [--reps N]

Needs chronon-pdes (built with --release for figures) and SimPy 4 in the same environment
(benches/python.sh makes both). Prints a markdown table; every figure is the best of N.
"""

import argparse
import os
import platform
import sys
import time
from collections import deque

import simpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python", "simpy"))
import chronon_pdes as chronon  # noqa: E402
import bank  # noqa: E402
import bank_simpy  # noqa: E402
import machineshop  # noqa: E402
import machineshop_simpy  # noqa: E402


class PlainShop:
    """machineshop.MachineShop written as plain chronon handlers: LP 0 the depot, LPs 1.. the
    cells; events ("fail", i), ("broken", cell, i), ("done", cell, i), ("fixed", i)."""

    def __init__(self, cells=4, machines=5, repairmen=3, mttf=10.0, mttr=1.0, call=0.05, end=20000.0):
        self.machines, self.repairmen, self.mttf, self.mttr = machines, repairmen, mttf, mttr
        self.call, self.end, self.lps, self.lookahead = call, end, cells + 1, call

    def init(self, ctx):
        if ctx.me() == 0:
            return {"busy": 0, "queue": deque(), "repairs": 0}
        for i in range(self.machines):
            ctx.send(ctx.me(), ctx.rng().exponential(self.mttf), ("fail", i))
        return {"since": [0.0] * self.machines, "up": 0.0}

    def on_event(self, st, ev, ctx):
        kind, now = ev[0], ctx.now()
        if kind == "fail":
            i = ev[1]
            st["up"] += now - st["since"][i]
            st["since"][i] = None
            ctx.send(0, self.call, ("broken", ctx.me(), i))
        elif kind == "fixed":
            st["since"][ev[1]] = now
            ctx.send(ctx.me(), ctx.rng().exponential(self.mttf), ("fail", ev[1]))
        elif kind == "broken":
            if st["busy"] < self.repairmen:
                st["busy"] += 1
                ctx.send(0, ctx.rng().exponential(self.mttr), ("done",) + ev[1:])
            else:
                st["queue"].append(ev[1:])
        else:
            st["repairs"] += 1
            ctx.send(ev[1], self.call, ("fixed", ev[2]))
            if st["queue"]:
                ctx.send(0, ctx.rng().exponential(self.mttr), ("done",) + st["queue"].popleft())
            else:
                st["busy"] -= 1

    def finish(self, lp, st, stats):
        if lp == 0:
            stats.add("repairs", st["repairs"])
            return
        stats.add("up", st["up"] + sum(stats.end_time - s for s in st["since"] if s is not None))
        stats.add("machine_time", self.machines * stats.end_time)


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def best(n, f):
    return min((timed(f) for _ in range(n)), key=lambda x: x[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--end-shop", type=float, default=40000.0)
    ap.add_argument("--end-bank", type=float, default=300000.0)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"SimPy {simpy.__version__}, chronon-pdes {chronon.__version__}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; best of {a.reps}; "
          f"chronon's wall is the whole run() call (start-up included)\n")
    print("| model | engine | wall s | simulation s | events | result | vs SimPy |")
    print("|---|---|---:|---:|---:|---|---:|")

    def row(model, engine, wall, sim, events, result, ref):
        ratio = f"{ref / wall:.2f}x" if ref else "1"
        print(f"| {model} | {engine} | {wall:.3f} | {sim} | {events} | {result} | {ratio} |")

    end = a.end_shop
    sp_wall, sp = best(a.reps, lambda: machineshop_simpy.run(1, end=end))
    row(f"machine shop, end {end:g}", "SimPy 4", sp_wall, "-", "-", f"availability {sp['availability']:.4f}", None)
    for name, make in [("chronon seq, plain model", lambda: PlainShop(end=end)),
                       ("chronon seq, process layer", lambda: machineshop.MachineShop(end=end))]:
        wall, r = best(a.reps, lambda: chronon.run(make(), progress=False))
        av = r.model_stats["up"] / r.model_stats["machine_time"]
        row("", name, wall, f"{r.wall_s:.3f}", r.committed, f"availability {av:.4f}", sp_wall)

    end = a.end_bank
    sp_wall, sp = best(a.reps, lambda: bank_simpy.run(1, end=end))
    row(f"bank renege, end {end:g}", "SimPy 4", sp_wall, "-", "-", f"renege {sp['renege fraction']:.4f}", None)
    wall, r = best(a.reps, lambda: chronon.run(bank.Bank(end=end), progress=False))
    ren = r.model_stats["reneged"] / r.model_stats["customers"]
    row("", "chronon seq, process layer", wall, f"{r.wall_s:.3f}", r.committed, f"renege {ren:.4f}", sp_wall)


if __name__ == "__main__":
    main()
