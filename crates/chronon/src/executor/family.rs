//! A protocol family as the part runner (`crate::run`) sees it. A run across parts (worker
//! processes of `--procs`, ranks of an `mpirun`) is one frame written once in `crate::run`:
//! checks and the run signature, launching or joining the parts, every part's output gathered,
//! `model_stats` in LP order, the first error, the one report. What differs per family is
//! here: its name and settings, its own refusals, how one part runs over a transport
//! (`executor/over/`) and how the parts' outputs make the report
//! ([`Family::report`], which the family's run on threads uses too, so that a report has the
//! same fields under every transport). A family's part over each transport is written in its
//! `over/` folder, the only place where it names a concrete transport; the seams it implements
//! are in `executor/over/`.

#![cfg_attr(chronon_loom, allow(dead_code))] // runs across parts are not built under loom
use crate::error::{Setting, SimError};
use crate::model::{Model, ModelStats};
use crate::partition::Mapping;
use crate::stats::Report;

use super::part_out::PartOut;
use super::RunConfig;

/// What the part runner asks of a protocol family (conservative: window, lock-step, null
/// messages; Time Warp).
pub(crate) trait Family<M: Model>: Sync {
    /// The executor's name (`--sync`), as the report gives it.
    fn name(&self) -> &'static str;

    /// Worker threads per part.
    fn threads(&self) -> usize;

    /// The LP to worker mapping, over every part's workers (`part * threads + thread`).
    fn mapping(&self) -> &Mapping;

    /// What this family cannot do across `parts` parts (`across`: [`Setting::Processes`] or
    /// [`Setting::Ranks`]), beyond what no family can (`run::checks`): one line, before
    /// anything starts, the same in every part.
    fn refuse_across(
        &self,
        model: &M,
        cfg: &RunConfig,
        across: Setting,
        parts: usize,
    ) -> Result<(), SimError>;

    /// This family's settings in the run signature (every part must have reached the same run).
    fn settings(&self) -> String;

    /// The one report from every part's output (`stats`: `model_stats`, computed in LP order
    /// by the coordinator). The transport's own figures are added by the part runner.
    fn report(
        &self,
        model: &M,
        cfg: &RunConfig,
        outs: Vec<PartOut>,
        stats: ModelStats,
    ) -> Result<Report, SimError>;
}

/// How a refusal names the count and the parts of a run across `across`
/// ([`Setting::Processes`] or [`Setting::Ranks`]).
pub(crate) fn across_words(across: Setting) -> (&'static str, &'static str) {
    match across {
        Setting::Ranks => ("$ranks", "MPI ranks"),
        _ => ("$processes", "processes"),
    }
}
