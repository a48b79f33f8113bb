"""The shape of a model written in Python."""

from typing import Any, List, Optional


class Model:
    """A model written in Python (subclassing is optional: any object with these attributes
    will do).

    Required:

    - ``lps``: the number of logical processes (LPs).
    - ``init(ctx)``: builds LP ``ctx.me()``'s state at time 0 (any Python object) and schedules
      its first events with ``ctx.send(dst, delay, event)``.
    - ``on_event(state, event, ctx)``: handles ``event`` at ``ctx.now()`` on LP ``ctx.me()``.
      Change ``state`` in place and return None, or return a new state of the state's kind
      (for numbers and tuples); anything else fails at that event.

    Optional:

    - ``lookahead``: the smallest delay of a send to *another* LP (conservative executors need
      it; every executor refuses a send below it). A send to the LP itself may take any delay.
    - ``end``: the default end time. While a run goes on it is the run's end (``end=`` or
      ``params``), and it is set back afterwards.
    - ``counters``: names for ``ctx.count(name, delta)``; their totals are in the report's
      ``model_stats``.
    - ``topology(lp)``: the LPs ``lp`` may send to, as ``[(other, lookahead), ...]``, or None.
    - ``reverse(state, event, (lp, now))``: undoes ``on_event`` (Time Warp then saves no state
      copies); return a new state or change it in place.
    - ``finish(lp, state, stats)``: adds figures to the report's ``model_stats`` with
      ``stats.add(name, value)``, ``stats.set``, ``stats.min``, ``stats.max``;
      ``stats.end_time`` is the time the run ended (the end time, or the cut of a run that
      ends at a checkpoint); ``stats.tally(name, t)`` and ``stats.time_average(name, a)``
      merge a :class:`Tally` or :class:`TimeAverage` kept in the state (the report gets
      ``name.mean``).
    - ``global_events``: times of the first global events; ``on_global(ctx)`` handles each,
      with every LP stopped: ``ctx.now()``, ``ctx.state(lp)`` (to read),
      ``ctx.state_mut(lp)`` (to change in place), ``ctx.set_state(lp, value)``,
      ``ctx.send(dst, delay, event)`` (delay > 0), ``ctx.add``/``ctx.set`` (statistics),
      ``ctx.record(name, value)`` (a time series in the report's ``model_series``),
      ``ctx.schedule(delay)`` (the next one).

    Randomness must come from ``ctx.rng()`` (``random()``, ``uniform(a, b)``,
    ``exponential(mean)``, ``expovariate(rate)``, ``randrange(n)``, ``randint(a, b)``,
    ``choice(seq)``, ``bernoulli(p)``): it is part of each LP's state, so every executor draws
    the same numbers. ``check()`` catches a model that uses the ``random`` module instead.

    Under Time Warp an LP's state is copied before each event (by a pickle round trip, or
    ``copy.deepcopy`` when pickle refuses it) unless the model has ``reverse``. With
    ``procs=P`` every worker process has its own interpreter: the model object, its states and
    its events must pickle, the class must be importable (defined in a module or in the main
    script under ``if __name__ == "__main__":``, not in a notebook unless ``cloudpickle`` is
    installed), and attributes set by handlers stay in the workers. Without ``procs`` the run
    goes on in the caller's process, with this very object.
    """

    lps: int = 1
    lookahead: float = 0.0
    end: Optional[float] = None
    counters: List[str] = []

    def init(self, ctx) -> Any:
        return None

    def on_event(self, state: Any, event: Any, ctx) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.on_event")
