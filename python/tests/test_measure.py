"""Tally and TimeAverage kept in LP states and merged by finish: the report's derived means."""

import math

import pytest

import chronon_pdes as chronon


class Levels:
    """Each LP records the observations 2 and 4 and holds a level of 1 from t=2 to t=6, then 0;
    the run ends at 8, after the last event, so the time average must close at the end."""

    lps = 2
    lookahead = 1.0
    end = 8.0

    def init(self, ctx):
        ctx.send(ctx.me(), 2.0, "up")
        return {"waits": chronon.Tally(), "level": chronon.TimeAverage()}

    def on_event(self, st, event, ctx):
        if event == "up":
            st["waits"].record(2.0)
            st["level"].update(ctx.now(), 1.0)
            ctx.send(ctx.me(), 4.0, "down")
        else:
            st["waits"].record(4.0)
            st["level"].update(ctx.now(), 0.0)

    def finish(self, lp, st, stats):
        stats.tally("wait", st["waits"])
        stats.time_average("level", st["level"])


@pytest.mark.parametrize("options", [{}, {"sync": "window", "threads": 2},
                                     {"sync": "timewarp", "threads": 2}])
def test_tally_and_time_average_in_the_report(options):
    s = chronon.run(Levels(), **options).model_stats
    assert s["wait.n"] == 4
    assert s["wait.mean"] == pytest.approx(3.0)
    assert s["wait.sd"] == pytest.approx(math.sqrt(4.0 / 3.0))
    assert s["wait.min"] == 2.0 and s["wait.max"] == 4.0
    # Level 1 for 4 of 8 time units on each LP; the time is the whole run on both.
    assert s["level.time"] == pytest.approx(16.0)
    assert s["level.mean"] == pytest.approx(0.5)


class Held(Levels):
    def on_event(self, st, event, ctx):
        st["level"].update(ctx.now(), 3.0)      # held from t=2 to the end (8)


def test_time_average_closes_at_the_end():
    s = chronon.run(Held(), end=8.0).model_stats
    assert s["level.mean"] == pytest.approx(3.0 * 6.0 / 8.0)


def test_local_figures():
    t = chronon.Tally()
    assert math.isnan(t.mean)
    for x in (1.0, 2.0, 6.0):
        t.record(x)
    assert (t.n, t.mean, t.min, t.max) == (3, 3.0, 1.0, 6.0)
    a = chronon.TimeAverage(start=1.0)
    a.add(3.0, 2.0)
    assert a.mean(5.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="before its last change"):
        a.update(2.0, 0.0)
