//! Running one simulation from the command line: executor choice, progress, Ctrl-C, summary and
//! JSON report. The option checks are in `checks.rs`, the report's `config` in `report_cfg.rs`,
//! the Ctrl-C handler and progress thread in `progress.rs`, the printed summary in
//! `summary.rs`; this file runs the simulation and writes its outputs.

pub(crate) mod advice;
mod checkpoint;
mod checks;
mod merge;
mod profile;
mod progress;
pub(crate) mod registered;
mod report_cfg;
mod summary;
mod trace;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chronon::{Executor, Model, Progress, QueueKind, Report, Simulation, StallDetector};

use crate::args::CommonArgs;
use crate::output::{self, Outputs};
use crate::registry::{RunnableEvent, RunnableState, SimHook};
use crate::{series, sys, Failure, EXIT_INTERRUPTED};
pub(crate) use checks::executor;
use checks::{barrier_across, bsp_processes, executor_with, payload_options, time_warp_options};
use progress::{install_ctrlc, spawn_progress_bar};
use report_cfg::report_config;
use summary::print_summary;

/// Validates the common settings, runs `model` (called `name`, its parameters `model_config`
/// for the report), prints the summary and writes the outputs. `default_end` is the end time
/// when neither a flag nor the config gives one; `check_reverse` is
/// `Simulation::check_reverse` for a model whose states can be compared (`--check-reverse`).
pub(crate) fn run_simulation<M>(
    name: &str,
    model: M,
    common: CommonArgs,
    model_config: serde_json::Value,
    default_end: Option<f64>,
    check_reverse: Option<SimHook<M>>,
    changeable: &[&str],
) -> Result<u8, Failure>
where
    M: Model<Event: RunnableEvent, State: RunnableState>,
{
    // One spelling for the report, the checkpoints' manifests and the flags.
    let model_config = merge::flag_spelling(model_config);
    let end = match common.end.or(default_end) {
        Some(end) => end,
        None => {
            return Err(Failure::bad_input(format!(
                "{name} has no default end time: give --end"
            )))
        }
    };
    if !(end > 0.0 && end.is_finite()) {
        return Err(Failure::bad_input(format!(
            "--end is {end}; it must be finite and > 0"
        )));
    }
    let queue: QueueKind = common.queue.map_or_else(QueueKind::default, Into::into);
    let executor = executor_with(common.sync, common.threads, &common)?;
    let executor = time_warp_options(&common, executor)?;
    // (A `topology` that panics fails the run below, with the LP named.)
    let topology =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model.topology(0).is_some()))
            .unwrap_or(false);
    let executor = profile::spread_without_topology(executor, topology);
    let check = match (common.check_reverse == Some(true), check_reverse) {
        (false, _) => None,
        (true, Some(f)) => Some(f),
        (true, None) => {
            return Err(Failure::bad_input(format!(
            "--check-reverse needs a model whose state can be compared; {name} does not support it"
        )))
        }
    };
    let seed = common.seed.unwrap_or(1);
    let pin: chronon::placement::Pin = common.pin.map_or_else(Default::default, Into::into);
    // The report's config keeps what was asked for (`--runtime bsp --threads N` reruns it).
    let asked = executor.clone();
    let (executor, procs) = bsp_processes(executor, &common)?;
    barrier_across(&common)?;
    let (copy, heap) = payload_options(&common, procs)?;
    // Over MPI ranks: MPI for the run (finalized when this function returns).
    let mpi = crate::mpi::start(common.ranks, procs)?;
    trace::check(&common, model.lp_count())?;
    profile::check_model(common.mapping.as_ref(), name, model.lp_count())?;
    let outputs = plan_outputs(&common, &executor)?;
    let checkpoints = checkpoint::Checkpoints::check(&common, name, &model_config, changeable)?;

    // A hosted run (`App::run_hosted`) is stopped by its host, which owns SIGINT.
    crate::host::set_end(end);
    let progress = crate::host::progress().unwrap_or_else(|| {
        let p = Arc::new(Progress::new());
        install_ctrlc(&p);
        p
    });
    let done = Arc::new(AtomicBool::new(false));
    let stall_after = match common.stall_secs {
        // Under --procs the events run in the worker processes: nothing here to watch (nor on
        // a rank other than 0, whose progress is not counted).
        _ if procs.is_some() || crate::mpi::quiet() => Duration::ZERO,
        None => StallDetector::DEFAULT_AFTER,
        Some(s) if s.is_finite() && s >= 0.0 => Duration::from_secs_f64(s),
        Some(s) => {
            return Err(Failure::bad_input(format!(
                "--stall-secs is {s}; it must be a number of seconds >= 0 (0: never warn)"
            )))
        }
    };
    let bar = spawn_progress_bar(progress.clone(), done.clone(), end, stall_after);
    let sampler = series::Sampler::start(progress.clone());

    // The report names the model's counters (whole counts among its statistics).
    let counters = model.counter_names();
    let sim = Simulation::new(model)
        .end_time(end)
        .seed(seed)
        .queue(queue)
        .executor(executor.clone())
        .pin(pin)
        .heap(heap)
        .progress(progress.clone());
    let sim = match check {
        Some(f) => f(sim),
        None => sim,
    };
    let sim = checkpoints.apply(sim, name, &model_config);
    let sim = match procs {
        None => sim,
        Some(p) => sim.processes(p).payload_copy(copy),
    };
    #[cfg(feature = "mpi")]
    let sim = match &mpi {
        Some(_) => sim.ranks(),
        None => sim,
    };
    trace::start(&common);
    let result = sim.run();
    let traced = chronon::trace::take();
    // Ordering: the flag only tells the progress thread to stop drawing; it guards no data.
    done.store(true, Ordering::Relaxed);
    // Wake it from its pause so a short run does not wait for the rest of it.
    bar.thread().unpark();
    let _ = bar.join();
    let samples = sampler.finish();
    let report = result?;
    if mpi.is_some() && crate::mpi::quiet() {
        // Rank 0 prints and writes the run's report.
        return Ok(if report.complete { 0 } else { EXIT_INTERRUPTED });
    }
    let rb = series::rollbacks_known(&samples, report.rolled_back);

    let config = report_config(&common, &asked, procs, end, seed, queue, model_config);
    let parallelism = advice::Parallelism::of(&report, mpi.is_none());
    if crate::host::summary() {
        print_summary(name, &report, &parallelism.lines());
    }
    let changed = &checkpoints.changed;
    // Both files are attempted even when the first fails; the first failure is returned.
    let written = [
        outputs.path("--output").map_or(Ok(()), |p| {
            let par = parallelism.json();
            let cfg = (config, counters);
            write_report(p, name, cfg, par, &report, &samples, rb, changed)
        }),
        outputs.path("--gvt-csv").map_or(Ok(()), |p| {
            output::write_or_rescue("--gvt-csv", p, series::gvt_csv(&report).as_bytes())
        }),
        // `--output DIR/` plans report.json first, then progress.csv, then series.csv.
        outputs.paths(PROGRESS_CSV).nth(1).map_or(Ok(()), |p| {
            output::write_or_rescue("--output", p, series::csv(&samples, rb).as_bytes())
        }),
        outputs.paths(PROGRESS_CSV).nth(2).map_or(Ok(()), |p| {
            output::write_or_rescue("--output", p, series::model_csv(&report).as_bytes())
        }),
        outputs.path("--trace").map_or(Ok(()), |p| {
            output::write_or_rescue("--trace", p, trace::text(&traced).as_bytes())
        }),
        outputs.path("--lp-costs").map_or(Ok(()), |p| {
            let text = profile::text(name, &report.lp_costs);
            output::write_or_rescue("--lp-costs", p, text.as_bytes())
        }),
    ];
    for w in written {
        w?;
    }
    if let Some(e) = &report.checkpoint_error {
        return Err(Failure::runtime(format!(
            "{e}; the run stopped at that cut (its report covers the events before it)"
        )));
    }
    if report.complete {
        Ok(0)
    } else {
        if crate::host::progress().is_none() {
            eprintln!("interrupted: the report covers the events committed before the stop");
        }
        Ok(EXIT_INTERRUPTED)
    }
}

