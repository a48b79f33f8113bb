"""Events, processes and conditions of the process layer (see the package docstring)."""

PENDING = object()
URGENT, NORMAL = 0, 1


class Interrupt(Exception):
    """Thrown into a process by ``proc.interrupt(cause)``; ``cause`` is what was passed."""

    @property
    def cause(self):
        return self.args[0] if self.args else None

    def __str__(self):
        return f"Interrupt({self.cause!r})"


class Event:
    """Something that happens at one instant of an LP. Processes wait for it with ``yield``.

    ``succeed(value)`` or ``fail(exception)`` triggers it (it is then processed at the current
    time: its callbacks run and the processes waiting for it resume); ``cancel()`` removes a
    scheduled event, which then never happens (a process waiting for it waits on: interrupt
    it instead)."""

    __slots__ = ("env", "callbacks", "_value", "_ok", "_defused", "_cancelled")

    def __init__(self, env):
        self.env = env
        self.callbacks = []
        self._value = PENDING
        self._ok = None
        self._defused = False
        self._cancelled = False

    def __repr__(self):
        return f"<{type(self).__name__} at {id(self):#x}>"

    @property
    def triggered(self):
        return self._value is not PENDING

    @property
    def processed(self):
        return self.callbacks is None and not self._cancelled

    @property
    def cancelled(self):
        return self._cancelled

    @property
    def ok(self):
        if self._value is PENDING:
            raise AttributeError(f"{self!r} has not been triggered yet")
        return self._ok

    @property
    def value(self):
        if self._value is PENDING:
            raise AttributeError(f"the value of {self!r} is not available yet")
        return self._value

    @property
    def defused(self):
        return self._defused

    @defused.setter
    def defused(self, v):
        self._defused = bool(v)

    def _check_pending(self):
        if self._value is not PENDING:
            raise RuntimeError(f"{self!r} has already been triggered")

    def succeed(self, value=None):
        self._check_pending()
        self._ok, self._value = True, value
        self.env._schedule(self, NORMAL, 0.0)
        return self

    def fail(self, exception):
        self._check_pending()
        if not isinstance(exception, BaseException):
            raise TypeError(f"fail() takes an exception, not {exception!r}")
        self._ok, self._value = False, exception
        self.env._schedule(self, NORMAL, 0.0)
        return self

    def trigger(self, event):
        """Triggers this event as ``event`` was (a callback: ``e.callbacks.append(x.trigger)``)."""
        self._check_pending()
        self._ok, self._value = event._ok, event._value
        self.env._schedule(self, NORMAL, 0.0)

    def cancel(self):
        if self.callbacks is None:
            raise RuntimeError(f"{self!r} cannot be cancelled: it has already happened or been cancelled")
        self.callbacks = None
        self._cancelled = True

    def __and__(self, other):
        return AllOf(self.env, [self, other])

    def __or__(self, other):
        return AnyOf(self.env, [self, other])


class Timeout(Event):
    """An event that happens ``delay`` time units after it is made (``env.timeout(delay)``)."""

    __slots__ = ("delay",)

    def __init__(self, env, delay, value=None):
        if not delay >= 0:
            raise ValueError(f"env.timeout({delay!r}): a delay must be a number >= 0")
        self.env = env
        self.callbacks = []
        self._defused = self._cancelled = False
        self.delay = delay
        self._ok, self._value = True, value
        env._schedule(self, NORMAL, delay)

    def __repr__(self):
        return f"<Timeout({self.delay}) at {id(self):#x}>"


