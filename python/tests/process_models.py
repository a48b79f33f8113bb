"""Process-layer models for the tests: a script runner that records what happens, and a
network of LPs whose messages make Time Warp roll back."""

from chronon_pdes.process import (Container, FilterStore, Interrupt, PriorityResource, ProcessModel,
                                  Resource, Store)


class Script(ProcessModel):
    """Runs scenario `name` (a function below: scenario(env, note)) on every LP; `note(label)`
    records (label, now), which comes back in model_stats as "LP:NNN label" -> time."""

    def __init__(self, name, lps=1, lookahead=1.0, end=100.0):
        self.name, self.lps, self.lookahead, self.end = name, lps, lookahead, end

    def setup(self, env):
        env.trace = []
        globals()[self.name](env, lambda label: env.trace.append((label, env.now)))

    def results(self, env, stats):
        for i, (label, t) in enumerate(env.trace):
            stats.set(f"{env.me}:{i:03d} {label}", t)


def trace(report, lp=0):
    """The (label, time) notes of LP `lp`, in the order they were made."""
    notes = sorted((k.split(" ", 1)[0], k.split(" ", 1)[1], v) for k, v in report.model_stats.items()
                   if k.startswith(f"{lp}:"))
    return [(label, t) for _, label, t in notes]


def timeouts(env, note):
    def p(name, d):
        yield env.timeout(d)
        note(name)
    for name, d in [("c", 3.0), ("a", 1.0), ("b1", 2.0), ("b2", 2.0), ("zero", 0.0)]:
        env.process(p(name, d))


def same_time(env, note):
    ev = env.event()

    def waiter(name):
        yield ev
        note(name)

    def trigger():
        yield env.timeout(1.0)
        note("trigger")
        ev.succeed()
        yield env.timeout(0)
        note("after zero timeout")

    env.process(waiter("w1"))
    env.process(trigger())
    env.process(waiter("w2"))


def resource_fifo(env, note):
    res = Resource(env, capacity=2)

    def user(name, start, hold):
        yield env.timeout(start)
        with res.request() as req:
            yield req
            note(f"{name} got")
            yield env.timeout(hold)
        note(f"{name} out")

    for i, (start, hold) in enumerate([(0, 5), (1, 5), (2, 1), (3, 1), (3, 1)]):
        env.process(user(f"u{i}", start, hold))


def priorities(env, note):
    res = PriorityResource(env, capacity=1)

    def user(name, prio):
        with res.request(priority=prio) as req:
            yield req
            note(name)
            yield env.timeout(1)

    def starter():
        env.process(user("first", 5))
        yield env.timeout(0.5)
        for name, prio in [("low", 3), ("high", 1), ("low2", 3), ("mid", 2)]:
            env.process(user(name, prio))

    env.process(starter())


def store(env, note):
    s = Store(env, capacity=2)
    fs = FilterStore(env)

    def producer():
        for i in range(4):
            yield s.put(i)
            note(f"put {i}")
        yield fs.put("apple")
        yield fs.put("pear")

    def consumer():
        yield env.timeout(5)
        for _ in range(4):
            item = yield s.get()
            note(f"got {item}")
            yield env.timeout(1)
        fruit = yield fs.get(lambda f: f.startswith("p"))
        note(f"filtered {fruit}")

    env.process(producer())
    env.process(consumer())


def container(env, note):
    tank = Container(env, capacity=10, init=4)

    def taker():
        yield tank.get(6)
        note(f"took 6, level {tank.level}")

    def filler():
        yield env.timeout(2)
        yield tank.put(3)
        note(f"put 3, level {tank.level}")
        yield tank.put(5)
        note(f"put 5, level {tank.level}")
        yield tank.put(5)
        note(f"put 5 more, level {tank.level}")

    def drainer():
        yield env.timeout(7)
        yield tank.get(2)
        note(f"took 2, level {tank.level}")

    for p in (taker, filler, drainer):
        env.process(p())


