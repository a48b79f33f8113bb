"""Gas station refuelling, on chronon's process layer (the SimPy version is
gas_station_simpy.py).

`stations` gas stations (LPs 1 to `stations`) have `pumps` pumps each and a fuel tank of `size`
litres (a Container). A car arrives every randint(*t_inter) seconds with randint(*car_level)
litres in its `car_tank`-litre tank, waits for a pump, takes the fuel it needs from the
station's tank (waiting if the tank is short) and fills at `speed` litres a second. Every 10
seconds each station looks at its tank: below `threshold` % it calls the depot (LP 0, the call
takes `call` seconds, the lookahead), which sends one of its `trucks` tank trucks: the truck
drives `truck_time` seconds to the station, fills the tank, and is back at the depot
`truck_time` seconds later.

SimPy's example has a threshold of 10 %: 20 litres, less than a car may need (45), so a long
run can stall with a car waiting for fuel the station never orders; 25 % cannot.

    python examples/python/simpy/gas_station.py
"""

import chronon_pdes as chronon
from chronon_pdes.process import Container, ProcessModel, Resource


class GasStation(ProcessModel):
    def __init__(self, stations=3, pumps=2, size=200, threshold=25, car_tank=50, car_level=(5, 25),
                 speed=2, truck_time=300, t_inter=(30, 300), trucks=3, call=1.0, end=200000.0):
        self.stations, self.pumps, self.size, self.threshold = stations, pumps, size, threshold
        self.car_tank, self.car_level, self.speed = car_tank, car_level, speed
        self.truck_time, self.t_inter, self.trucks, self.call = truck_time, t_inter, trucks, call
        self.lps, self.lookahead, self.end = stations + 1, call, end

    def setup(self, env):
        env.tally = {"cars": 0, "wait": 0.0, "calls": 0}
        (self.depot if env.me == 0 else self.station)(env)

    def depot(self, env):
        trucks = Resource(env, capacity=self.trucks)

        def deliver(station):
            with trucks.request() as req:
                yield req
                env.send(station, self.truck_time, "truck")
                yield env.timeout(2 * self.truck_time)

        def phone():
            while True:
                station = yield env.receive()
                env.process(deliver(station))

        env.process(phone())

    def station(self, env):
        tank = Container(env, self.size, init=self.size)
        pumps = Resource(env, capacity=self.pumps)
        tally = env.tally

        def car():
            arrived = env.now
            need = self.car_tank - env.rng.randint(*self.car_level)
            with pumps.request() as req:
                yield req
                yield tank.get(need)
                tally["wait"] += env.now - arrived
                yield env.timeout(need / self.speed)
            tally["cars"] += 1

        def cars():
            while True:
                yield env.timeout(env.rng.randint(*self.t_inter))
                env.process(car())

        def control():
            while True:
                if tank.level / tank.capacity * 100 < self.threshold:
                    tally["calls"] += 1
                    env.send(0, self.call, env.me)
                    yield env.receive()
                    if tank.level < tank.capacity:
                        yield tank.put(tank.capacity - tank.level)
                yield env.timeout(10)

        env.process(cars())
        env.process(control())

    def results(self, env, stats):
        for k, v in env.tally.items():
            stats.add(k, v)


def summary(stats, end, stations):
    return {"cars per station per hour": 3600 * stats["cars"] / end / stations,
            "mean wait s": stats["wait"] / stats["cars"],
            "truck calls per station per day": 86400 * stats["calls"] / end / stations}


def run(seed, end=200000.0, **kw):
    kw.setdefault("stations", 3)
    r = chronon.run(GasStation(end=end, **kw), seed=seed, progress=False)
    return summary(r.model_stats, end, kw["stations"])


if __name__ == "__main__":
    import gas_station_simpy
    from validate import against_simpy, every_executor

    every_executor(GasStation(end=12500.0))
    against_simpy(run, gas_station_simpy.run, reps=10, end=50000.0)
