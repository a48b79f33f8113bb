//! Time Warp over MPI ranks (`mpirun -n R chronon run … --sync timewarp --threads W`): R ranks
//! of W worker threads each; a worker is (rank, thread), numbered `r * W + t`, and the LP
//! mapping, event ids and GVT report slots are over all `R × W` workers. Inside a rank the
//! workers reach each other as with threads (mailboxes, zero copy); a flush to a worker of
//! another rank hands the batch to the rank's `outgoing` mailbox (`RankWires`,
//! `transport/mpi/tw.rs`), which only the rank's **driver** thread empties (`driver.rs`): it
//! serializes the messages into one record per destination rank (`transport/mpi/tw_codec.rs`),
//! tagged with its GVT colour, and hands them to the rank layer (`transport::mpi::comm`); it
//! decodes what arrives into the workers' mailboxes, and runs GVT across ranks (`dgvt.rs`:
//! Mattern's algorithm over reductions, with the in-rank round of `gvt.rs` as its local
//! round). The worker loop is the unchanged Time Warp worker. Protocol and proof sketch:
//! README.md beside `dgvt.rs` ("GVT across ranks", "Across ranks").

pub(super) mod driver;
pub(super) mod pump;
mod run;
