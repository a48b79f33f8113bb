"""Bank renege, on chronon's process layer (the SimPy version is bank_simpy.py).

Customers arrive at each of `branches` bank branches (Poisson, mean interval `interval`); each
branch has one counter. A customer waits at most a patience drawn from uniform(`patience`);
one who got the counter is served (exponential, mean `service`); one who ran out of patience
reneges and, on a first try, walks to the next branch (`walk` time units, the lookahead) to try
once more. Each branch is an LP; walk-ins are messages between them.

    python examples/python/simpy/bank.py      # every executor, one fingerprint; against SimPy
"""

import chronon_pdes as chronon
from chronon_pdes.process import ProcessModel, Resource


class Bank(ProcessModel):
    def __init__(self, branches=4, interval=10.0, service=12.0, patience=(1.0, 3.0), walk=2.0,
                 end=20000.0):
        self.lps, self.interval, self.service = branches, interval, service
        self.patience, self.walk, self.end = patience, walk, end
        self.lookahead = walk

    def setup(self, env):
        counter = Resource(env, capacity=1)
        tally = env.tally = {"customers": 0, "served": 0, "reneged": 0, "lost": 0, "wait": 0.0}

        def customer(second_try):
            arrived = env.now
            tally["customers"] += 1
            patience = env.rng.uniform(*self.patience)
            with counter.request() as req:
                got = yield req | env.timeout(patience)
                if req in got:
                    tally["wait"] += env.now - arrived
                    yield env.timeout(env.rng.exponential(self.service))
                    tally["served"] += 1
                    return
            tally["reneged"] += 1
            if second_try:
                tally["lost"] += 1
            else:
                env.send((env.me + 1) % env.lps, self.walk, "walk-in")

        def source():
            while True:
                yield env.timeout(env.rng.exponential(self.interval))
                env.process(customer(False))

        def door():
            while True:
                yield env.receive()
                env.process(customer(True))

        env.process(source())
        env.process(door())

    def results(self, env, stats):
        for k, v in env.tally.items():
            stats.add(k, v)


def summary(stats, end, branches):
    """The figures compared with SimPy."""
    return {"served per branch per 1000": 1000 * stats["served"] / end / branches,
            "renege fraction": stats["reneged"] / stats["customers"],
            "lost fraction": stats["lost"] / stats["customers"],
            "mean wait of the served": stats["wait"] / stats["served"]}


def run(seed, end=20000.0, **kw):
    kw.setdefault("branches", 4)
    r = chronon.run(Bank(end=end, **kw), seed=seed, progress=False)
    return summary(r.model_stats, end, kw["branches"])


if __name__ == "__main__":
    import bank_simpy
    from validate import against_simpy, every_executor

    every_executor(Bank(end=1250.0))
    against_simpy(run, bank_simpy.run, reps=10, end=5000.0)
