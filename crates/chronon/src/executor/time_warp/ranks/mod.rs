//! Time Warp over MPI ranks (`mpirun -n R chronon run … --sync timewarp --threads W`): R ranks
//! of W worker threads each; a worker is (rank, thread), numbered `r * W + t`, and the LP
//! mapping, event ids and GVT report slots are over all `R × W` workers. Inside a rank the
//! workers reach each other as with threads (mailboxes, zero copy); a flush to a worker of
//! another rank hands the batch to the rank's `outgoing` mailbox (`RankWires`,
//! `transport/mpi/tw.rs`), which only the rank's **driver** empties (`driver.rs`), through the
//! transport between ranks (`RankNet`; over MPI `transport/mpi/tw_link.rs`: one record per
//! destination rank, tagged with its GVT colour, decoded on arrival into the workers'
//! mailboxes); the driver runs GVT across ranks (`dgvt.rs`: Mattern's algorithm over the
//! transport's reduction, with the in-rank round of `gvt.rs` as its local round). The worker
//! loop is the unchanged Time Warp worker. Protocol and proof sketch: README.md beside
//! `dgvt.rs` ("GVT across ranks", "Across ranks").

pub(super) mod driver;
pub(super) mod pump;
mod run;
