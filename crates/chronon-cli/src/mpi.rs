//! `chronon run` over MPI ranks (`mpirun -n R chronon run <model> --sync window|lockstep|
//! null-message --threads W [--ranks R]`): detection, MPI's lifetime for the run, and the
//! per-model hook. Rank 0 prints the summary, writes the report, draws progress and says
//! errors; the other ranks stay quiet and exit with the same code.

use crate::Failure;

/// Whether this process is a rank other than 0 of an `mpirun` (it prints nothing of its own).
/// Read from the launcher's environment, so it holds in a build without MPI support too.
pub(crate) fn quiet() -> bool {
    chronon::mpi::launched().is_some_and(|(rank, _)| rank != 0)
}

/// MPI for one run, while it lasts (finalized when dropped).
#[cfg(feature = "mpi")]
pub(crate) struct Guard {
    _mpi: chronon::mpi::Mpi,
}
/// Without the `mpi` feature no run gets this far over ranks.
#[cfg(not(feature = "mpi"))]
#[derive(Debug)]
pub(crate) enum Guard {}

/// Whether this run is over MPI ranks (`--ranks` given, or started by `mpirun` with more than
/// one rank), and if so MPI, initialized; a build without the feature says so in one line.
pub(crate) fn start(ranks: Option<usize>, procs: Option<usize>) -> Result<Option<Guard>, Failure> {
    let launched = chronon::mpi::launched();
    if ranks.is_none() && launched.is_none() {
        return Ok(None);
    }
    if !chronon::mpi::COMPILED {
        return Err(Failure::bad_input(chronon::mpi::NOT_COMPILED));
    }
    if let Some(p) = procs {
        return Err(Failure::bad_input(format!(
            "--procs {p} and MPI ranks do not mix: use --threads inside each rank"
        )));
    }
    init(ranks)
}

#[cfg(feature = "mpi")]
fn init(ranks: Option<usize>) -> Result<Option<Guard>, Failure> {
    if ranks == Some(0) {
        return Err(Failure::bad_input("--ranks is 0; it must be at least 1"));
    }
    let mpi = chronon::mpi::Mpi::init().map_err(|e| Failure::runtime(e.to_string()))?;
    match ranks {
        Some(r) if r != mpi.size() => Err(Failure::bad_input(format!(
            "--ranks {r} but mpirun started {} rank{}: run `mpirun -n {r} chronon run ...`",
            mpi.size(),
            if mpi.size() == 1 { "" } else { "s" }
        ))),
        _ => {
            // `chronon-rank-R` in `ps`, beside its waiting parent `chronon-parent`
            // (`rank_fault/`); it also tells the tests that this rank is past `MPI_Init`.
            #[cfg(target_os = "linux")]
            crate::rank_fault::name_rank(mpi.rank());
            Ok(Some(Guard { _mpi: mpi }))
        }
    }
}

#[cfg(not(feature = "mpi"))]
fn init(_ranks: Option<usize>) -> Result<Option<Guard>, Failure> {
    Err(Failure::bad_input(chronon::mpi::NOT_COMPILED))
}
