//! The conservative executors' settings ([`ConservativeConfig`]) and the protocol names.

use crate::barrier::BarrierKind;
use crate::error::{Setting, SimError};
use crate::partition::Mapping;

/// Settings shared by the conservative executors.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConservativeConfig {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// How LPs are assigned to workers.
    pub mapping: Mapping,
    /// The barrier between the rounds of window and lock-step (threads in one process). Worker
    /// processes and MPI ranks meet at their transport's own barrier, so a run across them
    /// refuses any other than the default.
    pub barrier: BarrierKind,
    /// Load balancing (window only): the fraction of each worker's LPs dedicated to it, in
    /// [0, 1]; the rest go to the shared sets (seed 001 §3.4). 1.0: no balancing.
    pub dedicated: f64,
    /// Load balancing (window only): the number of shared LP sets (at least 1 when
    /// `dedicated < 1`).
    pub shared_sets: usize,
    /// Null messages only: the most null messages a channel between two workers may need to
    /// carry its clock from 0 to the end time (about `end / link lookahead`); a lookahead so
    /// small that it needs more is refused before the run
    /// ([`DEFAULT_MAX_NULL_MESSAGES`] by default).
    pub max_null_messages: u64,
    /// Lock-step only: who executes the LPs' events within a lock-step
    /// ([`Runtime::Threads`] by default).
    pub runtime: Runtime,
}

/// The runtime system under the lock-step protocol (seed 002 §3): the protocol (SafeTime =
/// max(InClock, GST)) is the same; the runtime decides who executes the events below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Runtime {
    /// Persistent worker threads, each owning a block of LPs (the default). Over worker
    /// processes of one thread each ([`Simulation::processes`](crate::Simulation::processes))
    /// this is the seed's BSP version: each process owns its LPs in its own address space, and
    /// events to another process are handed over only at the superstep (lock-step) barrier.
    #[default]
    Threads,
    /// A rayon work-stealing pool of `threads` threads (the seed's Cilk runtime): each
    /// lock-step spawns every LP by divide and conquer (`rayon::join`) down to leaf tasks of at
    /// most `threshold` LPs, which run their LPs' safe events and reduce the next SafeTime on
    /// the way back.
    WorkStealing {
        /// LPs per leaf task (at least 1).
        threshold: usize,
    },
    /// Light-weight threads (the seed's Active threads runtime): stackful coroutines of
    /// `threshold` LPs each, for the whole run, bound round-robin to `threads` worker threads
    /// that resume each of theirs once per lock-step.
    ActiveThreads {
        /// LPs per light-weight thread (at least 1).
        threshold: usize,
    },
}

impl Runtime {
    /// The name used on the command line (`--runtime`).
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Threads => "threads",
            Runtime::WorkStealing { .. } => "work-stealing",
            Runtime::ActiveThreads { .. } => "active-threads",
        }
    }

    /// LPs per task or light-weight thread (`None`: the threads runtime).
    pub fn threshold(self) -> Option<usize> {
        match self {
            Runtime::Threads => None,
            Runtime::WorkStealing { threshold } | Runtime::ActiveThreads { threshold } => {
                Some(threshold)
            }
        }
    }
}

/// The default of [`ConservativeConfig::max_null_messages`]: 10^10 per channel. A fixed cap
/// (the engine cannot know the event count in advance); a legitimate run that needs as many
/// null messages, such as lookahead 0.5 up to end 10^9, also commits billions of events.
pub const DEFAULT_MAX_NULL_MESSAGES: u64 = 10_000_000_000;

impl ConservativeConfig {
    /// `threads` workers, block mapping, the default barrier.
    pub fn new(threads: usize) -> Self {
        ConservativeConfig {
            threads,
            mapping: Mapping::Block,
            barrier: BarrierKind::default(),
            dedicated: 1.0,
            shared_sets: 0,
            max_null_messages: DEFAULT_MAX_NULL_MESSAGES,
            runtime: Runtime::Threads,
        }
    }

