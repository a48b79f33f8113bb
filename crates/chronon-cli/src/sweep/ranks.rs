//! `mpirun -n R chronon sweep ...`: the ranks share the runs of one study. Rank 0 plans the
//! study, runs `--jobs` runs itself and hands the others out one at a time to whichever rank
//! asks first (a slow point holds up no one); it alone writes the study's directory. Every
//! other rank runs its runs as child processes in a scratch directory of its own and sends each
//! report back to rank 0 with its next request, so the ranks need no shared file system.
//!
//! The protocol: a rank with J slots sends J requests ([`Up::Ask`], the first without a
//! result), and one more each time a run of its ends (with that run's outcome). Rank 0 answers
//! every request with a run or [`Down::Stop`]; a slot told to stop asks no more. Rank 0 is done
//! with a rank once every slot it declared was told to stop, so every message sent is received,
//! on the error paths too (a bad study answers every request with `Stop`).

use std::path::PathBuf;
use std::time::Duration;

use chronon::mpi::Mpi;
use serde::{Deserialize, Serialize};

use super::pool::{Job, Local, Outcome, Remote};
use super::{plan, study_main, SweepCmd, INTERRUPTED};
use crate::Failure;

/// A request to rank 0.
#[derive(Serialize, Deserialize)]
enum Up {
    Ask {
        /// The sender's slots (the same in every request).
        slots: usize,
        /// The run that just ended in the asking slot: (its index, its outcome).
        done: Option<(usize, Outcome)>,
    },
}

/// Rank 0's answer.
#[derive(Serialize, Deserialize)]
enum Down {
    Run(Job),
    Stop,
}

fn encode<T: Serialize>(t: &T) -> Vec<u8> {
    serde_json::to_vec(t).expect("sweep messages serialize")
}

pub(super) fn run(cmd: SweepCmd, models: &crate::registry::Models) -> Result<u8, Failure> {
    let mpi = Mpi::init().map_err(|e| Failure::runtime(e.to_string()))?;
    #[cfg(target_os = "linux")]
    crate::rank_fault::name_rank(mpi.rank());
    if mpi.rank() == 0 {
        let mut ranks = Ranks::new(&mpi);
        let result = plan(cmd, models).and_then(|p| study_main(p, Some(&mut ranks)));
        // Whatever happened, every other rank is told to stop (and its last results taken).
        ranks.stop_all();
        if result.is_ok() {
            let others: Vec<String> = ranks.ran.iter().skip(1).map(|n| n.to_string()).collect();
            println!(
                "sweep: over {} ranks; ranks 1..{} ran {} runs, rank 0 the others",
                mpi.size(),
                mpi.size() - 1,
                others.join(", ")
            );
        }
        result
    } else {
        let slots = plan(cmd, models).map_or(1, |p| p.jobs);
        super::install_ctrlc();
        work(&mpi, slots)
    }
}

/// Rank 0's view of the other ranks.
struct Ranks<'a> {
    mpi: &'a Mpi,
    /// Per rank: its slots not yet told to stop (`None` until it asked once).
    open: Vec<Option<usize>>,
    /// Per rank: the runs it finished.
    ran: Vec<usize>,
}

impl<'a> Ranks<'a> {
    fn new(mpi: &'a Mpi) -> Self {
        Ranks {
            mpi,
            open: vec![None; mpi.size()],
            ran: vec![0; mpi.size()],
        }
    }

    /// Answers every request with `Stop` until each rank has stopped.
    fn stop_all(&mut self) {
        let mut pause = Duration::from_micros(100);
        while !self.done() {
            if self.poll(&mut || None).is_empty() {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(10));
            }
        }
    }
}

impl Remote for Ranks<'_> {
    fn poll(&mut self, next: &mut dyn FnMut() -> Option<Job>) -> Vec<(usize, Outcome)> {
        let mut ended = Vec::new();
        while let Some((src, bytes)) = self.mpi.try_receive_bytes() {
            let Ok(Up::Ask { slots, done }) = serde_json::from_slice::<Up>(&bytes) else {
                continue;
            };
            let open = self.open[src].get_or_insert(slots);
            if let Some(d) = done {
                self.ran[src] += usize::from(matches!(d.1, Outcome::Done(_)));
                ended.push(d);
            }
            match next() {
                Some(job) => self.mpi.send_bytes(src, &encode(&Down::Run(job))),
                None => {
                    *open = open.saturating_sub(1);
                    self.mpi.send_bytes(src, &encode(&Down::Stop));
                }
            }
        }
        ended
    }

    fn done(&self) -> bool {
        self.open.iter().skip(1).all(|o| *o == Some(0))
    }
}

/// A rank other than 0: asks for runs, runs them, sends their outcomes back.
fn work(mpi: &Mpi, slots: usize) -> Result<u8, Failure> {
    let scratch = std::env::temp_dir().join(format!(
        "chronon-sweep-rank{}-{}",
        mpi.rank(),
        std::process::id()
    ));
    let made = std::fs::create_dir_all(&scratch);
    let result = made
        .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", scratch.display())))
        .and_then(|()| work_in(mpi, slots, scratch.clone()));
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn work_in(mpi: &Mpi, slots: usize, scratch: PathBuf) -> Result<u8, Failure> {
    let binary = crate::sys::SelfCommand::this()?;
    let mut local = Local::new(binary, scratch, slots);
    // Slots not yet told to stop; those without a run ask for one.
    let mut open = slots;
    let mut ended: Vec<(usize, Outcome)> = Vec::new();
    let mut interrupted = false;
    let mut pause = Duration::from_micros(200);
    loop {
        let asking = open.saturating_sub(slots - local.free());
        for _ in 0..asking {
            let ask = Up::Ask {
                slots,
                done: ended.pop(),
            };
            mpi.send_bytes(0, &encode(&ask));
            match serde_json::from_slice::<Down>(&mpi.receive_bytes_from(0)) {
                Ok(Down::Run(job)) => {
                    if let Err(e) = local.start(&job) {
                        ended.push((
                            job.index,
                            Outcome::Failed {
                                code: None,
                                line: e.message,
                            },
                        ));
                    }
                }
                _ => open -= 1,
            }
        }
        if open == 0 && local.is_idle() {
            return Ok(0);
        }
        // Ordering: a flag set by the Ctrl-C handler; it guards no data.
        if !interrupted && INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
            interrupted = true;
            local.interrupt();
        }
        let now = local.poll();
        pause = if now.is_empty() && ended.is_empty() {
            (pause * 2).min(Duration::from_millis(20))
        } else {
            Duration::from_micros(200)
        };
        ended.extend(now);
        if ended.is_empty() {
            std::thread::sleep(pause);
        }
    }
}
