"""Gas station refuelling in SimPy 4: the same model as gas_station.py in one environment."""

import random

import simpy

from gas_station import summary


def run(seed, end=200000.0, stations=3, pumps=2, size=200, threshold=25, car_tank=50,
        car_level=(5, 25), speed=2, truck_time=300, t_inter=(30, 300), trucks=3, call=1.0):
    env = simpy.Environment()
    rng = random.Random(seed)
    depot = simpy.Resource(env, capacity=trucks)
    tally = {"cars": 0, "wait": 0.0, "calls": 0}

    def deliver(arrived):
        yield env.timeout(call)
        with depot.request() as req:
            yield req
            env.process(drive(arrived))
            yield env.timeout(2 * truck_time)

    def drive(arrived):
        yield env.timeout(truck_time)
        arrived.succeed()

    def station():
        tank = simpy.Container(env, size, init=size)
        pump = simpy.Resource(env, capacity=pumps)

        def car():
            t0 = env.now
            need = car_tank - rng.randint(*car_level)
            with pump.request() as req:
                yield req
                yield tank.get(need)
                tally["wait"] += env.now - t0
                yield env.timeout(need / speed)
            tally["cars"] += 1

        def cars():
            while True:
                yield env.timeout(rng.randint(*t_inter))
                env.process(car())

        def control():
            while True:
                if tank.level / tank.capacity * 100 < threshold:
                    tally["calls"] += 1
                    arrived = env.event()
                    env.process(deliver(arrived))
                    yield arrived
                    yield tank.put(tank.capacity - tank.level)
                yield env.timeout(10)

        env.process(cars())
        env.process(control())

    for _ in range(stations):
        station()
    env.run(until=end)
    return summary(tally, end, stations)