    /// Sets the runtime system (lock-step only).
    pub fn runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = runtime;
        self
    }

    /// Checks the runtime against `protocol`.
    pub(super) fn check_runtime(&self, protocol: Protocol) -> Result<(), SimError> {
        let Some(threshold) = self.runtime.threshold() else {
            return Ok(());
        };
        let name = self.runtime.name();
        if protocol != Protocol::Lockstep {
            return Err(SimError::config(
                Setting::Runtime,
                format!(
                    "$runtime {name} applies to $executor lockstep only; got $executor {}",
                    protocol.name()
                ),
            ));
        }
        if threshold == 0 {
            return Err(SimError::config(
                Setting::Threshold,
                "$threshold must be at least 1 LP per task; got 0",
            ));
        }
        if self.mapping != Mapping::Block {
            return Err(SimError::config(
                Setting::Mapping,
                format!(
                    "$mapping applies to $runtime threads only (the {name} runtime {})",
                    match self.runtime {
                        Runtime::ActiveThreads { .. } =>
                            "gives LPs to its light-weight threads in blocks of $threshold",
                        _ => "has no LP owners",
                    }
                ),
            ));
        }
        Ok(())
    }

    /// Checks the barrier against where it would run: only the worker threads of one process
    /// meet at it, under window and lock-step on the threads runtime. `across`: the run's
    /// [`Setting::Processes`] or [`Setting::Ranks`] when it runs across them. Any other than
    /// the default is refused where it would not be used.
    pub(crate) fn check_barrier(
        &self,
        protocol: Protocol,
        across: Option<Setting>,
    ) -> Result<(), SimError> {
        if self.barrier == BarrierKind::default() {
            return Ok(());
        }
        let why = match (protocol, self.runtime, across) {
            (Protocol::NullMessage, _, _) => {
                "applies to $executor window or lockstep only (null messages use no barrier)"
            }
            (_, Runtime::WorkStealing { .. }, _) => {
                "applies to $runtime threads only (the work-stealing runtime has no barrier)"
            }
            (_, Runtime::ActiveThreads { .. }, _) => {
                "applies to $runtime threads only (the active-threads runtime uses its own)"
            }
            (_, _, Some(Setting::Ranks)) => {
                "applies to the threads of one process; MPI ranks ($ranks) meet at their own barrier"
            }
            (_, _, Some(_)) => {
                "applies to the threads of one process; worker processes ($processes) meet at their own shared-memory barrier"
            }
            (_, _, None) => return Ok(()),
        };
        let got = match self.barrier {
            BarrierKind::Tree { fan_in } => format!("tree with fan-in {fan_in}"),
            b => b.name().to_string(),
        };
        Err(SimError::config(
            Setting::Barrier,
            format!("$barrier {why}; got $barrier {got}"),
        ))
    }

    /// Sets the null-message cap per channel (see [`ConservativeConfig::max_null_messages`]).
    pub fn max_null_messages(mut self, cap: u64) -> Self {
        self.max_null_messages = cap;
        self
    }

    /// Sets the dedicated fraction (load balancing, `--sync window` only).
    pub fn dedicated(mut self, fraction: f64) -> Self {
        self.dedicated = fraction;
        self
    }

    /// Sets the number of shared LP sets (load balancing, `--sync window` only).
    pub fn shared_sets(mut self, sets: usize) -> Self {
        self.shared_sets = sets;
        self
    }

    /// Checks the load-balancing settings against `protocol`.
    pub(super) fn check_balance(&self, protocol: Protocol) -> Result<(), SimError> {
        let d = self.dedicated;
        let given = d != 1.0 || self.shared_sets != 0;
        if given && protocol != Protocol::Window {
            return Err(SimError::config(
                Setting::Dedicated,
                format!(
                    "$dedicated and $shared_sets apply to $executor window only; got $executor {}",
                    protocol.name()
                ),
            ));
        }
        if !(0.0..=1.0).contains(&d) {
            return Err(SimError::config(
                Setting::Dedicated,
                format!("$dedicated is {d}; it must be in [0, 1]"),
            ));
        }
        if d < 1.0 && self.shared_sets == 0 {
            return Err(SimError::config(
                Setting::Dedicated,
                format!(
                    "$dedicated {d} leaves LPs to share, so $shared_sets must be at least 1; got 0"
                ),
            ));
        }
        Ok(())
    }

    /// Sets the LP mapping.
    pub fn mapping(mut self, mapping: Mapping) -> Self {
        self.mapping = mapping;
        self
    }

    /// Sets the barrier.
    pub fn barrier(mut self, barrier: BarrierKind) -> Self {
        self.barrier = barrier;
        self
    }
}

/// Which conservative protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    Window,
    Lockstep,
    NullMessage,
}

impl Protocol {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Protocol::Window => "window",
            Protocol::Lockstep => "lockstep",
            Protocol::NullMessage => "null-message",
        }
    }
}
