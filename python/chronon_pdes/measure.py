"""Statistics an LP keeps in its state and hands to ``finish``: a :class:`Tally` of observations
and a :class:`TimeAverage` of a level over time. ``stats.tally(name, t)`` and
``stats.time_average(name, a)`` merge them over every LP; the report then has their parts
(``name.n``, ``name.sum``... ``name.area``, ``name.time``) and the derived ``name.mean`` (and
``name.sd`` of a tally), which ``sweep`` summarizes and plots.

Both are plain objects that pickle, so Time Warp copies and rolls them back with the state.
"""

import math


class Tally:
    """Observations: their count, sum, sum of squares, smallest and largest.

    >>> t = Tally(); t.record(2.0); t.record(4.0); (t.n, t.mean)
    (2, 3.0)
    """

    __slots__ = ("n", "sum", "sum_sq", "min", "max")

    def __init__(self) -> None:
        self.n = 0
        self.sum = 0.0
        self.sum_sq = 0.0
        self.min = math.inf
        self.max = -math.inf

    def record(self, x: float) -> None:
        """Adds the observation ``x``."""
        x = float(x)
        self.n += 1
        self.sum += x
        self.sum_sq += x * x
        if x < self.min:
            self.min = x
        if x > self.max:
            self.max = x

    @property
    def mean(self) -> float:
        """The mean (NaN when empty)."""
        return self.sum / self.n if self.n else math.nan

    @property
    def sd(self) -> float:
        """The sample standard deviation (n - 1; NaN below 2 observations)."""
        if self.n < 2:
            return math.nan
        var = (self.sum_sq - self.sum * self.sum / self.n) / (self.n - 1)
        return math.sqrt(max(var, 0.0))

    def __repr__(self) -> str:
        return f"Tally(n={self.n}, mean={self.mean:.6g})"


class TimeAverage:
    """A level over time (a queue's length, the busy servers): its time-weighted mean.

    Call :meth:`update` with the current time whenever the level changes. ``finish`` hands it
    to ``stats.time_average(name, a)``, which counts the last level up to the run's end.

    >>> a = TimeAverage(); a.update(2.0, 1.0); a.update(6.0, 0.0); a.mean(8.0)
    0.5
    """

    __slots__ = ("start", "since", "value", "area")

    def __init__(self, start: float = 0.0, value: float = 0.0) -> None:
        self.start = float(start)
        self.since = float(start)
        self.value = float(value)
        self.area = 0.0

    def update(self, now: float, value: float) -> None:
        """The level becomes ``value`` at time ``now`` (not before the last change)."""
        if now < self.since:
            raise ValueError(f"TimeAverage.update at {now}, before its last change at {self.since}")
        self.area += self.value * (now - self.since)
        self.since = float(now)
        self.value = float(value)

    def add(self, now: float, delta: float) -> None:
        """The level changes by ``delta`` at time ``now``."""
        self.update(now, self.value + delta)

    def mean(self, now: float) -> float:
        """The time-weighted mean from the start to ``now`` (NaN before any time passed)."""
        t = now - self.start
        if t <= 0:
            return math.nan
        return (self.area + self.value * max(now - self.since, 0.0)) / t

    def __repr__(self) -> str:
        return f"TimeAverage(value={self.value}, since={self.since})"
