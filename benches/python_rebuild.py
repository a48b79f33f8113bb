"""What a rollback costs on chronon's process layer: the time to rebuild one LP from its log
(setup and every logged event run again), against the number of events logged.

    python benches/python_rebuild.py

An LP of examples/python/simpy/machineshop.py (a cell of 5 machines with its depot) runs under
a minimal sequential driver in this process; then its live environment is dropped and rebuilt,
as the next event after a Time Warp rollback does.
"""

import heapq
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python", "simpy"))
from machineshop import MachineShop  # noqa: E402


class Rng:
    """A stand-in for ctx.rng() (Python's generator; this measures the process layer only)."""

    def __init__(self, seed):
        import random
        self.r = random.Random(seed)

    def exponential(self, mean):
        return self.r.expovariate(1 / mean)

    def uniform(self, a, b):
        return self.r.uniform(a, b)


class Driver:
    def __init__(self, model):
        self.model, self.now, self.q, self.seq = model, 0.0, [], 0
        self.rngs = [Rng(lp) for lp in range(model.lps)]
        self.states = [model.init(Ctx(self, lp)) for lp in range(model.lps)]

    def run(self, end):
        while self.q and self.q[0][0] <= end:
            self.now, _, dst, ev = heapq.heappop(self.q)
            self.model.on_event(self.states[dst], ev, Ctx(self, dst))


class Ctx:
    def __init__(self, d, me):
        self.d, self._me = d, me

    def now(self):
        return self.d.now

    def me(self):
        return self._me

    def send(self, dst, delay, event=None):
        self.d.seq += 1
        heapq.heappush(self.d.q, (self.d.now + delay, self.d.seq, dst, event))

    def count(self, name, delta=1):
        pass

    def rng(self):
        return self.d.rngs[self._me]


def main():
    print("| events logged (cell LP) | rebuild ms | µs per logged event | forward µs per event (whole run) |")
    print("|---:|---:|---:|---:|")
    for end in [200.0, 2000.0, 20000.0]:
        model = MachineShop(cells=1, end=end)
        d = Driver(model)
        t0 = time.perf_counter()
        d.run(end)
        forward = time.perf_counter() - t0
        events = sum(len(s.log) for s in d.states)
        st = d.states[1]
        best = float("inf")
        for _ in range(3):
            st.env = None
            t0 = time.perf_counter()
            model._rebuild(st)
            best = min(best, time.perf_counter() - t0)
        print(f"| {len(st.log)} | {best * 1e3:.2f} | {best / len(st.log) * 1e6:.2f} | {forward / events * 1e6:.2f} |")


if __name__ == "__main__":
    main()
