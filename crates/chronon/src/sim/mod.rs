//! The [`Simulation`] builder: the one entry point that runs a model.

mod checkpoints;

use std::sync::Arc;

use crate::error::{ConfigError, Setting, SimError};
use crate::event::Event;
use crate::executor::checkpoint::{self, AnyCodec, CheckpointPlan, RestoreFrom};
use crate::executor::conservative::Protocol;
use crate::executor::time_warp::StateEq;
use crate::executor::{self, Executor, LpSlot, RunConfig};
use crate::limits::{self, MemoryLimit, RunSize};
use crate::model::{LpId, Model, Time};
use crate::placement::Pin;
use crate::progress::Progress;
use crate::queue::QueueKind;
use crate::stats::Report;

/// Configures and runs a simulation of one model.
///
/// ```
/// # use chronon::{Ctx, Model, Simulation};
/// # #[derive(Clone)] struct Quiet;
/// # impl Model for Quiet {
/// #     type State = ();
/// #     type Event = ();
/// #     fn init(&self, _: &mut Ctx<'_, Self>) {}
/// #     fn on_event(&self, _: &mut (), _: &(), _: &mut Ctx<'_, Self>) {}
/// # }
/// let report = Simulation::new(Quiet).lps(4).end_time(10.0).seed(1).run()?;
/// assert_eq!(report.committed, 0);
/// # Ok::<(), chronon::SimError>(())
/// ```
#[derive(Debug)]
pub struct Simulation<M: Model> {
    model: M,
    /// `None` until [`Simulation::lps`] is called (the model's own count is used then).
    lps: Option<LpId>,
    /// `None` until [`Simulation::end_time`] is called: a run must say when it ends.
    end: Option<Time>,
    seed: u64,
    queue: QueueKind,
    executor: Executor,
    pin: Pin,
    progress: Option<Arc<Progress>>,
    /// [`Simulation::check_reverse`] was called.
    check_reverse: bool,
    state_eq: Option<StateEq<M::State>>,
    memory_limit: Option<MemoryLimit>,
    /// The shared heaps' size classes ([`Simulation::heap`]); `None`: the default.
    #[cfg(target_os = "linux")]
    heap: Option<crate::shm::HeapConfig>,
    /// A run across worker processes ([`Simulation::processes`]).
    #[cfg(all(target_os = "linux", not(chronon_loom)))]
    procs: Option<(
        crate::run::procs::ProcsOptions,
        crate::run::procs::ProcsFn<M>,
    )>,
    /// A run over MPI ranks ([`Simulation::ranks`]).
    #[cfg(feature = "mpi")]
    ranks: Option<crate::run::ranks::RanksFn<M>>,
    /// Checkpoints to save ([`Simulation::checkpoint_every`], [`Simulation::checkpoint_at`]).
    checkpoints: Option<CheckpointPlan>,
    /// The checkpoint to continue from ([`Simulation::restore`]).
    restore: Option<RestoreFrom>,
    /// [`Simulation::reseed`] was called with this seed.
    reseed: Option<u64>,
    /// The model's state and event codec, set by the checkpoint methods (whose bounds say the
    /// types serialize).
    codec: Option<AnyCodec>,
    /// The model's name and configuration in checkpoints ([`Simulation::checkpoint_label`]).
    label: Option<(String, serde_json::Value)>,
    /// LPs move between workers every this much simulated time ([`Simulation::balance`]).
    balance: Option<crate::balance::BalancePeriod>,
}

