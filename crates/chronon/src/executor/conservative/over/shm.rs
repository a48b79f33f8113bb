//! The conservative family's part over worker processes (the shared-memory transport: the
//! ring mesh and the GSU registers of the control segment, `transport/shm/`).

use super::super::parts::{run_part, Conservative};
use crate::error::SimError;
use crate::executor::over::shm::OverProcs;
use crate::executor::part_out::PartOut;
use crate::executor::RunConfig;
use crate::model::Model;
use crate::queue::with_queue;

impl<M: Model> OverProcs<M> for Conservative<'_>
where
    M::Event: crate::shm::ShmSafe,
{
    fn create_net(&self, workers: usize) -> std::io::Result<crate::shm::Segment> {
        crate::transport::shm::ShmNet::create::<M::Event>(workers)
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
        let (p, procs) = (w.index, w.procs);
        let n = procs * self.cc.threads;
        let rings = crate::error::io_error("worker process: the rings segment");
        let seg = w.segment(1).map_err(&rings)?;
        let net = crate::transport::shm::ShmNet::attach::<M::Event>(
            seg,
            control.clone(),
            n,
            p as u32,
            copy,
        )
        .map_err(rings)?;
        let part = (p, procs);
        let endpoint = |g| net.endpoint::<M::Event>(g);
        with_queue!(
            cfg.queue,
            run_part::<M, _>(model, cfg, self, part, states, &endpoint)
        )
    }
}
