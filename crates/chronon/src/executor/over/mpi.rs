//! The seam a family implements to run a part over the ranks of an `mpirun` (`transport/mpi/`).

use crate::error::SimError;
use crate::executor::family::Family;
use crate::executor::part_out::PartOut;
use crate::executor::RunConfig;
use crate::model::Model;

/// A family's part over the ranks of an `mpirun`.
pub(crate) trait OverRanks<M: Model>: Family<M>
where
    M::Event: crate::transport::mpi::RankSafe,
{
    /// Runs this rank's part; `states` gets this rank's LPs' final states. An error is one
    /// every rank reports alike, or one that reached every rank already (the protocols stop
    /// every rank on a failure).
    fn run_part(
        &self,
        model: &M,
        cfg: &RunConfig,
        comm: &crate::transport::mpi::comm::RankComm,
        states: &mut Vec<Option<M::State>>,
    ) -> Result<PartOut, SimError>;
}