/// Runs over MPI ranks (cargo feature `mpi`): only for models whose events serialize.
#[cfg(feature = "mpi")]
impl<M: Model> Simulation<M>
where
    M::Event: crate::mpi::RankSafe,
{
    /// Runs the simulation over every rank of the MPI world (this program started by
    /// `mpirun -n R`), each with the executor's threads (window, lock-step, null messages or
    /// Time Warp; the LP mapping is over all R × W workers, numbered `rank * W + thread`). Every rank
    /// builds the same simulation and calls `run`; rank 0's report is the run's (fingerprint,
    /// committed count and `model_stats` equal the sequential run's), the other ranks get an
    /// empty report with the same completeness, or the same error. Needs
    /// [`Mpi::init`](crate::mpi::Mpi::init) first. Events cross ranks through serde (bincode).
    pub fn ranks(mut self) -> Self {
        self.ranks = Some(crate::run::ranks::run_executor::<M>);
        self
    }
}

/// Multi-process runs (Linux): only for models whose events may cross a process boundary.
#[cfg(all(target_os = "linux", not(chronon_loom)))]
impl<M: Model> Simulation<M>
where
    M::Event: crate::shm::ShmSafe,
{
    /// Runs the simulation in `procs` worker processes on this machine, each with the
    /// executor's threads (window, lock-step, null messages or Time Warp; the LP mapping is over every
    /// thread of every process), and gathers one report whose fingerprint, committed count
    /// and `model_stats` equal the sequential run's.
    ///
    /// The worker processes re-execute this program (with this process's command line, or
    /// [`process_args`](Simulation::process_args)), so the program keeps a contract: it builds
    /// the same model and the same `Simulation` from its configuration in every process and
    /// reaches [`run`](Simulation::run) (which, in a worker process, does the worker's part and
    /// exits the process instead of returning); side effects before `run` happen once per
    /// process (test [`is_worker_process`](crate::is_worker_process) early in `main` to skip
    /// them). `Model::finish` may only add and set figures (not read them), and a model with
    /// global events needs [`serde_model`](Simulation::serde_model) (they then run at cuts of
    /// the whole model, in this process). Events are moved between processes through
    /// shared memory as values, hence the [`ShmSafe`](crate::shm::ShmSafe) bound: a payload
    /// with a `Vec` does not compile here:
    ///
    /// ```compile_fail
    /// # use chronon::{Ctx, Model, Simulation};
    /// struct Bulky;
    /// impl Model for Bulky {
    ///     type State = ();
    ///     type Event = Vec<u8>;
    ///     fn init(&self, _: &mut Ctx<'_, Self>) {}
    ///     fn on_event(&self, _: &mut (), _: &Vec<u8>, _: &mut Ctx<'_, Self>) {}
    /// }
    /// // error: `Vec<u8>` cannot cross a process boundary
    /// let _ = Simulation::new(Bulky).processes(2);
    /// ```
    ///
    /// while the same model with plain events does:
    ///
    /// ```no_run
    /// # use chronon::{ConservativeConfig, Ctx, Executor, Model, Simulation};
    /// struct Light;
    /// impl Model for Light {
    ///     type State = ();
    ///     type Event = u64;
    ///     fn init(&self, _: &mut Ctx<'_, Self>) {}
    ///     fn on_event(&self, _: &mut (), _: &u64, _: &mut Ctx<'_, Self>) {}
    /// }
    /// let report = Simulation::new(Light)
    ///     .lps(8)
    ///     .end_time(10.0)
    ///     .executor(Executor::Window(ConservativeConfig::new(2)))
    ///     .processes(2)
    ///     .run()?;
    /// # Ok::<(), chronon::SimError>(())
    /// ```
    pub fn processes(mut self, procs: usize) -> Self {
        let (args, copy) = self
            .procs
            .take()
            .map_or((None, false), |(o, _)| (o.args, o.copy));
        self.procs = Some((
            crate::run::procs::ProcsOptions { procs, args, copy },
            crate::run::procs::run_executor::<M>,
        ));
        self
    }

    /// The copy transport (`chronon run --payload copy`): instead of passing `BPtr`s
    /// (zero copy), every event's `BPtr` payloads are byte-copied into a new item of the
    /// sender's heap when it is sent and into a new item of the receiver's heap when it is
    /// received (the two copies an MPI implementation makes inside one machine), the model's
    /// code unchanged. Call after [`processes`](Simulation::processes).
    pub fn payload_copy(mut self, copy: bool) -> Self {
        if let Some((o, _)) = &mut self.procs {
            o.copy = copy;
        }
        self
    }

    /// The command line (after the program name) the worker processes of
    /// [`processes`](Simulation::processes) are started with; by default this process's own.
    /// A test binary passes the name of the test that builds the simulation, say. Without
    /// `processes` it has no effect.
    pub fn process_args<S: Into<std::ffi::OsString>>(
        mut self,
        args: impl IntoIterator<Item = S>,
    ) -> Self {
        let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        if let Some((o, _)) = &mut self.procs {
            o.args = Some(args);
        }
        self
    }
}

