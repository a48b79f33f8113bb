//! The MPI transport: workers are (rank, thread) pairs over the ranks of an `mpirun`, numbered
//! `r * W + t`. Inside a rank events move between threads as with the threads transport
//! (mailboxes, zero copy); between ranks they are serialized (serde + bincode) into one batch per
//! destination rank and sent with non-blocking sends (`comm.rs`). Protocol, invariants and proof
//! sketch: `README.md` beside this file.
//!
//! Always compiled: detecting that this process was started by `mpirun` ([`launched`]) and the
//! message a build without the `mpi` feature gives. With the feature: [`Mpi`] (MPI's lifetime
//! in this process), the rank communication layer (`comm.rs`, shared with Time Warp over MPI),
//! the field codec (`codec.rs`), the conservative endpoint (`net.rs`), and Time Warp's
//! worker seam (`tw.rs`) and data path between ranks (`tw_link.rs`: sends, receives, the end's
//! settling and GVT's reduction; records laid out by `tw_codec.rs`). The runs over ranks are
//! the part runner's (`run/ranks.rs`) over each family's part (`executor/conservative/over/`,
//! `executor/time_warp/ranks/`).

#[cfg(feature = "mpi")]
mod bench;
#[cfg(feature = "mpi")]
pub(crate) mod codec;
#[cfg(feature = "mpi")]
pub(crate) mod comm;
#[cfg(feature = "mpi")]
pub(crate) mod net;
#[cfg(feature = "mpi")]
mod tw;
#[cfg(feature = "mpi")]
mod tw_codec;
#[cfg(feature = "mpi")]
mod tw_link;

#[cfg(feature = "mpi")]
pub(crate) use tw::RankWires;
#[cfg(feature = "mpi")]
pub(crate) use tw_link::RankLink;

/// Whether this build has MPI support (the cargo feature `mpi`).
pub const COMPILED: bool = cfg!(feature = "mpi");

/// What a build without MPI support says when asked to run over ranks.
pub const NOT_COMPILED: &str = "MPI support is not compiled in: rebuild with `cargo build --release --features mpi` (needs the packages mpich libmpich-dev libclang-dev)";

/// `(rank, size)` when this process was started by `mpirun`/`mpiexec` with more than one rank,
/// read from the environment the launcher sets (MPICH's hydra: `PMI_RANK`, `PMI_SIZE`; Open
/// MPI: `OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`). Works without the `mpi` feature, so
/// such a build can refuse plainly instead of running R independent copies.
pub fn launched() -> Option<(usize, usize)> {
    let get = |k: &str| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
    };
    let pair = match (get("PMI_RANK"), get("PMI_SIZE")) {
        (Some(r), Some(s)) => Some((r, s)),
        _ => get("OMPI_COMM_WORLD_RANK").zip(get("OMPI_COMM_WORLD_SIZE")),
    };
    pair.filter(|&(r, s)| s > 1 && r < s)
}

/// What the events of a model must be to cross ranks: serde both ways (a `BPtr` payload
/// serializes the item it points to; the receiver allocates a copy in its own heap).
#[cfg(feature = "mpi")]
pub trait RankSafe: serde::Serialize + serde::de::DeserializeOwned + Send + 'static {}
#[cfg(feature = "mpi")]
impl<T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static> RankSafe for T {}

#[cfg(feature = "mpi")]
pub use api::Mpi;
#[cfg(feature = "mpi")]
pub use bench::lbts_gather_secs;

#[cfg(feature = "mpi")]
mod api {
    use crate::error::SimError;
    use mpi::point_to_point::{Destination, Source};
    use mpi::topology::Communicator;

    /// The tag of [`Mpi::send_bytes`] messages (runs use their own communicator and tags).
    const TAG_TOOL: i32 = 100;

    /// MPI in this process: initialized by [`Mpi::init`] (with `MPI_THREAD_SERIALIZED`: every
    /// MPI call chronon makes holds one lock per rank; see README.md), finalized when dropped.
    /// Keep it alive across every [`Simulation::ranks`](crate::Simulation::ranks) run.
    pub struct Mpi {
        universe: Option<mpi::environment::Universe>,
        rank: usize,
        size: usize,
    }

    impl std::fmt::Debug for Mpi {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Mpi")
                .field("rank", &self.rank)
                .field("size", &self.size)
                .finish()
        }
    }

    impl Mpi {
        /// Initializes MPI (once per process).
        pub fn init() -> Result<Mpi, SimError> {
            use mpi::Threading;
            let (universe, provided) = mpi::initialize_with_threading(Threading::Serialized)
                .ok_or_else(|| SimError::Process("MPI was already initialized".into()))?;
            if provided < Threading::Serialized {
                return Err(SimError::Process(format!(
                    "the MPI library provides thread level {provided:?}; chronon needs MPI_THREAD_SERIALIZED"
                )));
            }
            let world = universe.world();
            Ok(Mpi {
                rank: world.rank() as usize,
                size: world.size() as usize,
                universe: Some(universe),
            })
        }

        /// This process's rank in the world.
        pub fn rank(&self) -> usize {
            self.rank
        }

        /// The number of ranks.
        pub fn size(&self) -> usize {
            self.size
        }

        /// Sends `bytes` to rank `to` (a blocking standard send on the world communicator,
        /// with a tag no run uses): for tools that share work between ranks outside a run,
        /// such as `chronon sweep` handing out its runs. Each pair of ranks keeps MPI's order.
        pub fn send_bytes(&self, to: usize, bytes: &[u8]) {
            let world = mpi::topology::SimpleCommunicator::world();
            world
                .process_at_rank(to as i32)
                .send_with_tag(bytes, TAG_TOOL);
        }

        /// A message [`Mpi::send_bytes`] sent to this rank from any rank, if one has arrived:
        /// (its sender, its bytes). Does not wait.
        pub fn try_receive_bytes(&self) -> Option<(usize, Vec<u8>)> {
            use mpi::point_to_point::MatchedReceiveVec;
            let world = mpi::topology::SimpleCommunicator::world();
            let probed = world
                .any_process()
                .immediate_matched_probe_with_tag(TAG_TOOL)?;
            let (bytes, status) = probed.matched_receive_vec::<u8>();
            Some((status.source_rank() as usize, bytes))
        }

        /// The next message [`Mpi::send_bytes`] sent to this rank from rank `from` (waits).
        pub fn receive_bytes_from(&self, from: usize) -> Vec<u8> {
            let world = mpi::topology::SimpleCommunicator::world();
            world
                .process_at_rank(from as i32)
                .receive_vec_with_tag::<u8>(TAG_TOOL)
                .0
        }

        /// Ends every rank of the run at once (`MPI_Abort`), for a fault that cannot be
        /// reported through a run.
        pub fn abort(&self, code: i32) -> ! {
            let world = mpi::topology::SimpleCommunicator::world();
            world.abort(code)
        }
    }

    impl Drop for Mpi {
        fn drop(&mut self) {
            // Finalizes MPI.
            drop(self.universe.take());
        }
    }

    /// Whether MPI was initialized in this process.
    pub(crate) fn initialized() -> bool {
        mpi::environment::is_initialized()
    }
}

#[cfg(feature = "mpi")]
pub(crate) use api::initialized;

#[cfg(test)]
mod tests {
    #[test]
    fn not_launched_without_the_launcher_variables() {
        // The test harness is not started by mpirun (CI runs it without).
        if std::env::var_os("PMI_RANK").is_none()
            && std::env::var_os("OMPI_COMM_WORLD_RANK").is_none()
        {
            assert_eq!(super::launched(), None);
        }
    }
}
