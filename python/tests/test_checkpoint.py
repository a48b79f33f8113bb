"""Checkpoint and restart of a model written in Python: its LP states and pending events are
saved as pickles, and a run restored from them, under any executor, commits the history of the
run never interrupted."""

import os
import pathlib

import pytest

import chronon_pdes as chronon
import models

END = 20.0


def tandem():
    # Busier than the default (four stations, about one arrival per time unit), so that the
    # checkpoints hold queued customers in the states and several kinds of pending events.
    return models.Tandem(stations=4, rate=1.0, service=1.5, end=END)


def same_history(r, whole):
    assert r.complete
    assert r.fingerprint == whole.fingerprint
    assert r.committed == whole.committed
    assert r.model_stats == whole.model_stats


def test_checkpoints_and_restores_keep_the_history(tmp_path):
    # (a) The run never interrupted.
    whole = chronon.run(tandem(), end=END)
    assert whole.complete and whole.committed > 50
    assert whole.checkpoints == [] and whole.restored is None and whole.checkpoint_error is None

    # (b) The same run saving a checkpoint every 5 time units (the directory as a pathlib.Path).
    saved = chronon.run(tandem(), end=END, checkpoint_every=5, checkpoint_dir=tmp_path)
    same_history(saved, whole)
    assert saved.checkpoint_error is None
    assert [c.cut for c in saved.checkpoints] == [5.0, 10.0, 15.0]
    for c in saved.checkpoints:
        assert pathlib.Path(c.path).resolve() == (tmp_path / f"t{c.cut:g}").resolve()
        assert os.path.isfile(os.path.join(c.path, "manifest.json"))
        assert c.bytes > 0 and c.seconds >= 0
    assert saved.restored is None

    # (c) Continued from t = 10 under Time Warp on two threads: the same history.
    rest = chronon.run(tandem(), end=END, restore=str(tmp_path / "t10"), sync="timewarp", threads=2)
    same_history(rest, whole)
    assert rest.restored.cut == 10.0
    assert pathlib.Path(rest.restored.path).resolve() == (tmp_path / "t10").resolve()
    assert 0 < rest.restored.committed < whole.committed
    assert rest.restored.get("reseed") is None
    assert rest.checkpoints == []

    # ... and sequentially, from the other checkpoints.
    for cut in (5, 15):
        same_history(chronon.run(tandem(), end=END, restore=str(tmp_path / f"t{cut}")), whole)

    # (d) Reseeded at the cut: every LP draws new numbers from t = 10 on, another history.
    branch = chronon.run(tandem(), end=END, restore=str(tmp_path / "t10"), reseed=3)
    assert branch.complete
    assert branch.restored.reseed == 3
    assert branch.fingerprint != whole.fingerprint
    # The same branch again (a Path this time): reseeding is deterministic.
    again = chronon.run(tandem(), end=END, restore=tmp_path / "t10", reseed=3)
    assert again.fingerprint == branch.fingerprint


def test_checkpoints_between_worker_processes(tmp_path):
    # In a worker process events are pickled bytes in the shared heap: saved as they are, and
    # restored into the heap of the process that owns their LP.
    whole = chronon.run(tandem(), end=END)
    saved = chronon.run(tandem(), end=END, checkpoint_every=5, checkpoint_dir=str(tmp_path),
                        sync="window", threads=1, procs=2)
    same_history(saved, whole)
    assert [c.cut for c in saved.checkpoints] == [5.0, 10.0, 15.0]
    # Saved by two processes; restored sequentially, and by two processes under Time Warp.
    same_history(chronon.run(tandem(), end=END, restore=str(tmp_path / "t10")), whole)
    same_history(chronon.run(tandem(), end=END, restore=str(tmp_path / "t5"),
                             sync="timewarp", threads=1, procs=2), whole)
    # Saved sequentially, restored by two processes.
    seq = tmp_path / "seq"
    chronon.run(tandem(), end=END, checkpoint_at=10, checkpoint_dir=seq)
    same_history(chronon.run(tandem(), end=END, restore=seq / "t10", sync="null-message",
                             threads=2, procs=2), whole)


def test_a_state_that_does_not_pickle_is_a_clear_error(tmp_path):
    # The state holds a lambda: the checkpoint at t = 5 cannot be written. The run stops at
    # that cut and fails with a message naming the pickling error; the exception carries the
    # report of the events before the cut, and no checkpoint is left behind.
    with pytest.raises(chronon.ChrononError, match="cannot be pickled") as caught:
        chronon.run(models.LambdaState(end=END), end=END, checkpoint_every=5,
                    checkpoint_dir=str(tmp_path))
    assert "state" in str(caught.value)
    r = caught.value.report
    assert r is not None and not r.complete
    assert "cannot be pickled" in r.checkpoint_error
    assert r.checkpoints == []
    assert not (tmp_path / "t5").exists()