impl<M: Model> Simulation<M> {
    /// A simulation of `model` with the model's number of LPs, seed 0, the default queue and the sequential
    /// executor. Give it an end time ([`end_time`](Self::end_time)) before it runs.
    pub fn new(model: M) -> Self {
        Simulation {
            model,
            lps: None,
            end: None,
            seed: 0,
            queue: QueueKind::default(),
            executor: Executor::default(),
            pin: Pin::default(),
            progress: None,
            check_reverse: false,
            state_eq: None,
            memory_limit: None,
            #[cfg(target_os = "linux")]
            heap: None,
            #[cfg(all(target_os = "linux", not(chronon_loom)))]
            procs: None,
            #[cfg(feature = "mpi")]
            ranks: None,
            checkpoints: None,
            restore: None,
            reseed: None,
            codec: None,
            label: None,
            balance: None,
        }
    }

    /// The number of LPs (at least 1). Needed only for a model that does not say it
    /// ([`Model::lp_count`]); given for one that does, it must agree.
    pub fn lps(mut self, lps: LpId) -> Self {
        self.lps = Some(lps);
        self
    }

    /// The end time: events at or after it never execute. Must be positive. Required:
    /// a run without one is refused, since a model that never stops would run forever;
    /// `Time::INFINITY` runs until no event is pending (for a model that stops by itself).
    pub fn end_time(mut self, end: Time) -> Self {
        self.end = Some(end);
        self
    }

    /// The seed every LP's random stream is derived from.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The pending-event set.
    pub fn queue(mut self, queue: QueueKind) -> Self {
        self.queue = queue;
        self
    }

    /// The executor.
    pub fn executor(mut self, executor: Executor) -> Self {
        self.executor = executor;
        self
    }

    /// Whether worker threads are pinned to cores, NUMA node by node, and first-touch their
    /// LPs' memory ([`Pin::Auto`] by default: when the workers fit the cores). The report's
    /// `placement` says what was done.
    pub fn pin(mut self, pin: Pin) -> Self {
        self.pin = pin;
        self
    }

    /// Shares progress figures and a stop flag with an observer (see [`Progress`]).
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Runs every event forward, then through the model's reverse handler
    /// ([`Model::reverse_handler`]), and fails with a
    /// [`SimError::Model`] naming the LP and time when the state differs from the one before
    /// the event. Needs a state that can be compared and Time Warp with reverse computation.
    pub fn check_reverse(mut self) -> Self
    where
        M::State: PartialEq,
    {
        self.check_reverse = true;
        self.state_eq = Some(<M::State as PartialEq>::eq);
        self
    }

    /// The memory the size check compares its estimate with (see [`crate::limits`]); by
    /// default [`MemoryLimit::detect`]: `CHRONON_MEMORY_LIMIT`, else what the machine has
    /// available.
    pub fn memory_limit(mut self, limit: MemoryLimit) -> Self {
        self.memory_limit = Some(limit);
        self
    }

