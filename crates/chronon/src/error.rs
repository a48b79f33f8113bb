//! Errors. Every variant's `Display` is one line that names what is wrong and what is allowed.

use std::fmt;

use crate::event::ENGINE_SENDER;
use crate::types::{LpId, Time};

/// A model broke a rule of the engine inside a handler (bad send, unknown counter).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelError {
    /// The LP whose handler broke the rule, or [`ENGINE_SENDER`](crate::event::ENGINE_SENDER)
    /// for a global event's handler ([`Model::on_global`](crate::Model::on_global)).
    pub lp: LpId,
    /// The simulated time of the event being handled (0 during `init`).
    pub time: Time,
    /// What went wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lp == ENGINE_SENDER {
            // An error of a global event's handler (no LP).
            return write!(f, "global event at time {}: {}", self.time, self.message);
        }
        write!(f, "LP {} at time {}: {}", self.lp, self.time, self.message)
    }
}

/// A setting of the library: what a [`ConfigError`] is about, named as the builder names it
/// (a program that maps its own options onto these settings, like the `chronon` command line,
/// names them its way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Setting {
    /// [`Simulation::lps`](crate::Simulation::lps) (or the model's `Model::lp_count`).
    Lps,
    /// [`Simulation::end_time`](crate::Simulation::end_time).
    EndTime,
    /// [`Simulation::executor`](crate::Simulation::executor): which executor.
    Executor,
    /// The executor's worker threads (`ConservativeConfig::threads`, `TimeWarpConfig::threads`).
    Threads,
    /// [`Simulation::processes`](crate::Simulation::processes).
    Processes,
    /// [`Simulation::ranks`](crate::Simulation::ranks) (MPI).
    Ranks,
    /// [`Simulation::check_reverse`](crate::Simulation::check_reverse).
    CheckReverse,
    /// [`Simulation::heap`](crate::Simulation::heap): the shared heaps' size classes.
    HeapClasses,
    /// `HeapConfig::max_segments`: how far a shared heap may grow.
    HeapSegments,
    /// `TimeWarpConfig::state_saving`.
    StateSaving,
    /// `TimeWarpConfig::save_every`.
    SaveEvery,
    /// `TimeWarpConfig::max_memory`.
    MaxMemory,
    /// `TimeWarpConfig::window`.
    Window,
    /// `TimeWarpConfig::gvt_every`.
    GvtEvery,
    /// `TimeWarpConfig::preempt`.
    Preempt,
    /// `Ticks::period_us` (`TimeWarpConfig::ticks`).
    TickPeriod,
    /// `Ticks::alpha` (`TimeWarpConfig::ticks`).
    Alpha,
    /// `TimeWarpConfig::max_suspended`.
    MaxSuspended,
    /// `ConservativeConfig::barrier`.
    Barrier,
    /// `ConservativeConfig::dedicated`.
    Dedicated,
    /// `ConservativeConfig::shared_sets`.
    SharedSets,
    /// `ConservativeConfig::max_null_messages`.
    MaxNullMessages,
    /// `ConservativeConfig::runtime`.
    Runtime,
    /// The work-stealing runtime's `threshold`.
    Threshold,
    /// `ConservativeConfig::mapping`, `TimeWarpConfig::mapping`: LPs to workers.
    Mapping,
    /// The model's own declarations (`Model::lookahead`, `Model::topology`, global events,
    /// counters): nothing a runner's option changes.
    Model,
    /// Anything else about the run as a whole (its processes or ranks agreeing, MPI set up).
    Run,
    /// [`Simulation::checkpoint_every`](crate::Simulation::checkpoint_every): the period.
    CheckpointEvery,
    /// [`Simulation::checkpoint_at`](crate::Simulation::checkpoint_at): the cut.
    CheckpointAt,
    /// The directory checkpoints are saved in.
    CheckpointDir,
    /// [`Simulation::restore`](crate::Simulation::restore): the checkpoint a run continues from.
    Restore,
    /// [`Simulation::reseed`](crate::Simulation::reseed).
    Reseed,
    /// [`Simulation::balance`](crate::Simulation::balance): the period LPs may move at.
    Balance,
}

