"""Machine shop in SimPy 4: the same model as machineshop.py in one environment."""

import random

import simpy

from machineshop import summary


def run(seed, end=20000.0, cells=4, machines=5, repairmen=3, mttf=10.0, mttr=1.0, call=0.05):
    env = simpy.Environment()
    rng = random.Random(seed)
    crew = simpy.Resource(env, capacity=repairmen)
    n = cells * machines
    up_since = [0.0] * n
    tally = {"up": 0.0, "repairs": 0, "machine_time": n * end}

    def machine(i):
        while True:
            yield env.timeout(rng.expovariate(1 / mttf))
            tally["up"] += env.now - up_since[i]
            up_since[i] = None
            yield env.timeout(call)
            with crew.request() as req:
                yield req
                yield env.timeout(rng.expovariate(1 / mttr))
            tally["repairs"] += 1
            yield env.timeout(call)
            up_since[i] = env.now

    for i in range(n):
        env.process(machine(i))
    env.run(until=end)
    tally["up"] += sum(end - s for s in up_since if s is not None)
    return summary(tally, end)