    /// The size classes and growth of the shared heaps that hold the run's
    /// [`BPtr`](crate::shm::BPtr) payloads ([`Ctx::alloc_shared`](crate::Ctx::alloc_shared)):
    /// every thread that runs this simulation's handlers, in this process and in the worker
    /// processes of [`processes`](Simulation::processes) (which build the same `Simulation`),
    /// creates its heap with it. Default: [`HeapConfig::default`](crate::shm::HeapConfig).
    ///
    /// ```
    /// # use chronon::{Ctx, Model, Simulation};
    /// # use chronon::shm::HeapConfig;
    /// # struct Quiet;
    /// # impl Model for Quiet {
    /// #     type State = ();
    /// #     type Event = ();
    /// #     fn init(&self, _: &mut Ctx<'_, Self>) {}
    /// #     fn on_event(&self, _: &mut (), _: &(), _: &mut Ctx<'_, Self>) {}
    /// # }
    /// let heap = HeapConfig::parse("64:1024,4K:64").expect("classes").max_segments(4);
    /// let report = Simulation::new(Quiet).lps(2).end_time(1.0).heap(heap).run()?;
    /// # Ok::<(), chronon::SimError>(())
    /// ```
    #[cfg(target_os = "linux")]
    pub fn heap(mut self, config: crate::shm::HeapConfig) -> Self {
        self.heap = Some(config);
        self
    }

