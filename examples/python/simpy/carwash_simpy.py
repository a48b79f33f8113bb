"""Carwash in SimPy 4: the same model as carwash.py, every carwash in one environment."""

import random

import simpy

from carwash import summary


def run(seed, end=20000.0, washes=4, machines=2, washtime=5.0, t_inter=3, initial=4):
    env = simpy.Environment()
    rng = random.Random(seed)
    tally = {"washed": 0, "wait": 0.0, "dirt removed": 0}

    def wash():
        yield env.timeout(washtime)
        return rng.randint(50, 99)

    def car(machine):
        arrived = env.now
        with machine.request() as req:
            yield req
            tally["wait"] += env.now - arrived
            removed = yield env.process(wash())
            tally["dirt removed"] += removed
        tally["washed"] += 1

    def source(machine):
        for _ in range(initial):
            env.process(car(machine))
        while True:
            yield env.timeout(rng.randint(t_inter - 2, t_inter + 2))
            env.process(car(machine))

    for _ in range(washes):
        env.process(source(simpy.Resource(env, capacity=machines)))
    env.run(until=end)
    return summary(tally, end, washes)
