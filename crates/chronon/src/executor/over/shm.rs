//! The seam a family implements to run a part over worker processes on one machine (the
//! shared-memory transport, `transport/shm/`).

use crate::error::SimError;
use crate::executor::family::Family;
use crate::executor::part_out::PartOut;
use crate::executor::RunConfig;
use crate::model::Model;

/// A family's part over worker processes on one machine (the shared-memory transport).
pub(crate) trait OverProcs<M: Model>: Family<M>
where
    M::Event: crate::shm::ShmSafe,
{
    /// The parent's net segment for `workers` workers (every process attaches it).
    fn create_net(&self, workers: usize) -> std::io::Result<crate::shm::Segment>;

    /// Runs this process's part (`w.index` of `w.procs`) over the net segment (descriptor 1)
    /// and the control segment; `states` gets this part's LPs' final states (for
    /// `Model::finish` requests). `copy`: the copy transport instead of zero copy.
    #[allow(clippy::too_many_arguments)]
    fn run_part(
        &self,
        model: &M,
        cfg: &RunConfig,
        w: &mut crate::shm::Worker,
        control: &crate::shm::Control,
        states: &mut Vec<Option<M::State>>,
        copy: bool,
    ) -> Result<PartOut, SimError>;
}