impl Setting {
    const ALL: [Setting; 33] = [
        Setting::Mapping,
        Setting::Lps,
        Setting::EndTime,
        Setting::Executor,
        Setting::Threads,
        Setting::Processes,
        Setting::Ranks,
        Setting::CheckReverse,
        Setting::HeapClasses,
        Setting::HeapSegments,
        Setting::StateSaving,
        Setting::SaveEvery,
        Setting::MaxMemory,
        Setting::Window,
        Setting::GvtEvery,
        Setting::Preempt,
        Setting::TickPeriod,
        Setting::Alpha,
        Setting::MaxSuspended,
        Setting::Barrier,
        Setting::Dedicated,
        Setting::SharedSets,
        Setting::MaxNullMessages,
        Setting::Runtime,
        Setting::Threshold,
        Setting::Model,
        Setting::Run,
        Setting::CheckpointEvery,
        Setting::CheckpointAt,
        Setting::CheckpointDir,
        Setting::Restore,
        Setting::Reseed,
        Setting::Balance,
    ];

    /// Its number, for a worker process's report to its parent.
    pub(crate) fn index(self) -> u32 {
        Self::ALL.iter().position(|s| *s == self).unwrap_or(0) as u32
    }

    /// The setting numbered `i` by [`index`](Self::index).
    pub(crate) fn from_index(i: u32) -> Option<Setting> {
        Self::ALL.get(i as usize).copied()
    }

    /// The word that stands for the setting in a [`ConfigError`]'s text (`$processes`), which
    /// each program renders in its own words ([`ConfigError::render`]).
    pub fn token(self) -> &'static str {
        match self {
            Setting::Lps => "lps",
            Setting::EndTime => "end_time",
            Setting::Executor => "executor",
            Setting::Threads => "threads",
            Setting::Processes => "processes",
            Setting::Ranks => "ranks",
            Setting::CheckReverse => "check_reverse",
            Setting::HeapClasses => "heap_classes",
            Setting::HeapSegments => "heap_segments",
            Setting::StateSaving => "state_saving",
            Setting::SaveEvery => "save_every",
            Setting::MaxMemory => "max_memory",
            Setting::Window => "window",
            Setting::GvtEvery => "gvt_every",
            Setting::Preempt => "preempt",
            Setting::TickPeriod => "tick_period",
            Setting::Alpha => "alpha",
            Setting::MaxSuspended => "max_suspended",
            Setting::Barrier => "barrier",
            Setting::Dedicated => "dedicated",
            Setting::SharedSets => "shared_sets",
            Setting::MaxNullMessages => "max_null_messages",
            Setting::Runtime => "runtime",
            Setting::Threshold => "threshold",
            Setting::Mapping => "mapping",
            Setting::Model => "model",
            Setting::Run => "run",
            Setting::CheckpointEvery => "checkpoint_every",
            Setting::CheckpointAt => "checkpoint_at",
            Setting::CheckpointDir => "checkpoint_dir",
            Setting::Restore => "restore",
            Setting::Reseed => "reseed",
            Setting::Balance => "balance",
        }
    }

    /// The setting as the library names it: the builder method or field.
    pub fn name(self) -> &'static str {
        match self {
            Setting::Lps => "lps",
            Setting::EndTime => "end_time",
            Setting::Executor => "executor",
            Setting::Threads => "threads",
            Setting::Processes => "processes",
            Setting::Ranks => "ranks",
            Setting::CheckReverse => "check_reverse",
            Setting::HeapClasses => "heap",
            Setting::HeapSegments => "HeapConfig::max_segments",
            Setting::StateSaving => "TimeWarpConfig::state_saving",
            Setting::SaveEvery => "TimeWarpConfig::save_every",
            Setting::MaxMemory => "TimeWarpConfig::max_memory",
            Setting::Window => "TimeWarpConfig::window",
            Setting::GvtEvery => "TimeWarpConfig::gvt_every",
            Setting::Preempt => "TimeWarpConfig::preempt",
            Setting::TickPeriod => "Ticks::period_us",
            Setting::Alpha => "Ticks::alpha",
            Setting::MaxSuspended => "TimeWarpConfig::max_suspended",
            Setting::Barrier => "ConservativeConfig::barrier",
            Setting::Dedicated => "ConservativeConfig::dedicated",
            Setting::SharedSets => "ConservativeConfig::shared_sets",
            Setting::MaxNullMessages => "ConservativeConfig::max_null_messages",
            Setting::Runtime => "ConservativeConfig::runtime",
            Setting::Threshold => "Runtime::WorkStealing::threshold",
            Setting::Mapping => "mapping",
            Setting::Model => "model",
            Setting::Run => "run",
            Setting::CheckpointEvery => "checkpoint_every",
            Setting::CheckpointAt => "checkpoint_at",
            Setting::CheckpointDir => "checkpoint_dir",
            Setting::Restore => "restore",
            Setting::Reseed => "reseed",
            Setting::Balance => "balance",
        }
    }
}

