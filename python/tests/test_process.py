"""The process layer (chronon_pdes.process): each building block on chronon's LPs, bad input,
one history under every executor (Time Warp rolling back), checkpoints, and check."""

import pytest

import chronon_pdes as chronon
import process_models as pm
from process_models import trace


def script(name, **kw):
    return trace(chronon.run(pm.Script(name, **kw), progress=False))


def test_timeouts_in_time_order_and_fifo_within_a_time():
    assert script("timeouts") == [("zero", 0.0), ("a", 1.0), ("b1", 2.0), ("b2", 2.0), ("c", 3.0)]


def test_same_time_order():
    # Waiters resume in the order they waited; the trigger's own zero timeout comes after them.
    assert script("same_time") == [("trigger", 1.0), ("w1", 1.0), ("w2", 1.0), ("after zero timeout", 1.0)]


def test_resource_is_first_come_first_served():
    assert script("resource_fifo") == [
        ("u0 got", 0.0), ("u1 got", 1.0), ("u0 out", 5.0), ("u2 got", 5.0), ("u1 out", 6.0),
        ("u2 out", 6.0), ("u3 got", 6.0), ("u4 got", 6.0), ("u3 out", 7.0), ("u4 out", 7.0)]


def test_priority_resource_serves_by_priority_then_arrival():
    assert script("priorities") == [("first", 0.0), ("high", 1.0), ("mid", 2.0), ("low", 3.0), ("low2", 4.0)]


def test_store_blocks_puts_when_full_and_filter_store_picks():
    assert script("store") == [
        ("put 0", 0.0), ("put 1", 0.0), ("got 0", 5.0), ("put 2", 5.0), ("got 1", 6.0), ("put 3", 6.0),
        ("got 2", 7.0), ("got 3", 8.0), ("filtered pear", 9.0)]


def test_container_levels():
    # A get waits for the level, a put for room; both are served as soon as they fit.
    assert script("container") == [
        ("put 3, level 1", 2.0), ("took 6, level 6", 2.0), ("put 5, level 6", 2.0),
        ("took 2, level 9", 7.0), ("put 5 more, level 9", 7.0)]


def test_any_of_and_all_of():
    assert script("conditions") == [("any ['a']", 1.0), ("all ['a', 'b']", 2.0), ("empty all 0", 2.0),
                                    ("same time ['c', 'd']", 5.0)]


def test_interrupt_throws_into_the_process():
    assert script("interrupts") == [("interrupted wake up", 2.0), ("returned done", 3.0),
                                    ("dead process refused", 3.0)]


def test_cancelling_a_timeout_and_a_request():
    assert script("cancelling") == [("cancelled True", 1.0), ("queue 0", 1.0), ("count 0", 1.0),
                                    ("alarm2 rang", 6.0)]


def test_messages_between_lps_arrive_after_their_delay():
    r = chronon.run(pm.Script("messages", lps=3, lookahead=1.5), progress=False)
    for lp in range(3):
        src = (lp - 1) % 3
        assert trace(r, lp) == [(f"got {src}>{i}", i + 2.5) for i in range(3)]


@pytest.mark.parametrize("name, says", [
    ("yields_a_number", "process p yielded 5, which is not an event"),
    ("negative_timeout", r"env.timeout\(-2\): a delay must be a number >= 0"),
    ("below_lookahead", "env.send to LP 1 with delay 0.1: below the model's lookahead 1.0"),
    ("releases_twice", r"holds no unit \(released twice\?\)"),
])
def test_bad_input_is_a_one_line_error(name, says):
    with pytest.raises(chronon.ModelError, match=says) as e:
        chronon.run(pm.Script(name, lps=2), progress=False)
    assert "\n" not in str(e.value) and e.value.lp == 0 and e.value.time == 1.0


EXECUTORS = [dict(sync="window", threads=2), dict(sync="null-message", threads=2), dict(sync="lockstep", threads=2),
             dict(sync="timewarp", threads=2), dict(sync="window", threads=1, procs=2),
             dict(sync="timewarp", threads=1, procs=2)]


@pytest.fixture(scope="module")
def network_seq():
    r = chronon.run(pm.Network(), progress=False)
    assert r.complete and r.model_stats["done"] > 0
    return r


@pytest.mark.parametrize("opts", EXECUTORS, ids=lambda o: "-".join(f"{k}{v}" for k, v in o.items()))
def test_a_process_model_has_one_history_under_every_executor(network_seq, opts):
    r = chronon.run(pm.Network(), progress=False, **opts)
    assert (r.fingerprint, r.committed, r.model_stats) == \
        (network_seq.fingerprint, network_seq.committed, network_seq.model_stats)


def test_time_warp_rolls_back_processes(network_seq):
    # Stragglers depend on the threads' timing: every run must match, and at least one of up to
    # three must have rolled back (each has so far, by hundreds of events).
    rolled = 0
    for _ in range(3):
        r = chronon.run(pm.Network(), sync="timewarp", threads=2, check_reverse=True, progress=False)
        assert (r.fingerprint, r.model_stats) == (network_seq.fingerprint, network_seq.model_stats)
        rolled = r.executor_stats["rollbacks"]
        if rolled > 0 and r.rolled_back > 0:
            break
    assert rolled > 0


def test_checkpoint_and_restore_a_process_model(tmp_path, network_seq):
    saved = chronon.run(pm.Network(), checkpoint_at=30, checkpoint_dir=tmp_path, progress=False)
    assert saved.fingerprint == network_seq.fingerprint
    for opts in [dict(), dict(sync="timewarp", threads=2)]:
        rest = chronon.run(pm.Network(), restore=tmp_path / "t30", progress=False, **opts)
        assert (rest.fingerprint, rest.model_stats) == (network_seq.fingerprint, network_seq.model_stats)


def test_check_passes_a_process_model():
    res = chronon.check(pm.Network(end=30.0), runs=6, seed=3)
    assert res.ok and res.failed == 0 and res.passed >= 6


def test_lp_state_pickles_as_its_log():
    import pickle

    from chronon_pdes.process import LPState
    st = LPState(2, [(1.0, None, 0), (2.5, ("msg",), 1)], [0.25, 7])
    st.env = object()
    back = pickle.loads(pickle.dumps(st))
    assert back == st and back.env is None and back.log == st.log
    assert back != LPState(2, st.log[:1], st.draws[:1])


def test_without_a_log_the_history_is_the_same_and_saving_is_refused(network_seq, tmp_path):
    r = chronon.run(pm.Network(keep_log=False), progress=False)
    assert (r.fingerprint, r.model_stats) == (network_seq.fingerprint, network_seq.model_stats)
    with pytest.raises(chronon.ChrononError, match="keep_log = True"):
        chronon.run(pm.Network(keep_log=False), checkpoint_at=30, checkpoint_dir=tmp_path, progress=False)
