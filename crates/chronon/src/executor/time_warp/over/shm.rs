//! Time Warp's part over worker processes: Time Warp's records on the shared-memory ring mesh
//! (`transport/shm/tw.rs`), the GVT registers in its header, and the end barrier every worker of
//! every process passes before anyone takes its leftovers.

use std::time::Instant;

use super::super::gvt::GvtRegisters;
use super::super::options::TimeWarpConfig;
use super::super::parts::{part_out, TimeWarp};
use super::super::setup::{build, spawn, Built};
use crate::error::{io_error, SimError};
use crate::executor::over::shm::OverProcs;
use crate::executor::part_out::{PartOut, ABORTED};
use crate::executor::RunConfig;
use crate::model::Model;
use crate::queue::{with_queue, PendingSet};
use crate::transport::shm::ShmWires;
use crate::tw_msg::TwEvent;

impl<M: Model> OverProcs<M> for TimeWarp<'_>
where
    M::Event: crate::shm::ShmSafe,
{
    fn create_net(&self, workers: usize) -> std::io::Result<crate::shm::Segment> {
        let header = GvtRegisters::shared_bytes(workers);
        let seg = ShmWires::<M::Event>::create(workers, header)?;
        // Safety: the registers are the mesh's header, at the start of the fresh segment,
        // page-aligned, `shared_bytes` long, and no process has attached yet.
        unsafe { GvtRegisters::init_shared(seg.base(), workers) };
        Ok(seg)
    }

    fn run_part(
        &self,
        model: &M,
        cfg: &RunConfig,
        w: &mut crate::shm::Worker,
        control: &crate::shm::Control,
        states: &mut Vec<Option<M::State>>,
        copy: bool,
    ) -> Result<PartOut, SimError> {
        let (threads, opts) = (self.threads, self.opts);
        let args = (threads, opts, copy);
        with_queue!(
            cfg.queue,
            child_run::<M>(model, cfg, args, w, control, states)
        )
    }
}

fn child_run<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    (threads, opts, copy): (usize, &TimeWarpConfig, bool),
    w: &mut crate::shm::Worker,
    control: &crate::shm::Control,
    states: &mut Vec<Option<M::State>>,
) -> Result<PartOut, SimError>
where
    M::Event: crate::shm::ShmSafe,
{
    let (p, procs) = (w.index, w.procs);
    let (n, base) = (procs * threads, p * threads);
    let seg = w
        .segment(1)
        .map_err(io_error("worker process: the rings segment"))?;
    let header = GvtRegisters::shared_bytes(n);
    let mut wires = ShmWires::<M::Event>::attach(
        seg,
        header,
        control.clone(),
        n,
        p as u32,
        base,
        threads,
        copy,
    )
    .map_err(io_error("worker process: the rings segment"))?;
    // Safety: the parent initialized the registers in the mesh's header for `n` workers
    // before starting this process; `keep` keeps the segment mapped.
    let gvt = unsafe { GvtRegisters::attach_shared(wires.header(), n, wires.keep()) };
    wires.keep_at_end = cfg.saving();
    let Built {
        sh,
        parts,
        counters: init_counters,
        report,
        saving,
    } = build::<M, Q>(
        model,
        cfg,
        n,
        opts,
        None,
        base..base + threads,
        Some((Box::new(wires), gvt)),
    )?;
    let start = Instant::now();
    let results = spawn(&sh, base, parts, |w| {
        // Every worker of every process stops sending before anyone takes its leftovers.
        let _ = sh.wires.end_barrier(w);
    });
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(e) = sh.take_error() {
        return Err(e);
    }
    if results.iter().any(|r| !r.4) && control.aborted().is_some() {
        return Err(SimError::Process(ABORTED.into()));
    }
    let pending = sh.wires.unsent();
    let mut out = part_out(
        model,
        cfg,
        &sh,
        results,
        init_counters,
        pending,
        base,
        (report.init_s, wall_s),
        states,
        (opts, saving),
    )?;
    // The transport's own figure, per worker (as under the conservative protocols).
    for (k, figures) in out.workers.iter_mut().enumerate() {
        figures.insert(
            "ring_full_retries".into(),
            sh.wires.full_retries(base + k) as f64,
        );
    }
    Ok(out)
}
