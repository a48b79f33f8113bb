//! The Time Warp executor's settings: state saving, memory bound, optimism window, mapping.

use crate::error::{ConfigError, Setting, SimError};
use crate::model::Time;
use crate::partition::Mapping;

/// How Time Warp restores an LP's state on rollback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateSaving {
    /// Save a copy of the state every k events and coast forward from it.
    Copy,
    /// Undo events with the model's reverse handler
    /// ([`Model::reverse_handler`](crate::Model::reverse_handler)).
    Reverse,
    /// Reverse computation when the model has a reverse handler, copies otherwise.
    #[default]
    Auto,
}

/// The state saving a run uses, once `Auto` is resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Saving {
    Copy,
    Reverse,
}

/// Preemption settings shared by the workers (preempt.rs).
#[derive(Clone, Copy, Debug)]
pub(super) struct PreemptConfig {
    pub(super) max_suspended: usize,
    pub(super) ticks: Option<Ticks>,
}

impl std::str::FromStr for StateSaving {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "copy" => Ok(StateSaving::Copy),
            "reverse" => Ok(StateSaving::Reverse),
            "auto" => Ok(StateSaving::Auto),
            _ => Err(format!(
                "unknown state saving '{s}' (allowed: copy, reverse, auto)"
            )),
        }
    }
}

/// The Time Warp executor's configuration ([`Executor::TimeWarp`](crate::Executor::TimeWarp)):
/// its worker threads and every setting of the optimistic protocol (see docs/timewarp.md).
///
/// ```
/// # use chronon::{Executor, StateSaving, TimeWarpConfig};
/// let tw = TimeWarpConfig::new(4).state_saving(StateSaving::Copy).gvt_every(256);
/// let executor = Executor::TimeWarp(tw);
/// # assert_eq!(executor.threads(), 4);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TimeWarpConfig {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// How states are saved.
    pub state_saving: StateSaving,
    /// Copy state saving: save every `k` events (`None`: chosen from measured costs).
    pub save_every: Option<u32>,
    /// Bound on the resident memory of the whole process (docs/timewarp.md, "Memory bound"):
    /// speculation is capped to stay under it, and the run fails with [`SimError::Resource`]
    /// naming a bound that would do when it cannot.
    pub max_memory: Option<u64>,
    /// Optimism window: no event later than GVT + window runs. The window adapts to the
    /// measured rollbacks (docs/timewarp.md, "Optimism control"), starting unbounded (`None`,
    /// the default) or at the given value, which it then never exceeds (a cap).
    pub window: Option<Time>,
    /// Keep [`window`](Self::window) fixed: the controller is off (with `window: None` or
    /// `Some(f64::INFINITY)`, unbounded optimism, which can thrash). Default false.
    pub fixed_window: bool,
    /// LP to worker mapping.
    pub mapping: Mapping,
    /// Events a worker processes between two GVT rounds it starts; a quarter of them under
    /// the lookahead safe rule once the worker's events passed its safe bound.
    pub gvt_every: u32,
    /// The most processed, uncommitted events a worker keeps: past it, it runs only events at
    /// or before GVT until fossil collection catches up (`None`: 4 × `gvt_every`). Bounds how
    /// far one worker races ahead while another is descheduled.
    pub max_uncommitted: Option<u64>,
    /// Preemptive Time Warp (seed 003, docs/timewarp.md "Preemption"): every event runs in an
    /// execution context of its own and is switched off the CPU at a platform-mode return
    /// (`ctx.send`, `ctx.count`, `ctx.rng`, `ctx.preemption_point`) when an earlier message or
    /// anti-message waits for one of the worker's LPs. Default off.
    pub preempt: bool,
    /// With [`preempt`](Self::preempt): the most suspended contexts per worker. While a
    /// worker holds that many, the events it starts run to completion without preemption.
    pub max_suspended: usize,
    /// With [`preempt`](Self::preempt): fine-grain ticks (seed 003 §2.3, docs/timewarp.md).
    /// `None`: no ticks — every platform-mode return reads BH_min.
    pub ticks: Option<Ticks>,
    /// Commit an event as it runs, with no record kept, when no straggler can reach its LP any
    /// more (docs/timewarp.md, "Safe events"): under reverse state saving, with threads in one
    /// process, for events before GVT + lookahead, and for every event when the run has one
    /// worker. Default true; false keeps a record of every event (for comparison).
    pub safe_commit: bool,
    /// Run every event forward, then backward, and compare the states (set by
    /// [`Simulation::check_reverse`](crate::Simulation::check_reverse)).
    pub(crate) check_reverse: bool,
}

impl Default for TimeWarpConfig {
    /// One worker thread, the default settings.
    fn default() -> Self {
        TimeWarpConfig {
            threads: 1,
            state_saving: StateSaving::Auto,
            save_every: None,
            max_memory: None,
            window: None,
            fixed_window: false,
            mapping: Mapping::Block,
            gvt_every: 1024,
            max_uncommitted: None,
            preempt: false,
            max_suspended: 64,
            ticks: None,
            safe_commit: true,
            check_reverse: false,
        }
    }
}

