"""Carwash, on chronon's process layer (the SimPy version is carwash_simpy.py).

Each of `washes` carwashes (one LP each, independent) has `machines` washing machines. Four
cars are there at the start; then a car arrives every randint(t_inter - 2, t_inter + 2) time
units. A car waits for a machine, and the wash (a process of its own) takes `washtime` and
removes a random 50 to 99 % of the dirt. (SimPy's example has t_inter 7, where no car ever
waits; 3 makes a queue.)

    python examples/python/simpy/carwash.py
"""

import chronon_pdes as chronon
from chronon_pdes.process import ProcessModel, Resource


class Carwash(ProcessModel):
    def __init__(self, washes=4, machines=2, washtime=5.0, t_inter=3, initial=4, end=20000.0):
        self.lps, self.machines, self.washtime = washes, machines, washtime
        self.t_inter, self.initial, self.end = t_inter, initial, end
        self.lookahead = 1.0

    def setup(self, env):
        machine = Resource(env, capacity=self.machines)
        tally = env.tally = {"washed": 0, "wait": 0.0, "dirt removed": 0}

        def wash():
            yield env.timeout(self.washtime)
            return env.rng.randint(50, 99)

        def car():
            arrived = env.now
            with machine.request() as req:
                yield req
                tally["wait"] += env.now - arrived
                removed = yield env.process(wash())
                tally["dirt removed"] += removed
            tally["washed"] += 1

        def source():
            for _ in range(self.initial):
                env.process(car())
            while True:
                yield env.timeout(env.rng.randint(self.t_inter - 2, self.t_inter + 2))
                env.process(car())

        env.process(source())

    def results(self, env, stats):
        for k, v in env.tally.items():
            stats.add(k, v)


def summary(stats, end, washes):
    return {"washed per wash per 1000": 1000 * stats["washed"] / end / washes,
            "mean wait": stats["wait"] / stats["washed"],
            "mean dirt removed %": stats["dirt removed"] / stats["washed"]}


def run(seed, end=20000.0, **kw):
    kw.setdefault("washes", 4)
    r = chronon.run(Carwash(end=end, **kw), seed=seed, progress=False)
    return summary(r.model_stats, end, kw["washes"])


if __name__ == "__main__":
    import carwash_simpy
    from validate import against_simpy, every_executor

    every_executor(Carwash(end=750.0))
    against_simpy(run, carwash_simpy.run, reps=10, end=3000.0)
