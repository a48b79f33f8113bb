"""Python models for the tests: an M/M/1 tandem, and models that break the rules."""

import random


class Tandem:
    """Customers arrive at station 0 (Poisson, rate `rate`), are served at each of `stations`
    M/M/1 stations in turn (exponential service of rate `service`) and move between stations in
    `transit` time units (the lookahead)."""

    counters = ["arrivals"]

    def __init__(self, stations=3, rate=0.5, service=1.0, transit=0.5, end=200.0):
        self.stations = stations
        self.rate = rate
        self.service = service
        self.transit = transit
        self.end = end

    @property
    def lps(self):
        return self.stations

    @property
    def lookahead(self):
        return self.transit

    def init(self, ctx):
        if ctx.me() == 0:
            ctx.send(0, ctx.rng().expovariate(self.rate), ("gen",))
        return {"queue": [], "busy": False, "served": 0, "sojourn": 0.0}

    def arrive(self, st, ctx):
        st["queue"].append(ctx.now())
        ctx.count("arrivals")
        if not st["busy"]:
            st["busy"] = True
            ctx.send(ctx.me(), ctx.rng().expovariate(self.service), ("done",))

    def on_event(self, st, ev, ctx):
        kind = ev[0]
        if kind == "gen":
            ctx.send(0, ctx.rng().expovariate(self.rate), ("gen",))
            self.arrive(st, ctx)
        elif kind == "arrive":
            self.arrive(st, ctx)
        else:
            came = st["queue"].pop(0)
            st["served"] += 1
            st["sojourn"] += ctx.now() - came
            if ctx.me() + 1 < self.stations:
                ctx.send(ctx.me() + 1, self.transit, ("arrive",))
            if st["queue"]:
                ctx.send(ctx.me(), ctx.rng().expovariate(self.service), ("done",))
            else:
                st["busy"] = False

    def finish(self, lp, st, stats):
        stats.add("served", st["served"])
        stats.add("sojourn", st["sojourn"])
        stats.set(f"mean_sojourn_{lp}", st["sojourn"] / max(st["served"], 1))


class Ring:
    """A token ring with a reverse handler and global events (sampling every LP's count)."""

    lps = 5
    lookahead = 1.0
    end = 40.0
    global_events = [10.0]

    def init(self, ctx):
        if ctx.me() == 0:
            ctx.send(1, 1.0 + ctx.rng().random(), ctx.me())
        return 0

    def on_event(self, hops, ev, ctx):
        ctx.send((ctx.me() + 1) % self.lps, 1.0 + ctx.rng().random(), ev)
        return hops + 1

    def reverse(self, hops, ev, where):
        return hops - 1

    def on_global(self, ctx):
        ctx.record("hops", sum(ctx.state(lp) for lp in range(ctx.lps())))
        ctx.schedule(10.0)

    def finish(self, lp, hops, stats):
        stats.add("hops", hops)


class Shuffled(Ring):
    """The token ring whose global events change the model: every 4 time units one moves LP
    0's hop count onto the last LP (`set_state`), grows a list in LP 1's state in place
    (`state_mut`) and sends LP 2 an extra token."""

    global_events = [4.0]

    def init(self, ctx):
        if ctx.me() == 1:
            ctx.send(2, 1.0 + ctx.rng().random(), ctx.me())
            return [0, []]
        return super().init(ctx)

    def on_event(self, hops, ev, ctx):
        ctx.send((ctx.me() + 1) % self.lps, 1.0 + ctx.rng().random(), ev)
        if ctx.me() == 1:
            hops[0] += 1
            return hops
        return hops + 1

    reverse = None

    def on_global(self, ctx):
        last = ctx.lps() - 1
        ctx.set_state(last, ctx.state(last) + ctx.state(0))
        ctx.set_state(0, 0)
        ctx.state_mut(1)[1].append(ctx.now())
        ctx.send(2, 0.5, ctx.now())
        ctx.add("moved", 1)
        ctx.schedule(4.0)

    def finish(self, lp, hops, stats):
        if lp == 1:
            stats.add("hops", hops[0])
            stats.add("marks", sum(hops[1]))
        else:
            stats.add("hops", hops)


class PythonRandom(Tandem):
    """Draws service times from Python's `random` module (not the LP's stream): its history
    depends on the order the executor runs events in."""

    def arrive(self, st, ctx):
        st["queue"].append(ctx.now())
        if not st["busy"]:
            st["busy"] = True
            ctx.send(ctx.me(), random.expovariate(self.service), ("done",))


