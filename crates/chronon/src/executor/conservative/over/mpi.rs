//! The conservative family's part over the ranks of an `mpirun` (`transport/mpi/`: batches
//! between ranks, the GSU's snapshot as a reduction).

use super::super::parts::{run_part, Conservative};
use super::super::Protocol;
use crate::error::SimError;
use crate::executor::over::mpi::OverRanks;
use crate::executor::part_out::PartOut;
use crate::executor::RunConfig;
use crate::model::Model;
use crate::queue::with_queue;

impl<M: Model> OverRanks<M> for Conservative<'_>
where
    M::Event: crate::transport::mpi::RankSafe,
{
    fn run_part(
        &self,
        model: &M,
        cfg: &RunConfig,
        comm: &crate::transport::mpi::comm::RankComm,
        states: &mut Vec<Option<M::State>>,
    ) -> Result<PartOut, SimError> {
        let (rank, ranks, threads) = (comm.rank(), comm.size(), self.cc.threads);
        let null = self.protocol == Protocol::NullMessage;
        let net = crate::transport::mpi::net::MpiNet::<M::Event>::new(comm, threads, null);
        let base = rank * threads;
        let part = (rank, ranks);
        let endpoint = |g| net.endpoint(g - base);
        let out = with_queue!(
            cfg.queue,
            run_part::<M, _>(model, cfg, self, part, states, &endpoint)
        );
        // A batch that did not decode is this rank's error, whatever its part returned.
        match net.decode_error() {
            Some(e) => Err(SimError::Process(format!("rank {rank}: {e}"))),
            None => out,
        }
    }
}
