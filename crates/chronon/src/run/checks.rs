//! What no family can do across parts, refused once for every family and transport before
//! anything starts, and the run's signature (every part must have reached the same run).

use crate::error::{guard, ConfigError, Setting, SimError};
use crate::executor::family::{across_words, Family};
use crate::executor::RunConfig;
use crate::model::Model;
use crate::shm::MAX_WORKERS;

/// Checks a run of `family` across `parts` parts (`across`: [`Setting::Processes`] or
/// [`Setting::Ranks`]) and returns its signature.
pub(crate) fn across_parts<M: Model, F: Family<M>>(
    model: &M,
    cfg: &RunConfig,
    family: &F,
    across: Setting,
    parts: usize,
) -> Result<String, SimError> {
    if parts == 0 {
        let problem = "it must be at least 1 worker process";
        return Err(ConfigError::new(Setting::Processes, 0, problem).into());
    }
    let threads = family.threads();
    let (count, what) = across_words(across);
    let n = parts.saturating_mul(threads);
    if n > MAX_WORKERS {
        return Err(SimError::config(across, format!(
            "{count} {parts} × $threads {threads} is {n} workers; a run across {what} holds at most {MAX_WORKERS}"
        )));
    }
    // With global events, the chain runs them at cuts (`checkpoint/globals.rs`), which needs
    // the model's states to serialize.
    if !cfg.globals_at_cuts() {
        let globals = guard("Model::global_events", None, || model.global_events())?;
        if !globals.is_empty() {
            return Err(SimError::config(across, format!("this model has global events, which read and may change every LP's state; across {what} they run at a cut of the whole model, which needs its states and events to serialize: build the simulation with serde_model() (or any checkpoint setting) to run it with {count}")));
        }
    }
    family.refuse_across(model, cfg, across, parts)?;
    Ok(format!(
        "lps={} end={:x} seed={} queue={} sync={} threads={threads} parts={parts} {}",
        cfg.lps,
        cfg.end.to_bits(),
        cfg.seed,
        cfg.queue.name(),
        family.name(),
        family.settings()
    ))
}
