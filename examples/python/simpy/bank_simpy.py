"""Bank renege in SimPy 4: the same model as bank.py, every branch in one environment."""

import random

import simpy

from bank import summary


def run(seed, end=20000.0, branches=4, interval=10.0, service=12.0, patience=(1.0, 3.0), walk=2.0):
    env = simpy.Environment()
    rng = random.Random(seed)
    counters = [simpy.Resource(env, capacity=1) for _ in range(branches)]
    tally = {"customers": 0, "served": 0, "reneged": 0, "lost": 0, "wait": 0.0}

    def customer(b, second_try):
        arrived = env.now
        tally["customers"] += 1
        with counters[b].request() as req:
            got = yield req | env.timeout(rng.uniform(*patience))
            if req in got:
                tally["wait"] += env.now - arrived
                yield env.timeout(rng.expovariate(1 / service))
                tally["served"] += 1
                return
        tally["reneged"] += 1
        if second_try:
            tally["lost"] += 1
        else:
            yield env.timeout(walk)
            env.process(customer((b + 1) % branches, True))

    def source(b):
        while True:
            yield env.timeout(rng.expovariate(1 / interval))
            env.process(customer(b, False))

    for b in range(branches):
        env.process(source(b))
    env.run(until=end)
    return summary(tally, end, branches)