def conditions(env, note):
    def p():
        a, b = env.timeout(1, "a"), env.timeout(2, "b")
        got = yield a | b
        note(f"any {sorted(got.values())}")
        got = yield a & b
        note(f"all {sorted(got.values())}")
        got = yield env.all_of([])
        note(f"empty all {len(got)}")
        c, d = env.timeout(3, "c"), env.timeout(3, "d")
        got = yield env.any_of([c, d])
        note(f"same time {sorted(got.values())}")

    env.process(p())


def interrupts(env, note):
    def sleeper():
        try:
            yield env.timeout(10)
            note("slept")
        except Interrupt as i:
            note(f"interrupted {i.cause}")
            yield env.timeout(1)
        return "done"

    def boss():
        s = env.process(sleeper())
        yield env.timeout(2)
        s.interrupt("wake up")
        value = yield s
        note(f"returned {value}")
        try:
            s.interrupt("again")
        except RuntimeError:
            note("dead process refused")

    env.process(boss())


def cancelling(env, note):
    res = Resource(env, capacity=1)

    def p():
        alarm = env.timeout(5)
        alarm.callbacks.append(lambda e: note("alarm rang"))
        alarm2 = env.timeout(6)
        alarm2.callbacks.append(lambda e: note("alarm2 rang"))
        yield env.timeout(1)
        alarm.cancel()
        note(f"cancelled {alarm.cancelled}")
        held = res.request()
        yield held
        queued = res.request()
        queued.cancel()
        note(f"queue {len(res.queue)}")
        res.release(held)
        note(f"count {res.count}")

    env.process(p())


def messages(env, note):
    def sender():
        for i in range(3):
            yield env.timeout(1)
            env.send((env.me + 1) % env.lps, 1.5, f"{env.me}>{i}")

    def receiver():
        while True:
            msg = yield env.receive()
            note(f"got {msg}")

    env.process(sender())
    env.process(receiver())


def yields_a_number(env, note):
    def p():
        yield env.timeout(1)
        yield 5
    env.process(p())


def negative_timeout(env, note):
    def p():
        yield env.timeout(1)
        yield env.timeout(-2)
    env.process(p())


def below_lookahead(env, note):
    def p():
        yield env.timeout(1)
        env.send((env.me + 1) % env.lps, 0.1, "fast")
    env.process(p())


def releases_twice(env, note):
    res = Resource(env)

    def p():
        req = res.request()
        yield req
        yield env.timeout(1)
        res.release(req)
        res.release(req)
    env.process(p())


class Network(ProcessModel):
    """`lps` workshops, each with `servers` servers. Jobs arrive at each (Poisson, `rate`), are
    served (exponential, mean `service`), and then go on to a random workshop after
    `lookahead` plus an exponential delay, `hops` times. Plenty of stragglers for Time Warp."""

    counters = ["arrivals", "done"]

    def __init__(self, lps=4, servers=2, rate=0.5, service=1.0, hops=3, lookahead=0.5, end=60.0, keep_log=True):
        self.lps, self.servers, self.rate, self.service = lps, servers, rate, service
        self.keep_log = keep_log
        self.hops, self.lookahead, self.end = hops, lookahead, end

    def setup(self, env):
        desk = Resource(env, capacity=self.servers)
        env.served, env.wait = 0, 0.0

        def job(hops):
            env.count("arrivals")
            came = env.now
            with desk.request() as req:
                yield req
                env.wait += env.now - came
                yield env.timeout(env.rng.exponential(self.service))
            env.served += 1
            if hops > 0:
                env.send(env.rng.randrange(env.lps), self.lookahead + env.rng.exponential(1.0), hops - 1)
            else:
                env.count("done")

        def source():
            while True:
                yield env.timeout(env.rng.expovariate(self.rate))
                env.process(job(self.hops))

        def door():
            while True:
                hops = yield env.receive()
                env.process(job(hops))

        env.process(source())
        env.process(door())

    def results(self, env, stats):
        stats.add("served", env.served)
        stats.add("wait", env.wait)
