"""An LP's environment, its log, and ProcessModel: the chronon model that runs it."""

import math
from heapq import heappop, heappush

from .events import NORMAL, AllOf, AnyOf, Event, Process, Timeout


class Stream:
    """The LP's random stream (``env.rng``), as ``ctx.rng()``: every draw is kept in the LP's
    log, so a rebuilt LP sees the same numbers."""

    __slots__ = ("_env",)

    def __init__(self, env):
        self._env = env

    def _replayed(self):
        env = self._env
        v = env._state.draws[env._cursor]
        env._cursor += 1
        return v

    def _draw(self, name, *args):
        env = self._env
        if env._ctx is None:
            return self._replayed()
        v = getattr(env._ctx.rng(), name)(*args)
        if env._state.draws is not None:
            env._state.draws.append(v)
        return v

    def random(self):
        return self._draw("random")

    def uniform(self, a, b):
        return self._draw("uniform", a, b)

    def exponential(self, mean):
        env = self._env
        if env._ctx is None:
            return self._replayed()
        v = env._ctx.rng().exponential(mean)
        if env._state.draws is not None:
            env._state.draws.append(v)
        return v

    def expovariate(self, rate):
        env = self._env
        if env._ctx is None:
            return self._replayed()
        v = env._ctx.rng().expovariate(rate)
        if env._state.draws is not None:
            env._state.draws.append(v)
        return v

    def randrange(self, n):
        return self._draw("randrange", n)

    def randint(self, a, b):
        return self._draw("randint", a, b)

    def bernoulli(self, p):
        return self._draw("bernoulli", p)

    def choice(self, seq):
        return seq[self._draw("randrange", len(seq))]

    def normalvariate(self, mu=0.0, sigma=1.0):
        """A normal draw (Box-Muller over two uniform draws)."""
        u1 = 1.0 - self.random()
        u2 = self.random()
        return mu + sigma * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


class Environment:
    """One LP's world: its clock, its processes and their events (SimPy's ``Environment``).

    ``now``, ``me`` (this LP), ``lps``, ``rng``; ``timeout``, ``event``, ``process``,
    ``all_of``, ``any_of``; ``send(dst, delay, msg)`` to another LP and ``receive()`` (an event
    whose value is the next message, from the ``inbox`` Store); ``count(name, delta)``.
    """

    def __init__(self, model, state):
        from .resources import Store

        self.model = model
        self.me = state.lp
        self.lps = model.lps
        self._state = state
        self._lookahead = getattr(model, "lookahead", 0.0) or 0.0
        self._heap = []
        self._seq = 0
        self._now = 0.0
        self._wakes = set()
        self._ctx = None
        self._cursor = 0
        self.active_process = None
        self.rng = Stream(self)
        self.inbox = Store(self)

    def __repr__(self):
        return f"<Environment of LP {self.me} at {self._now}>"

    @property
    def now(self):
        return self._now

    @property
    def replaying(self):
        """True while the LP is being rebuilt from its log (after a Time Warp rollback or a
        restore): sends and counts are left out then, and draws come from the log."""
        return self._ctx is None

    def _schedule(self, event, priority, delay):
        t = self._now + delay if delay else self._now
        heappush(self._heap, (t, priority, self._seq, event))
        self._seq += 1
        if delay and t not in self._wakes:
            self._wakes.add(t)
            if self._ctx is not None:
                self._ctx.send(self.me, delay)

    def _run(self, now):
        """Processes every event due at or before ``now``."""
        self._now = now
        self._wakes.discard(now)
        heap = self._heap
        while heap and heap[0][0] <= now:
            event = heappop(heap)[3]
            callbacks = event.callbacks
            if callbacks is None:
                continue
            event.callbacks = None
            for cb in callbacks:
                cb(event)
            if not event._ok and not event._defused:
                raise event._value

    def _handle(self, now, ev):
        self._now = now
        if ev is not None:
            self.inbox._deliver(ev[0])
        self._run(now)

    # SimPy's vocabulary.
    def timeout(self, delay, value=None):
        return Timeout(self, delay, value)

    def event(self):
        return Event(self)

    def process(self, generator):
        return Process(self, generator)

    def all_of(self, events):
        return AllOf(self, events)

    def any_of(self, events):
        return AnyOf(self, events)

    # Between LPs.
    def send(self, dst, delay, msg=None):
        """Sends ``msg`` to LP ``dst``'s inbox, to arrive ``delay`` from now (at least the
        model's lookahead to another LP)."""
        if not 0 <= dst < self.lps:
            raise ValueError(f"env.send to LP {dst!r}: there are LPs 0 to {self.lps - 1}")
        if not delay >= 0:
            raise ValueError(f"env.send to LP {dst} with delay {delay!r}: a delay must be a number >= 0")
        if dst != self.me and delay < self._lookahead:
            raise ValueError(f"env.send to LP {dst} with delay {delay}: below the model's lookahead "
                             f"{self._lookahead} (a message to another LP takes at least the lookahead)")
        if self._ctx is not None:
            self._ctx.send(dst, delay, (msg,))

    def receive(self):
        """An event whose value is the next message that reaches this LP."""
        return self.inbox.get()

    def count(self, name, delta=1):
        if self._ctx is not None:
            self._ctx.count(name, delta)


