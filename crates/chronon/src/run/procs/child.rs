//! A worker process of a run over processes, for every family: check that it reached the run
//! its parent started, attach the control segment and the shared heaps' directory, run the
//! family's part, report to the parent, serve its `Model::finish` requests, check that every
//! shared-heap item came back, and exit.

use std::time::Instant;

use super::parent::{read_msg, write_msg};
use super::RUN_ENV;
use crate::error::io_error;
use crate::error::{Setting, SimError};
use crate::executor::part_out::{encode, PartOut};
use crate::model::Model;
use crate::run::coordinate::serve_finish;
use crate::shm::registry::{set_directory, Directory};
use crate::shm::Control;

/// A child's part of every run over processes (every family): checks that it
/// reached the run its parent started, attaches the control segment, runs `run`, writes its
/// report, answers the parent's `Model::finish` requests on the LP states `run` left, and
/// exits the process.
pub(crate) fn child_main<M: Model>(
    model: &M,
    mut w: crate::shm::Worker,
    sig: &str,
    run: impl FnOnce(
        &mut crate::shm::Worker,
        &Control,
        &mut Vec<Option<M::State>>,
    ) -> Result<PartOut, SimError>,
) -> ! {
    let (Ok(pipe), Ok(requests)) = (w.fd(2 + w.index), w.fd(2 + w.procs + w.index)) else {
        eprintln!("chronon: worker process {}: no report pipe", w.index);
        std::process::exit(3)
    };
    // Per LP: its final state where this process holds it.
    let mut states: Vec<Option<M::State>> = Vec::new();
    let out = match std::env::var(RUN_ENV) {
        Ok(s) if s == sig => match Control::attach(w.segment(0).unwrap_or_else(|_| exit_no_segment())) {
            Ok(control) => {
                let out = attach_heaps(&mut w).and_then(|()| run(&mut w, &control, &mut states));
                out.unwrap_or_else(|e| {
                    // Nobody may wait for this process at a barrier.
                    control.abort(w.index as u32);
                    PartOut::failed(e)
                })
            }
            Err(e) => PartOut::failed(SimError::Process(format!("control segment: {e}"))),
        },
        other => PartOut::failed(SimError::config(Setting::Run, format!(
            "a worker process reached a different multi-process run ({sig}) than its parent started ({}): every process must build the same simulation before calling run",
            other.unwrap_or_default()
        ))),
    };
    // A failed part leaves events in flight (in rings, in other processes' queues) whose
    // items never come back: its heaps are not checked, and its error (in its report) is the
    // run's, not a leak.
    let failed = out.result.is_err();
    let mut out = out;
    out.trace = crate::trace::take_keys();
    let mut pipe = std::fs::File::from(pipe);
    if write_msg(&mut pipe, &encode(&out)).is_err() {
        std::process::exit(3)
    }
    // Finish requests for this process's LPs whose `finish` reads figures, until the parent
    // closes the pipe.
    let mut requests = std::fs::File::from(requests);
    while let Some(req) = read_msg(&mut requests) {
        let Some(reply) = serve_finish(model, &states, &req) else {
            std::process::exit(3)
        };
        if write_msg(&mut pipe, &reply).is_err() {
            std::process::exit(3)
        }
    }
    drop(states);
    if failed {
        std::process::exit(0)
    }
    check_heaps_at_exit(w.index)
}

/// Every item of this process's shared heaps must come back once every process has dropped
/// its events and states (the last ones drop theirs as the parent closes the request pipes):
/// wait a little for them, then exit, with code 4 and one line if some never came back.
fn check_heaps_at_exit(p: usize) -> ! {
    let deadline = Instant::now() + std::time::Duration::from_secs(3);
    let mut left = crate::shm::local::outstanding_items();
    while left != 0 && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
        left = crate::shm::local::outstanding_items();
    }
    if left != 0 && crate::preempt::interrupt::used() {
        // Every process runs the same configuration: ticks that interrupt ran in all of them,
        // and an event dropped after an interrupt leaks what its handler held, shared-heap
        // items included (preempt/README.md, "Ticks that preempt").
        eprintln!(
            "chronon: worker process {p}: {left} shared-heap items were not freed; with ticks \
             that interrupt, events dropped mid-handler leak what their handlers held"
        );
        std::process::exit(0)
    }
    if left != 0 {
        eprintln!(
            "chronon: worker process {p}: {left} shared-heap items were never freed (a BPtr leaked)"
        );
        std::process::exit(4)
    }
    std::process::exit(0)
}

/// Shared heaps: this process's thread heaps take owner numbers from its share and announce
/// their segments in the run's directory (descriptor 2 + 2P), where other processes find them.
fn attach_heaps(w: &mut crate::shm::Worker) -> Result<(), SimError> {
    let (p, procs) = (w.index, w.procs);
    crate::shm::local::set_worker_process(p, procs);
    let dir = w
        .segment(2 + 2 * procs)
        .map_err(io_error("worker process: the heap directory"))?;
    // Safety: the parent made descriptor 2 + 2P with `Directory::create`.
    let dir = unsafe { Directory::attach(dir) }
        .map_err(io_error("worker process: the heap directory"))?;
    if set_directory(dir).is_err() {
        return Err(SimError::Process(
            "worker process: a heap directory was already set".into(),
        ));
    }
    Ok(())
}

fn exit_no_segment() -> ! {
    eprintln!("chronon: worker process: no control segment");
    std::process::exit(3)
}