class Process(Event):
    """A generator run as a process (``env.process(gen)``); as an event it happens when the
    generator returns (its value is the return value) or raises (it fails)."""

    __slots__ = ("_gen", "_target", "name")

    def __init__(self, env, generator):
        if not hasattr(generator, "throw") or not hasattr(generator, "send"):
            raise TypeError(f"env.process() takes a generator (call the function: env.process(f(env))), "
                            f"not {generator!r}")
        Event.__init__(self, env)
        self._gen = generator
        self.name = getattr(generator, "__name__", type(generator).__name__)
        start = Event(env)
        start._ok, start._value = True, None
        start.callbacks.append(self._resume)
        env._schedule(start, URGENT, 0.0)
        self._target = start

    def __repr__(self):
        return f"<Process({self.name}) at {id(self):#x}>"

    @property
    def is_alive(self):
        return self._value is PENDING

    @property
    def target(self):
        """The event the process waits for."""
        return self._target

    def interrupt(self, cause=None):
        """Throws ``Interrupt(cause)`` into the process at the current time."""
        if self._value is not PENDING:
            raise RuntimeError(f"{self!r} has terminated and cannot be interrupted")
        if self is self.env.active_process:
            raise RuntimeError(f"{self!r} cannot interrupt itself")
        ev = Event(self.env)
        ev._ok, ev._value, ev._defused = False, Interrupt(cause), True
        ev.callbacks.append(self._interrupted)
        self.env._schedule(ev, URGENT, 0.0)

    def _interrupted(self, event):
        if self._value is not PENDING:
            return
        target = self._target
        if target is not None and target.callbacks:
            try:
                target.callbacks.remove(self._resume)
            except ValueError:
                pass
        self._resume(event)

    def _resume(self, event):
        env = self.env
        env.active_process = self
        gen = self._gen
        while True:
            try:
                if event._ok:
                    nxt = gen.send(event._value)
                else:
                    event._defused = True
                    nxt = gen.throw(event._value)
            except StopIteration as stop:
                self._ok, self._value = True, stop.value
                env._schedule(self, NORMAL, 0.0)
                break
            except Exception as exc:
                self._ok, self._value = False, exc
                env._schedule(self, NORMAL, 0.0)
                break
            if not isinstance(nxt, Event) or nxt.env is not env:
                event = _bad_yield(self, nxt)
                continue
            if nxt.callbacks is not None:
                nxt.callbacks.append(self._resume)
                self._target = nxt
                break
            if nxt._cancelled:
                event = _failed(env, RuntimeError(f"process {self.name} waits for {nxt!r}, which was cancelled"))
                continue
            event = nxt
        env.active_process = None


def _failed(env, exc):
    ev = Event(env)
    ev._ok, ev._value = False, exc
    return ev


def _bad_yield(proc, obj):
    if isinstance(obj, Event):
        why = f"an event of another LP's environment ({obj!r})"
    else:
        why = f"{obj!r}, which is not an event"
    return _failed(proc.env, TypeError(
        f"process {proc.name} yielded {why}: yield env.timeout(d), an event, a process or a request"))


class Condition(Event):
    """Happens when ``evaluate(events, count)`` is true, with a dict {event: value} of the events
    that have happened when it is processed; fails as soon as one of them fails."""

    __slots__ = ("_events", "_evaluate", "_count")

    def __init__(self, env, evaluate, events):
        Event.__init__(self, env)
        self._events = list(events)
        self._evaluate = evaluate
        self._count = 0
        self.callbacks.append(self._collect)
        for e in self._events:
            if not isinstance(e, Event) or e.env is not env:
                raise TypeError(f"a condition takes events of its own LP's environment, not {e!r}")
        if not self._events:
            self.succeed()
            return
        for e in self._events:
            if e.callbacks is None and not e._cancelled:
                self._check(e)
            elif e.callbacks is not None:
                e.callbacks.append(self._check)

    def _check(self, event):
        if self._value is not PENDING:
            return
        self._count += 1
        if not event._ok:
            event._defused = True
            self.fail(event._value)
        elif self._evaluate(self._events, self._count):
            self.succeed()

    def _collect(self, event):
        if self._ok:
            self._value = {e: e._value for e in self._events if e.callbacks is None and not e._cancelled}


def _all(events, count):
    return count == len(events)


def _any(events, count):
    return count > 0


class AllOf(Condition):
    """Happens when every one of ``events`` has happened (``a & b``)."""

    __slots__ = ()

    def __init__(self, env, events):
        Condition.__init__(self, env, _all, events)


class AnyOf(Condition):
    """Happens when one of ``events`` has happened (``a | b``)."""

    __slots__ = ()

    def __init__(self, env, events):
        Condition.__init__(self, env, _any, events)


__all__ = ["Event", "Timeout", "Process", "Interrupt", "Condition", "AllOf", "AnyOf", "URGENT", "NORMAL"]
