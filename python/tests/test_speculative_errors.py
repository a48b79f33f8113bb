"""Under Time Warp an event may run on a path that a rollback later undoes. An exception it
raises there must not end the run: it counts only if its event commits (then the run fails with
that exception, even when others were raised on undone paths first)."""

import time

import pytest

import chronon_pdes as chronon


class Straggler:
    """LP 0 sends LP 1 a message for t=5 after a slow handler; LP 1's own event at t=10 raises
    unless that message came first, which holds in the committed history but not on the
    optimistic path where LP 1 runs t=10 before the message arrives. With ``fail_at`` LP 1
    also raises, for real, at that time."""

    lps = 2
    lookahead = 1.0
    end = 20.0
    fail_at = None

    def init(self, ctx):
        if ctx.me() == 0:
            ctx.send(0, 4.0, "work")
        else:
            ctx.send(1, 10.0, "tick")
            if self.fail_at is not None:
                ctx.send(1, self.fail_at, "fail")
        return {"seen": False}

    def on_event(self, st, event, ctx):
        if event == "work":
            time.sleep(0.3)                      # LP 1's worker runs ahead meanwhile
            ctx.send(1, 1.0, "message")
        elif event == "message":
            st["seen"] = True
        elif event == "tick":
            if not st["seen"]:
                raise LookupError("t=10 before the message: a path the straggler undoes")
        elif event == "fail":
            raise ArithmeticError("raised in the committed history")


class FailsAt12(Straggler):
    fail_at = 12.0


@pytest.mark.parametrize("options", [{"threads": 2}, {"threads": 1, "procs": 2}])
def test_an_exception_on_an_undone_path_does_not_end_the_run(options):
    seq = chronon.run(Straggler(), progress=False)
    r = chronon.run(Straggler(), sync="timewarp", progress=False, **options)
    assert r.rolled_back > 0, "LP 1 did not run ahead of the message: nothing was tested"
    assert (r.fingerprint, r.committed) == (seq.fingerprint, seq.committed)


@pytest.mark.parametrize("options", [{"threads": 2}, {"threads": 1, "procs": 2}])
def test_the_committed_exception_is_the_one_raised(options):
    with pytest.raises(chronon.ModelError) as info:
        chronon.run(FailsAt12(), sync="timewarp", progress=False, **options)
    err = info.value
    assert (err.lp, err.time) == (1, 12.0)
    assert isinstance(err.__cause__, ArithmeticError), repr(err.__cause__)
    assert "committed history" in str(err)