    /// How many processes hold the whole LP table: the worker processes of a multi-process run
    /// each initialize every LP.
    fn lp_copies(&self) -> u64 {
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        if let Some((o, _)) = &self.procs {
            return o.procs.max(1) as u64;
        }
        // Every rank on this machine holds the whole LP table too.
        #[cfg(feature = "mpi")]
        if self.ranks.is_some() {
            return std::env::var("MPI_LOCALNRANKS")
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(1)
                .max(1);
        }
        1
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Checks the configuration, runs the simulation and returns its report.
    pub fn run(self) -> Result<Report, SimError> {
        let known = crate::error::guard("Model::lp_count", None, || self.model.lp_count())?;
        let lps = match (self.lps, known) {
            (Some(given), Some(model)) if given != model => {
                return Err(SimError::config(Setting::Lps, format!(
                    ".lps({given}) but the model says it has {model} LPs (Model::lp_count): give one count"
                )))
            }
            (Some(n), _) | (None, Some(n)) => n,
            (None, None) => {
                return Err(SimError::config(Setting::Lps, "the number of LPs is not set: call .lps(N), or implement Model::lp_count"))
            }
        };
        if lps == 0 {
            return Err(ConfigError::new(Setting::Lps, 0, "it must be at least 1").into());
        }
        let Some(end) = self.end else {
            return Err(SimError::config(Setting::EndTime, "no end time: call .end_time(T) (events at or after T never run; f64::INFINITY runs until no event is pending)"));
        };
        if !(end > 0.0) {
            return Err(ConfigError::new(Setting::EndTime, end, "it must be > 0").into());
        }
        let la = crate::error::guard("Model::lookahead", None, || self.model.lookahead())?;
        if !(la >= 0.0 && la.is_finite()) {
            return Err(SimError::config(
                Setting::Model,
                format!("the model's lookahead {la} is not allowed; it must be finite and >= 0"),
            ));
        }
        #[cfg(target_os = "linux")]
        if let Some(n) = self
            .heap
            .as_ref()
            .map(crate::shm::HeapConfig::segment_limit)
        {
            if !(1..=16).contains(&n) {
                let problem = "it must be 1..=16 (1: the heaps never grow)";
                return Err(ConfigError::new(Setting::HeapSegments, n, problem).into());
            }
        }
        // Sizes before anything is allocated (see `crate::limits`).
        let shared_sets = match &self.executor {
            Executor::Window(c) | Executor::NullMessage(c) | Executor::Lockstep(c) => c.shared_sets,
            _ => 0,
        };
        let size = RunSize {
            lps: u64::from(lps),
            threads: self.executor.threads() as u64,
            shared_sets: shared_sets as u64,
            lp_record: std::mem::size_of::<LpSlot<M::State>>() as u64,
            event_record: std::mem::size_of::<Event<M::Event>>() as u64,
            hint: self.model.size_hint(),
            lp_copies: self.lp_copies(),
        };
        limits::check_workers(&size)?;
        let limit = self
            .memory_limit
            .clone()
            .unwrap_or_else(MemoryLimit::detect);
        limits::check_memory(&size, &limit)?;
        let cfg = RunConfig {
            lps,
            end,
            seed: self.seed,
            queue: self.queue,
            progress: self.progress.clone().unwrap_or_default(),
            pin: self.pin,
            #[cfg(target_os = "linux")]
            heap: self.heap.clone(),
            ckpt: None,
        };
        let mut chosen = self.executor.clone();
        match &mut chosen {
            Executor::TimeWarp(c) => c.check_reverse = self.check_reverse,
            _ if self.check_reverse => {
                return Err(SimError::config(
                    Setting::Executor,
                    "checking reverse handlers needs the Time Warp executor",
                ))
            }
            _ => {}
        }
        let chain = self.chain_setup(&chosen, end)?;
        let this = &self;
        // Across parts, the chain runs the model's global events at cuts (no part holds every
        // LP's state while the link runs).
        let globals = checkpoint::ModelGlobals {
            model: &self.model,
            threads: chosen.threads(),
        };
        let at_cuts = self
            .across_parts()
            .then_some(&globals as &dyn checkpoint::CutGlobals);
        match chain {
            None => this.dispatch(&chosen, &cfg),
            Some((setup, saved_by)) => {
                checkpoint::run_chain(&cfg, setup, &saved_by, at_cuts, |c| {
                    // A link whose LPs the chain moved runs them on their new workers.
                    match c.ckpt.as_ref().and_then(|k| k.owners.as_deref()) {
                        Some(owners) => this.dispatch(&chosen.with_owners(owners), c),
                        None => this.dispatch(&chosen, c),
                    }
                })
            }
        }
    }

    /// Whether the run is across parts (worker processes or MPI ranks).
    pub(super) fn across_parts(&self) -> bool {
        #[cfg(feature = "mpi")]
        if self.ranks.is_some() {
            return true;
        }
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        if self.procs.is_some() {
            return true;
        }
        false
    }

    /// Runs `cfg` with the chosen executor over the chosen transport.
    fn dispatch(&self, chosen: &Executor, cfg: &RunConfig) -> Result<Report, SimError> {
        // This thread runs `init` (and every handler of a sequential run).
        cfg.enter_thread();
        let (name, threads) = (chosen.name(), chosen.threads());
        #[cfg(feature = "mpi")]
        if let Some(run) = self.ranks {
            return run(&self.model, cfg, chosen);
        }
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        if let Some((opts, run)) = &self.procs {
            return run(&self.model, cfg, chosen, opts);
        }
        let result = match chosen.clone() {
            Executor::Sequential => executor::sequential::run(&self.model, cfg),
            Executor::TimeWarp(c) => {
                executor::time_warp::run(&self.model, cfg, c.threads, &c, self.state_eq)
            }
            Executor::Window(c) => {
                executor::conservative::run(&self.model, cfg, Protocol::Window, &c)
            }
            Executor::NullMessage(c) => {
                executor::conservative::run(&self.model, cfg, Protocol::NullMessage, &c)
            }
            Executor::Lockstep(c) => {
                executor::conservative::run(&self.model, cfg, Protocol::Lockstep, &c)
            }
        };
        // The run is over: this thread's shared heap (if a handler ran here) is released once
        // every item came back; worker threads' heaps went with their threads.
        #[cfg(target_os = "linux")]
        crate::shm::release_thread_heap();
        RunConfig::leave_thread();
        match result {
            Err(SimError::StoppedInInit) => {
                // Stopped before any event ran: an empty, incomplete report.
                let mut r = Report::new(name, threads, cfg.queue.name(), cfg.lps, cfg.end);
                r.complete = false;
                Ok(r)
            }
            other => other,
        }
    }
}
