"""chronon's Python models against SimPy, and the cost of a Python handler.

    python benches/python_tandem.py [--end T] [--reps N]

Needs chronon-pdes built with --release and SimPy 4 in the same environment
(benches/python.sh makes both). Prints a markdown table; every figure is the best of N.
"""

import argparse
import os
import platform
import random
import sys
import time

import simpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python"))
import chronon_pdes as chronon  # noqa: E402
from tandem import Tandem  # noqa: E402


def simpy_tandem(stations, rate, service, transit, end, seed=1):
    """The same M/M/1 tandem in SimPy 4: a process per customer, a Resource per station."""
    env = simpy.Environment()
    rng = random.Random(seed)
    servers = [simpy.Resource(env, capacity=1) for _ in range(stations)]
    totals = {"served": 0, "time_in_station": 0.0}

    def customer():
        for i, server in enumerate(servers):
            came = env.now
            with server.request() as req:
                yield req
                yield env.timeout(rng.expovariate(service))
            totals["served"] += 1
            totals["time_in_station"] += env.now - came
            if i + 1 < stations:
                yield env.timeout(transit)

    def source():
        while True:
            yield env.timeout(rng.expovariate(rate))
            env.process(customer())

    env.process(source())
    t0 = time.perf_counter()
    env.run(until=end)
    return time.perf_counter() - t0, totals


class Tick:
    """The cheapest Python model: each LP's handler sends itself the next event."""

    lps = 1

    def init(self, ctx):
        ctx.send(0, 1.0)
        return 0

    def on_event(self, n, event, ctx):
        ctx.send(0, 1.0)


def best(n, f):
    return min((f() for _ in range(n)), key=lambda x: x[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--end", type=float, default=20000.0)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    st, rate, service, transit = 4, 0.5, 1.0, 1.0
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"SimPy {simpy.__version__}, chronon-pdes {chronon.__version__}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"tandem: {st} stations, rate {rate}, service {service}, transit {transit}, end {a.end}; best of {a.reps}\n")

    sp_wall, sp = best(a.reps, lambda: simpy_tandem(st, rate, service, transit, a.end))
    model = Tandem(stations=st, rate=rate, service=service, transit=transit, end=a.end)

    def seq():
        t0 = time.perf_counter()
        r = chronon.run(model, progress=False)
        return r.wall_s, r, time.perf_counter() - t0

    ch_wall, ch, ch_total = best(a.reps, seq)
    served = ch.model_stats["served"]
    print("| engine | station services | wall s (simulation) | services/s | events/s | mean time in station |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| SimPy 4 | {sp['served']} | {sp_wall:.3f} | {sp['served'] / sp_wall:,.0f} | - | "
          f"{sp['time_in_station'] / sp['served']:.3f} |")
    print(f"| chronon seq (Python model) | {served:.0f} | {ch_wall:.3f} | {served / ch_wall:,.0f} | "
          f"{ch.events_per_s:,.0f} | {ch.model_stats['time_in_station'] / served:.3f} |")
    print(f"\nchronon / SimPy, services per second: {(served / ch_wall) / (sp['served'] / sp_wall):.2f}x "
          f"(the whole run() call, start-up included: {(served / ch_total) / (sp['served'] / sp_wall):.2f}x, "
          f"{ch_total:.3f} s in all); theory 1/(service-rate) = {1 / (service - rate):.3f}\n")

    tick = best(a.reps, lambda: (lambda r: (r.wall_s, r))(chronon.run(Tick(), end=200000.0, progress=False)))[1]
    print(f"a Python handler (Tick: one send per event), seq: {tick.events_per_s:,.0f} events/s, "
          f"{1e6 / tick.events_per_s:.2f} us per event, the engine's own work included")
    tick_w = best(a.reps, lambda: (lambda r: (r.wall_s, r))(
        chronon.run(Tick(), end=200000.0, sync="window", threads=1, progress=False)))[1]
    print(f"the same under window with 1 thread (the GIL taken per call): {tick_w.events_per_s:,.0f} "
          f"events/s, {1e6 / tick_w.events_per_s:.2f} us per event\n")

    # Enough events per window for processes to pay: 64 independent lines, a 5-unit walk
    # between stations (the lookahead, so the window), about 1 300 events per window.
    wide = Tandem(stations=4, lines=64, rate=rate, service=service, transit=5.0, end=a.end / 20)
    rows = []
    for procs in (1, 2):
        r = best(a.reps, lambda: (lambda r: (r.wall_s, r))(
            chronon.run(wide, sync="window", threads=1, procs=procs, progress=False)))[1]
        rows.append(r)
        print(f"wide tandem (64 lines x 4 stations, transit 5), window, procs={procs}: {r.committed} events, "
              f"{r.wall_s:.3f} s, {r.events_per_s:,.0f} events/s, fingerprint {r.fingerprint}")
    seq = best(a.reps, lambda: (lambda r: (r.wall_s, r))(chronon.run(wide, progress=False)))[1]
    print(f"wide tandem, seq: {seq.wall_s:.3f} s, {seq.events_per_s:,.0f} events/s, fingerprint {seq.fingerprint}")
    assert rows[0].fingerprint == rows[1].fingerprint == seq.fingerprint
    print(f"procs=2 / procs=1: {rows[0].wall_s / rows[1].wall_s:.2f}x; procs=2 / seq: {seq.wall_s / rows[1].wall_s:.2f}x")


if __name__ == "__main__":
    main()
