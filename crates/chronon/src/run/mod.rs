//! The part runner: a run across parts — worker processes on one machine (`procs/`, the
//! shared-memory transport) or the ranks of an `mpirun` (`ranks.rs`, MPI) — for every protocol
//! family, written once. It checks the run (`checks.rs`: what no family can do across parts,
//! and the signature every part must share), starts or joins the parts, runs each part's share
//! through the family ([`OverProcs`], [`OverRanks`]), gathers the parts' outputs and
//! `model_stats` in LP order (`coordinate.rs`), picks the run's error, and has the family make
//! the one report ([`Family::report`]), to which it adds the transport's figures.
//!
//! It sits between the builder (`sim/`) and the executors: it names the families' seams
//! (`executor::family`), never a protocol's insides; the families never name it.
//!
//! [`Family::report`]: crate::executor::family::Family::report
//! [`OverProcs`]: crate::executor::family::OverProcs
//! [`OverRanks`]: crate::executor::family::OverRanks

#[cfg(any(all(target_os = "linux", not(chronon_loom)), feature = "mpi"))]
pub(crate) mod checks;
#[cfg(any(all(target_os = "linux", not(chronon_loom)), feature = "mpi"))]
pub(crate) mod coordinate;
#[cfg(all(target_os = "linux", not(chronon_loom)))]
pub(crate) mod procs;
#[cfg(feature = "mpi")]
pub(crate) mod ranks;

#[cfg(any(all(target_os = "linux", not(chronon_loom)), feature = "mpi"))]
/// What every transport across parts adds to the family's report: where the workers ran (the
/// plan for `workers` workers and what each part said of its own, `placement::gathered`), the
/// workers over every part, and the parts' peak resident sets summed (the calling process's own
/// is the CLI's `peak_rss_bytes`).
fn transport_figures(
    report: &mut crate::stats::Report,
    pin: crate::placement::Pin,
    workers: usize,
    peak_rss: u64,
) {
    report.placement = crate::placement::gathered(pin, workers, &report.workers);
    let st = &mut report.executor_stats;
    st.insert("workers_total".into(), workers as f64);
    st.insert("workers_peak_rss_bytes".into(), peak_rss as f64);
}

/// The family of a parallel executor, for a run across parts (`across`: the setting that asked
/// for them).
#[cfg(any(all(target_os = "linux", not(chronon_loom)), feature = "mpi"))]
pub(crate) enum Families<'a> {
    Conservative(crate::executor::conservative::Conservative<'a>),
    TimeWarp(crate::executor::time_warp::TimeWarp<'a>),
}

#[cfg(any(all(target_os = "linux", not(chronon_loom)), feature = "mpi"))]
impl<'a> Families<'a> {
    pub(crate) fn of(
        executor: &'a crate::executor::Executor,
        across: crate::error::Setting,
    ) -> Result<Self, crate::error::SimError> {
        use crate::executor::conservative::{Conservative, Protocol};
        use crate::executor::Executor;
        let conservative = |protocol, cc| Families::Conservative(Conservative { protocol, cc });
        Ok(match executor {
            Executor::Window(c) => conservative(Protocol::Window, c),
            Executor::NullMessage(c) => conservative(Protocol::NullMessage, c),
            Executor::Lockstep(c) => conservative(Protocol::Lockstep, c),
            Executor::TimeWarp(c) => Families::TimeWarp(crate::executor::time_warp::TimeWarp {
                threads: c.threads,
                opts: c,
            }),
            Executor::Sequential => {
                let (setting, what) = match across {
                    crate::error::Setting::Ranks => {
                        (crate::error::Setting::Executor, "a run over MPI ranks")
                    }
                    other => (other, "$processes"),
                };
                return Err(crate::error::SimError::config(
                    setting,
                    format!("{what} needs a parallel $executor (window, lockstep, null-message or timewarp), not seq"),
                ));
            }
        })
    }
}