class Raises(Tandem):
    """Raises in LP 1's first event at or after time 20."""

    def on_event(self, st, ev, ctx):
        if ctx.me() == 1 and ctx.now() >= 20.0:
            raise ValueError(f"broken at {ctx.now()}")
        super().on_event(st, ev, ctx)


class Unpicklable(Tandem):
    """Sends events that cannot be pickled (a lambda)."""

    def on_event(self, st, ev, ctx):
        if ev[0] == "done" and ctx.me() + 1 < self.stations:
            ctx.send(ctx.me() + 1, self.transit, ("arrive", lambda: 1))
        super().on_event(st, ev, ctx)


class LambdaState(Tandem):
    """Keeps a lambda in its LP states: they copy (copy.deepcopy) but do not pickle, so they
    cannot be saved in a checkpoint."""

    def init(self, ctx):
        st = super().init(ctx)
        st["scale"] = lambda x: 2 * x
        return st


class BelowLookahead(Tandem):
    """Sends to the next station faster than the lookahead."""

    def on_event(self, st, ev, ctx):
        if ev[0] == "done" and ctx.me() + 1 < self.stations:
            ctx.send(ctx.me() + 1, self.transit / 10, ("arrive",))
        super().on_event(st, ev, ctx)


class NoState(Tandem):
    """Forgets to return the state from init."""

    def init(self, ctx):
        super().init(ctx)


class KeepsCtx(Tandem):
    """Keeps its handler's ctx and uses it after the handler returned (in finish)."""

    def init(self, ctx):
        self.kept = ctx
        return super().init(ctx)

    def finish(self, lp, st, stats):
        stats.set("late", self.kept.now())


class Links:
    """A ring that declares its links (each LP sends only to the next, with lookahead 2) and
    checks them: a send to any other LP would be refused."""

    lps = 6
    lookahead = 0.5
    end = 60.0

    def topology(self, lp):
        return [((lp + 1) % self.lps, 2.0)]

    def init(self, ctx):
        ctx.send((ctx.me() + 1) % self.lps, 2.0 + ctx.rng().random(), 1)
        return 0

    def on_event(self, n, hops, ctx):
        ctx.send((ctx.me() + 1) % self.lps, 2.0 + ctx.rng().exponential(1.0), hops + 1)
        return n + 1


class BadLink(Links):
    """Sends to an LP it did not declare a link to."""

    def on_event(self, n, hops, ctx):
        ctx.send((ctx.me() + 2) % self.lps, 2.0, hops)
        return n + 1


class LocalLambdas:
    """Four LPs in two pairs (0, 1) and (2, 3), each LP sending events that hold a lambda to its
    partner only: with two workers (block mapping) no event leaves its worker, so under
    `procs=2` none needs pickling."""

    lps = 4
    lookahead = 0.5
    end = 30.0

    def init(self, ctx):
        ctx.send(ctx.me() ^ 1, 0.5 + ctx.rng().random(), (1, lambda x: x + 1))
        return 0

    def on_event(self, n, ev, ctx):
        hops, step = ev
        ctx.send(ctx.me() ^ 1, 0.5 + ctx.rng().random(), (step(hops), step))
        return n + 1

    def finish(self, lp, n, stats):
        stats.add("events", n)


class SharedCounter(Tandem):
    """Reads and writes a module-level counter in its handlers (state outside the LP): the same
    in every sequential run, but another history when workers interleave."""

    def on_event(self, st, ev, ctx):
        global _COUNTER
        _COUNTER += 1
        if ev[0] == "gen" and _COUNTER % 3 == 0:
            ctx.send(0, 0.01, ("arrive",))
        super().on_event(st, ev, ctx)


_COUNTER = 0


class SlowOffMain(Tandem):
    """Correct everywhere, but every event handled off the main thread (any parallel executor)
    also sleeps `nap` seconds; `hang` makes such a handler sleep until `hang` seconds after the
    process first got there (a parallel run that never ends within any reasonable limit)."""

    def __init__(self, nap=0.0, hang=None, **kw):
        super().__init__(**kw)
        self.nap = nap
        self.hang = hang

    def on_event(self, st, ev, ctx):
        import threading
        import time

        if threading.current_thread() is not threading.main_thread():
            if self.hang is not None:
                started = getattr(SlowOffMain, "_started", None) or time.time()
                SlowOffMain._started = started
                while time.time() < started + self.hang:
                    time.sleep(0.05)
            time.sleep(self.nap)
        super().on_event(st, ev, ctx)