/// An invalid configuration: which setting, the value it was given, and what is wrong with it
/// and what is allowed, in the library's words. `Display` is one line naming the setting as
/// the builder does (`processes(0): it must be at least 1 worker process`); a program with
/// options of its own names the setting its way from [`setting`](Self::setting) (the `chronon`
/// command line: `--procs is 0; it must be at least 1 worker process`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConfigError {
    /// The setting at fault (for a combination, the one to change).
    pub setting: Setting,
    /// Its value as given, or empty when the problem is not one value (a setting missing,
    /// or two that do not go together): then [`problem`](Self::problem) is a whole sentence.
    pub value: String,
    /// What is wrong and what is allowed. A setting it mentions is written `$token`
    /// ([`Setting::token`], e.g. `$processes`), so that each program names it its way:
    /// [`render`](Self::render).
    pub problem: String,
}

impl ConfigError {
    /// `setting` given `value`: `problem`.
    pub fn new(setting: Setting, value: impl fmt::Display, problem: impl Into<String>) -> Self {
        ConfigError {
            setting,
            value: value.to_string(),
            problem: problem.into(),
        }
    }

    /// A problem with `setting` that is not about one value of it, said in a whole sentence.
    pub fn about(setting: Setting, problem: impl Into<String>) -> Self {
        ConfigError {
            setting,
            value: String::new(),
            problem: problem.into(),
        }
    }
}

impl ConfigError {
    /// [`problem`](Self::problem) with every `$token` replaced by `name(setting)`: the library
    /// says [`Setting::name`]; a command line says its flag.
    pub fn render(&self, name: impl Fn(Setting) -> String) -> String {
        let mut out = String::with_capacity(self.problem.len());
        let mut rest = self.problem.as_str();
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let word_len = rest[at + 1..]
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .unwrap_or(rest.len() - at - 1);
            let word = &rest[at + 1..at + 1 + word_len];
            match Setting::ALL.iter().find(|s| s.token() == word) {
                Some(s) if !word.is_empty() => out.push_str(&name(*s)),
                _ => {
                    out.push('$');
                    out.push_str(word);
                }
            }
            rest = &rest[at + 1 + word_len..];
        }
        out.push_str(rest);
        out
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let problem = self.render(|s| s.name().to_string());
        if self.value.is_empty() {
            f.write_str(&problem)
        } else {
            write!(f, "{}({}): {problem}", self.setting.name(), self.value)
        }
    }
}

impl From<ConfigError> for SimError {
    fn from(e: ConfigError) -> Self {
        SimError::Config(e)
    }
}

/// Why a simulation could not run or did not finish.
///
/// Its `Debug` form is its one-line `Display`, so that `fn main() -> Result<(), SimError>`
/// ends with a readable `Error: ...` line rather than a structure dump.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum SimError {
    /// The configuration is invalid; nothing ran.
    Config(ConfigError),
    /// A model handler broke a rule of the engine; the run stopped there.
    Model(ModelError),
    /// A model handler panicked; every worker stopped.
    Panic {
        /// The LP whose handler panicked, or [`ENGINE_SENDER`](crate::event::ENGINE_SENDER)
        /// for a global event ([`Model::on_global`](crate::Model::on_global)).
        lp: LpId,
        /// The time of the event it was handling.
        time: Time,
        /// The panic message.
        message: String,
    },
    /// A model method other than an event handler (`Model::finish`, `Model::topology`,
    /// `Model::lookahead`, `Model::global_events`) panicked; the run stopped there.
    MethodPanic {
        /// The method, as `Model::finish`.
        method: &'static str,
        /// The LP it was called for, if any.
        lp: Option<LpId>,
        /// The panic message.
        message: String,
    },
    /// A resource limit (such as the memory bound of an optimistic run) was reached.
    Resource(String),
    /// A worker process of a multi-process run failed (killed, crashed, or could not be
    /// started or reached); every other process was stopped.
    Process(String),
    /// A stop request (Ctrl-C in the CLI) arrived while the LPs were being initialized, before
    /// any event ran. Internal: [`Simulation::run`](crate::Simulation::run) turns it into an
    /// incomplete report (`complete: false`), as a stop during the run does.
    #[doc(hidden)]
    StoppedInInit,
}