class LPState:
    """What chronon keeps of an LP: the log of the events it handled and the random draws it
    made (``log``: (time, event, first draw) per event; ``draws``). The live environment
    (``env``) is a cache beside it, never copied or pickled: pickles and ``==`` see the log."""

    __slots__ = ("lp", "log", "draws", "env")

    def __init__(self, lp, log=None, draws=None, keep=True):
        self.lp = lp
        self.log = [] if log is None else log
        self.draws = ([] if draws is None else draws) if keep else None
        self.env = None

    def __reduce__(self):
        if self.draws is None:
            raise TypeError(f"LP {self.lp} keeps no log (keep_log = False), so its processes cannot be "
                            f"saved or copied (checkpoints, Time Warp, check): set keep_log = True")
        return (LPState, (self.lp, self.log, self.draws))

    def __eq__(self, other):
        return (isinstance(other, LPState) and self.lp == other.lp and self.log == other.log
                and self.draws == other.draws)

    __hash__ = None

    def __repr__(self):
        return f"LPState(lp={self.lp}, {len(self.log)} events, {len(self.draws)} draws)"


class ProcessModel:
    """A chronon model whose LPs run SimPy-style processes. Subclass it and define:

    - ``lps``, ``lookahead`` (the smallest delay of ``env.send`` to another LP), ``end``,
      ``counters`` (names for ``env.count``), as for any Python model;
    - ``setup(self, env)``: builds LP ``env.me``'s world at time 0 (resources, processes);
    - optionally ``results(self, env, stats)``: adds the LP's figures to the report's
      ``model_stats`` (``stats.add``, ``set``, ``min``, ``max``, ``stats.end_time``);
    - optionally ``keep_log = False``: no log (less memory, a little faster) for runs that
      never roll back or save an LP: not under Time Warp, ``check`` or checkpoints, which
      refuse such a model in one line.

    ``setup`` and the processes must depend only on the model's parameters, the events they
    see and ``env.rng``: an LP is rebuilt by running them again (see the package docstring).
    """

    lps = 1
    lookahead = 0.0
    counters = []
    keep_log = True
    # An event whose process raised is undone like any other (its log entry is written before
    # anything runs, and the live world is rebuilt from the log): under Time Warp the error
    # counts only if that event commits.
    reverse_undoes_failed_events = True

    def setup(self, env):
        raise NotImplementedError(f"{type(self).__name__}.setup(env)")

    def init(self, ctx):
        state = LPState(ctx.me(), keep=self.keep_log is not False)
        env = Environment(self, state)
        env._ctx = ctx
        try:
            self.setup(env)
            env._run(ctx.now())
        finally:
            env._ctx = None
        state.env = env
        return state

    def on_event(self, state, event, ctx):
        now = ctx.now()
        if state.draws is not None:
            state.log.append((now, event, len(state.draws)))
        env = state.env
        if env is None:
            env = self._rebuild(state, upto=None if state.draws is None else len(state.log) - 1)
        env._ctx = ctx
        try:
            env._handle(now, event)
        finally:
            env._ctx = None

    def reverse(self, state, event, where):
        lp, now = where
        if state.draws is None:
            raise RuntimeError(f"{type(self).__name__} has keep_log = False: it cannot be rolled back "
                               f"(Time Warp, check); set keep_log = True")
        if not state.log or state.log[-1][0] != now:
            last = state.log[-1][0] if state.log else None
            raise RuntimeError(f"LP {lp}: undoing an event at {now}, but the last event logged is at {last}")
        del state.draws[state.log.pop()[2]:]
        state.env = None

    def finish(self, lp, state, stats):
        results = getattr(self, "results", None)
        if results is not None:
            results(state.env or self._rebuild(state), stats)

    def _rebuild(self, state, upto=None):
        """The LP's live environment, rebuilt by running ``setup`` and the logged events (the
        first ``upto``, default all) again with sends and counts left out and draws taken from
        the log."""
        env = Environment(self, state)
        self.setup(env)
        env._run(0.0)
        log = state.log if upto is None else state.log[:upto]
        for now, event, _ in log:
            env._handle(now, event)
        drawn = len(state.draws) if upto is None or upto == len(state.log) else state.log[upto][2]
        if env._cursor != drawn:
            raise RuntimeError(f"LP {state.lp}: rebuilt from its log with {env._cursor} random draws "
                               f"where the run made {drawn}: setup or a process does not "
                               f"depend only on the model, the events and env.rng")
        state.env = env
        return env
