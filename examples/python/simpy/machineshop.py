"""Machine shop (machines that fail, a crew of repairmen), on chronon's process layer (the
SimPy version is machineshop_simpy.py).

`cells` LPs (1 to `cells`) hold `machines` machines each; LP 0 is the repair depot with
`repairmen` repairmen. A machine runs for an exponential time (mean `mttf`), breaks, and calls
the depot: the call takes `call` time units (the lookahead). A repairman takes the calls first
come, first served; a repair takes an exponential time (mean `mttr`); the machine hears that it
is fixed `call` time units later and runs again. With `call` = 0 this is the machine-repairman
queue (M/M/R//N), whose availability `availability_theory` gives.

    python examples/python/simpy/machineshop.py
"""

from math import comb, factorial

import chronon_pdes as chronon
from chronon_pdes.process import ProcessModel, Resource


class MachineShop(ProcessModel):
    def __init__(self, cells=4, machines=5, repairmen=3, mttf=10.0, mttr=1.0, call=0.05, end=20000.0):
        self.cells, self.machines, self.repairmen = cells, machines, repairmen
        self.mttf, self.mttr, self.call, self.end = mttf, mttr, call, end
        self.lps, self.lookahead = cells + 1, call

    def setup(self, env):
        env.tally = {"up": 0.0, "failures": 0, "repairs": 0}
        if env.me == 0:
            self.depot(env)
        else:
            self.cell(env)

    def depot(self, env):
        crew = Resource(env, capacity=self.repairmen)

        def repair(cell, machine):
            with crew.request() as req:
                yield req
                yield env.timeout(env.rng.exponential(self.mttr))
            env.tally["repairs"] += 1
            env.send(cell, self.call, machine)

        def switchboard():
            while True:
                cell, machine = yield env.receive()
                env.process(repair(cell, machine))

        env.process(switchboard())

    def cell(self, env):
        fixed = {}
        env.up_since = [0.0] * self.machines

        def machine(i):
            while True:
                yield env.timeout(env.rng.exponential(self.mttf))
                env.tally["up"] += env.now - env.up_since[i]
                env.tally["failures"] += 1
                env.up_since[i] = None
                fixed[i] = env.event()
                env.send(0, self.call, (env.me, i))
                yield fixed[i]
                env.up_since[i] = env.now

        def mailbox():
            while True:
                i = yield env.receive()
                fixed.pop(i).succeed()

        for i in range(self.machines):
            env.process(machine(i))
        env.process(mailbox())

    def results(self, env, stats):
        up = env.tally["up"]
        if env.me > 0:
            up += sum(stats.end_time - s for s in env.up_since if s is not None)
            stats.add("machine_time", self.machines * stats.end_time)
        stats.add("up", up)
        stats.add("failures", env.tally["failures"])
        stats.add("repairs", env.tally["repairs"])


def availability_theory(n, repairmen, mttf, mttr):
    """The machine-repairman queue's availability (n machines, exponential times, no delay)."""
    r = mttr / mttf
    p = [comb(n, k) * r ** k if k <= repairmen else
         comb(n, k) * factorial(k) / (factorial(repairmen) * repairmen ** (k - repairmen)) * r ** k
         for k in range(n + 1)]
    broken = sum(k * x for k, x in enumerate(p)) / sum(p)
    return 1 - broken / n


def summary(stats, end):
    return {"availability": stats["up"] / stats["machine_time"],
            "repairs per 1000": 1000 * stats["repairs"] / end}


def run(seed, end=20000.0, **kw):
    r = chronon.run(MachineShop(end=end, **kw), seed=seed, progress=False)
    return summary(r.model_stats, end)


if __name__ == "__main__":
    import machineshop_simpy
    from validate import against_simpy, every_executor

    every_executor(MachineShop(end=500.0))
    against_simpy(run, machineshop_simpy.run, reps=10, end=2000.0)
    print(f"theory, call 0: {availability_theory(20, 3, 10.0, 1.0):.5f}")