impl TimeWarpConfig {
    /// Time Warp on `threads` worker threads, with the default settings.
    pub fn new(threads: usize) -> Self {
        TimeWarpConfig {
            threads,
            ..Self::default()
        }
    }
    /// Sets [`threads`](Self::threads).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }
    /// Sets [`state_saving`](Self::state_saving).
    pub fn state_saving(mut self, s: StateSaving) -> Self {
        self.state_saving = s;
        self
    }
    /// Sets [`save_every`](Self::save_every).
    pub fn save_every(mut self, k: Option<u32>) -> Self {
        self.save_every = k;
        self
    }
    /// Sets [`max_memory`](Self::max_memory).
    pub fn max_memory(mut self, bytes: Option<u64>) -> Self {
        self.max_memory = bytes;
        self
    }
    /// Sets [`window`](Self::window).
    pub fn window(mut self, w: Option<Time>) -> Self {
        self.window = w;
        self
    }
    /// Sets [`fixed_window`](Self::fixed_window).
    pub fn fixed_window(mut self, fixed: bool) -> Self {
        self.fixed_window = fixed;
        self
    }
    /// Sets [`mapping`](Self::mapping).
    pub fn mapping(mut self, m: Mapping) -> Self {
        self.mapping = m;
        self
    }
    /// Sets [`max_uncommitted`](Self::max_uncommitted).
    pub fn max_uncommitted(mut self, n: Option<u64>) -> Self {
        self.max_uncommitted = n;
        self
    }
    /// Sets [`preempt`](Self::preempt).
    pub fn preempt(mut self, on: bool) -> Self {
        self.preempt = on;
        self
    }
    /// Sets [`max_suspended`](Self::max_suspended).
    pub fn max_suspended(mut self, n: usize) -> Self {
        self.max_suspended = n;
        self
    }
    /// Sets [`ticks`](Self::ticks).
    pub fn ticks(mut self, t: Option<Ticks>) -> Self {
        self.ticks = t;
        self
    }
    /// Sets [`safe_commit`](Self::safe_commit).
    pub fn safe_commit(mut self, on: bool) -> Self {
        self.safe_commit = on;
        self
    }
    /// Sets [`gvt_every`](Self::gvt_every).
    pub fn gvt_every(mut self, n: u32) -> Self {
        self.gvt_every = n;
        self
    }

    pub(super) fn validate(&self) -> Result<(), SimError> {
        let bad = |setting, value: &dyn std::fmt::Display, problem: &str| {
            Err(ConfigError::new(setting, value, problem).into())
        };
        if self.save_every == Some(0) {
            return bad(Setting::SaveEvery, &0, "it must be at least 1 event");
        }
        if self.max_memory == Some(0) {
            return bad(Setting::MaxMemory, &0, "it must be at least 1 byte");
        }
        if let Some(w) = self.window {
            if w.is_nan() || w < 0.0 {
                return bad(Setting::Window, &w, "it must be >= 0");
            }
        }
        if self.gvt_every == 0 {
            return bad(Setting::GvtEvery, &0, "it must be at least 1 event");
        }
        if self.preempt && self.max_suspended == 0 {
            return bad(
                Setting::MaxSuspended,
                &0,
                "it must be at least 1 (with none, no event is ever preempted: turn preemption off)",
            );
        }
        if self.ticks.is_some() && !self.preempt {
            return Err(SimError::config(
                Setting::Preempt,
                "ticks need preemptive Time Warp (TimeWarpConfig::preempt)",
            ));
        }
        if let Some(t) = &self.ticks {
            if !(t.period_us >= MIN_TICK_US && t.period_us.is_finite()) {
                return bad(
                    Setting::TickPeriod,
                    &t.period_us,
                    &format!("it must be at least {MIN_TICK_US}"),
                );
            }
            // 1 + alpha is the threshold on T / ΔET; the seed uses 0 (PHOLD) and -0.5 (its
            // data store: ticks on sooner), so negative values down to (not including) -1.
            if !(t.alpha > -1.0 && t.alpha.is_finite()) {
                return bad(Setting::Alpha, &t.alpha, "it must be finite and > -1");
            }
        }
        Ok(())
    }
}

/// The shortest tick period accepted, in microseconds: below it a worker spends most of its
/// time in the signal handler on a loaded machine (a storm of 1 µs ticks nearly stops a debug
/// build).
pub const MIN_TICK_US: f64 = 10.0;

/// Fine-grain ticks for preemptive Time Warp (seed 003 §2.3, Eq. 1–2).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Ticks {
    /// The tick period ΔET in microseconds.
    pub period_us: f64,
    /// The alpha rule: ticks run on a worker while T / ΔET >= 1 + alpha, where T is the mean
    /// wall time between two platform-mode returns there.
    pub alpha: f64,
    /// Whether a tick that finds the handler in application mode switches it off the CPU at
    /// once (preemption by interrupt, seed 003 §2.2), rather than making a check due at its
    /// next engine call (cooperative). Default `true`; it takes effect where the process can
    /// (x86-64 Linux with [`PlatformAlloc`](crate::PlatformAlloc) installed; the report's
    /// `preempt_interrupts_on`), elsewhere ticks stay cooperative.
    pub interrupts: bool,
}

impl Ticks {
    /// Ticks every `period_us` microseconds, enabled by the alpha rule with `alpha`, that
    /// preempt by interrupt where the process can.
    pub fn new(period_us: f64, alpha: f64) -> Self {
        Ticks {
            period_us,
            alpha,
            interrupts: true,
        }
    }

    /// Sets [`interrupts`](Self::interrupts).
    pub fn interrupts(mut self, on: bool) -> Self {
        self.interrupts = on;
        self
    }
}