/// `SimError::Process` for an I/O error while doing `what` ("cannot create a pipe: …"), as a
/// `map_err` argument.
pub(crate) fn io_error(what: &str) -> impl Fn(std::io::Error) -> SimError + '_ {
    move |e| SimError::Process(format!("{what}: {e}"))
}

impl SimError {
    /// A [`SimError::Config`] about `setting` that is not about one value of it.
    pub(crate) fn config(setting: Setting, problem: impl Into<String>) -> Self {
        SimError::Config(ConfigError::about(setting, problem))
    }

    /// Whether the error is the user's configuration (as opposed to something that happened
    /// while running).
    pub fn is_config(&self) -> bool {
        matches!(self, SimError::Config(_))
    }
}

impl fmt::Debug for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Config(m) => write!(f, "invalid configuration: {m}"),
            SimError::Model(e) => write!(f, "model error: {e}"),
            SimError::Panic { lp, time, message } if *lp == ENGINE_SENDER => {
                write!(
                    f,
                    "model panicked: global event at time {time}: {}",
                    first_line(message)
                )
            }
            SimError::Panic { lp, time, message } => {
                write!(
                    f,
                    "model panicked: LP {lp} at time {time}: {}",
                    first_line(message)
                )
            }
            SimError::MethodPanic {
                method,
                lp: Some(lp),
                message,
            } => write!(
                f,
                "model panicked: {method} for LP {lp}: {}",
                first_line(message)
            ),
            SimError::MethodPanic {
                method,
                lp: None,
                message,
            } => write!(f, "model panicked: {method}: {}", first_line(message)),
            SimError::Resource(m) => write!(f, "resource limit: {m}"),
            SimError::Process(m) => write!(f, "{m}"),
            SimError::StoppedInInit => write!(f, "stopped during initialization"),
        }
    }
}

impl std::error::Error for SimError {}

impl From<ModelError> for SimError {
    fn from(e: ModelError) -> Self {
        SimError::Model(e)
    }
}

impl SimError {
    /// The error for a handler of LP `lp` that panicked at `time` with `payload`.
    pub(crate) fn from_panic(lp: LpId, time: Time, payload: &(dyn std::any::Any + Send)) -> Self {
        if let Some(HeapFull(why)) = payload.downcast_ref::<HeapFull>() {
            // A limit of the run's shared heap, not the model's fault.
            return SimError::Resource(format!("LP {lp} at time {time}: {why}"));
        }
        SimError::Panic {
            lp,
            time,
            message: panic_message(payload),
        }
    }
}

/// Runs the model method `method` (for LP `lp`, if any), turning a panic into
/// [`SimError::MethodPanic`].
pub(crate) fn guard<T>(
    method: &'static str,
    lp: Option<LpId>,
    f: impl FnOnce() -> T,
) -> Result<T, SimError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        SimError::MethodPanic {
            method,
            lp,
            message: panic_message(payload.as_ref()),
        }
    })
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The panic payload of a shared-heap allocation that failed in a handler (`Ctx::alloc_*`):
/// [`SimError::from_panic`] reports it as [`SimError::Resource`], not as a panic of the model.
pub(crate) struct HeapFull(pub(crate) String);

/// Turns a caught panic's payload into its message (for programs that catch panics around
/// chronon, as its runner does).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(HeapFull(s)) = payload.downcast_ref::<HeapFull>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

#[cfg(test)]
mod render_tests {
    use super::*;

    #[test]
    fn settings_in_a_problem_are_named_by_whoever_renders_it() {
        let e = ConfigError::about(
            Setting::Runtime,
            "$runtime work-stealing does not run across processes; leave out $processes or $runtime ($notasetting, $)",
        );
        assert_eq!(
            e.to_string(),
            "ConservativeConfig::runtime work-stealing does not run across processes; leave out processes or ConservativeConfig::runtime ($notasetting, $)"
        );
        let flags = e.render(|s| format!("--{}", s.token().replace('_', "-")));
        assert_eq!(
            flags,
            "--runtime work-stealing does not run across processes; leave out --processes or --runtime ($notasetting, $)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_the_one_line_message() {
        let e = SimError::Config(ConfigError::new(
            Setting::EndTime,
            f64::NAN,
            "it must be > 0",
        ));
        assert_eq!(
            format!("{e:?}"),
            "invalid configuration: end_time(NaN): it must be > 0"
        );
        let m = SimError::Model(ModelError {
            lp: 3,
            time: 1.5,
            message: "bad send".into(),
        });
        assert_eq!(format!("{m:?}"), format!("{m}"));
        assert!(!format!("{m:?}").contains('{'));
    }
}