/// The label of `DIR/progress.csv` and `DIR/series.csv` among the planned outputs (errors name the flag `--output`
/// and the file).
const PROGRESS_CSV: &str = "--output";

/// The run's output files, checked before it starts (see [`output`]): `--output FILE` or
/// `--output DIR/` (`DIR/report.json`, `DIR/progress.csv`, `DIR/series.csv` — the model's
/// global-event series — and `DIR/gvt.csv` under Time Warp unless `--gvt-csv` names another
/// file).
fn plan_outputs(common: &CommonArgs, executor: &Executor) -> Result<Outputs, Failure> {
    let mut wanted = Vec::new();
    if let Some(out) = common.output.as_deref() {
        let dir = output::is_dir_arg(out);
        wanted.push((
            "--output",
            if dir {
                out.join("report.json")
            } else {
                out.to_path_buf()
            },
        ));
        if dir {
            wanted.push((PROGRESS_CSV, out.join("progress.csv")));
            wanted.push((PROGRESS_CSV, out.join("series.csv")));
        }
        if dir && common.lp_costs.is_none() {
            wanted.push(("--lp-costs", out.join("lp-costs.csv")));
        }
        if dir && common.gvt_csv.is_none() && matches!(executor, Executor::TimeWarp(_)) {
            wanted.push(("--gvt-csv", out.join("gvt.csv")));
        }
    }
    if let Some(p) = &common.gvt_csv {
        wanted.push(("--gvt-csv", p.clone()));
    }
    if let Some(p) = &common.trace {
        wanted.push(("--trace", p.clone()));
    }
    if let Some(p) = &common.lp_costs {
        wanted.push(("--lp-costs", p.clone()));
    }
    let inputs: Vec<(&'static str, &Path)> = common
        .config
        .as_deref()
        .map(|p| ("--config", p))
        .into_iter()
        .collect();
    Outputs::plan(&wanted, &inputs)
}

#[allow(clippy::too_many_arguments)]
fn write_report(
    path: &Path,
    name: &str,
    (config, counters): (serde_json::Value, &[&str]),
    parallelism: serde_json::Value,
    report: &Report,
    samples: &[series::Sample],
    rollbacks: bool,
    changed: &[String],
) -> Result<(), Failure> {
    let mut v = serde_json::to_value(report).expect("reports serialize");
    let obj = v.as_object_mut().expect("a report is an object");
    if let Some(r) = obj.get_mut("restored").and_then(|r| r.as_object_mut()) {
        r.insert("changed".into(), changed.into());
    }
    obj.insert("progress_series".into(), series::json(samples, rollbacks));
    obj.insert("model".into(), name.into());
    obj.insert("model_counters".into(), counters.into());
    obj.insert("config".into(), config);
    obj.insert("parallelism".into(), parallelism);
    // Under --procs, every process of the run: this one and the worker processes' peaks.
    let workers_rss = report
        .executor_stats
        .get("workers_peak_rss_bytes")
        .map_or(0, |b| *b as u64);
    obj.insert(
        "peak_rss_bytes".into(),
        (sys::peak_rss_bytes() + workers_rss).into(),
    );
    obj.insert("process_cpu_s".into(), sys::cpu_seconds().into());
    let text = serde_json::to_string_pretty(&v).expect("JSON values serialize");
    output::write_or_rescue("--output", path, (text + "\n").as_bytes())
}
