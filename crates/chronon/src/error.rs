//! Errors. Every variant's `Display` is one line that names what is wrong and what is allowed.

use std::fmt;

use crate::event::ENGINE_SENDER;
use crate::model::{LpId, Time};

/// A model broke a rule of the engine inside a handler (bad send, unknown counter).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelError {
    /// The LP whose handler broke the rule.
    pub lp: LpId,
    /// The simulated time of the event being handled (0 during `init`).
    pub time: Time,
    /// What went wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LP {} at time {}: {}", self.lp, self.time, self.message)
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
    Config(String),
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

impl SimError {
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

/// Turns a panic payload into its message.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_the_one_line_message() {
        let e = SimError::Config("end time is NaN; it must be finite and > 0".into());
        assert_eq!(
            format!("{e:?}"),
            "invalid configuration: end time is NaN; it must be finite and > 0"
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
