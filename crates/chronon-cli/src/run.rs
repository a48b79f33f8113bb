//! Running one simulation from the command line: executor choice, progress, Ctrl-C, summary and
//! JSON report.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::lockstep_runtime::runtime;
use chronon::barrier::BarrierKind;
use chronon::partition::Mapping;
use chronon::{
    ConservativeConfig, Executor, LpId, Model, Progress, QueueKind, Report, Runtime, Simulation,
    StallDetector, StateSaving, Ticks, TimeWarpOptions,
};

use crate::args::CommonArgs;
use crate::output::{self, Outputs};
use crate::{series, sys, Failure, EXIT_INTERRUPTED};

/// The end time of `model` when neither a flag nor the config gives one: a run of the model's
/// default configuration that takes a few seconds at most (release build, one thread).
pub(crate) fn default_end(model: &str) -> f64 {
    match model {
        // Phase A only; `--end 30` runs the three phases (about a minute).
        "phold-phases" => 3.0,
        "simplesim" => 100.0,
        "manufacturing" => 10_000.0,
        // Minutes.
        "pcs" => 5.0,
        // Seconds.
        "star-clique" => 100.0,
        "campus" => 2.0,
        // Every event spins the example's 30 µs of work (`--work-us`).
        "datastore" => 200.0,
        _ => 1000.0,
    }
}

/// Maps `--sync` and `--threads` onto an executor.
pub(crate) fn executor(sync: Option<&str>, threads: Option<usize>) -> Result<Executor, Failure> {
    executor_with(sync, threads, &CommonArgs::default())
}

/// Maps `--sync`, `--threads` and the conservative executors' flags (`--barrier`, `--fan-in`,
/// `--mapping`) onto an executor.
pub(crate) fn executor_with(
    sync: Option<&str>,
    threads: Option<usize>,
    common: &CommonArgs,
) -> Result<Executor, Failure> {
    let threads = threads.unwrap_or(1);
    let sync_name = sync.unwrap_or("seq");
    if sync_name != "window" {
        let given = [
            ("--dedicated", common.dedicated.is_some()),
            ("--shared-sets", common.shared_sets.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            return Err(Failure::bad_input(format!(
                "{flag} applies to --sync window only; got --sync {sync_name}"
            )));
        }
    }
    if threads == 0 {
        return Err(Failure::bad_input("--threads is 0; it must be at least 1"));
    }
    let sync = sync.unwrap_or("seq");
    runtime(sync, common)?;
    if matches!(sync, "seq" | "timewarp" | "null-message") {
        let given = [
            ("--barrier", common.barrier.is_some()),
            ("--fan-in", common.fan_in.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            // Null messages synchronize through channel clocks, never at a barrier.
            let why = if sync == "null-message" {
                " (null messages use no barrier)"
            } else {
                ""
            };
            return Err(Failure::bad_input(format!(
                "{flag} applies to --sync window or lockstep only{why}; got --sync {sync}"
            )));
        }
    }
    if sync != "null-message" && common.max_null_messages.is_some() {
        return Err(Failure::bad_input(format!(
            "--max-null-messages applies to --sync null-message only; got --sync {sync}"
        )));
    }
    if sync == "seq" && common.mapping.is_some() {
        return Err(Failure::bad_input(
            "--mapping applies to --sync window, null-message, lockstep or timewarp only; got --sync seq",
        ));
    }
    if common.fan_in.is_some() && common.barrier.as_deref().is_some_and(|b| b != "tree") {
        return Err(Failure::bad_input(format!(
            "--fan-in applies to --barrier tree only; got --barrier {}",
            common.barrier.as_deref().unwrap_or_default()
        )));
    }
    if common.shared_sets.is_some() && common.dedicated.is_none_or(|d| d >= 1.0) {
        return Err(Failure::bad_input(
            "--shared-sets applies only with --dedicated below 1 (some LPs shared); give --dedicated F with F < 1",
        ));
    }
    match sync {
        "seq" => {
            if threads != 1 {
                return Err(Failure::bad_input(format!(
                    "--sync seq runs on exactly 1 thread; got --threads {threads} (for {threads} \
                     threads give a parallel --sync: window, null-message, lockstep or timewarp)"
                )));
            }
            Ok(Executor::Sequential)
        }
        "window" => Ok(Executor::Window(conservative(threads, common)?)),
        "null-message" => Ok(Executor::NullMessage(conservative(threads, common)?)),
        "lockstep" => Ok(Executor::Lockstep(conservative(threads, common)?)),
        "timewarp" => Ok(Executor::TimeWarp { threads }),
        other => Err(Failure::bad_input(format!(
            "unknown --sync '{other}' (allowed: seq, window, null-message, lockstep, timewarp)"
        ))),
    }
}

/// Parses a byte count with an optional K, M or G suffix (powers of 1024).
fn parse_bytes(s: &str) -> Result<u64, Failure> {
    let t = s.trim();
    let (digits, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = digits.parse().map_err(|_| {
        Failure::bad_input(format!(
            "--max-memory is '{s}'; it must be a byte count like 1000000, 512M or 2G"
        ))
    })?;
    match n.checked_mul(mult) {
        Some(0) => Err(Failure::bad_input(
            "--max-memory is 0; it must be at least 1 byte",
        )),
        Some(b) => Ok(b),
        None => Err(Failure::bad_input(format!(
            "--max-memory '{s}' is too large"
        ))),
    }
}

/// The Time Warp settings from the common flags; an error when they are given to another
/// executor or out of range.
fn time_warp_options(common: &CommonArgs, executor: &Executor) -> Result<TimeWarpOptions, Failure> {
    let given = [
        ("--state-saving", common.state_saving.is_some()),
        ("--checkpoint", common.checkpoint.is_some()),
        ("--max-memory", common.max_memory.is_some()),
        ("--window", common.window.is_some()),
        ("--check-reverse", common.check_reverse == Some(true)),
        ("--gvt-csv", common.gvt_csv.is_some()),
        ("--preempt", common.preempt == Some(true)),
        ("--max-suspended", common.max_suspended.is_some()),
        ("--tick-us", common.tick_us.is_some()),
        ("--alpha", common.alpha.is_some()),
    ];
    if !matches!(executor, Executor::TimeWarp { .. }) {
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            return Err(Failure::bad_input(format!(
                "{flag} applies to --sync timewarp only; got --sync {}",
                executor.name()
            )));
        }
    }
    let state_saving: StateSaving = match common.state_saving.as_deref() {
        None => StateSaving::Auto,
        Some(s) => s
            .parse()
            .map_err(|e: String| Failure::bad_input(format!("--state-saving: {e}")))?,
    };
    if common.checkpoint == Some(0) {
        return Err(Failure::bad_input(
            "--checkpoint is 0; it must be at least 1 event",
        ));
    }
    let max_memory = common.max_memory.as_deref().map(parse_bytes).transpose()?;
    if let Some(w) = common.window {
        if w.is_nan() || w < 0.0 {
            return Err(Failure::bad_input(format!(
                "--window is {w}; it must be >= 0"
            )));
        }
    }
    let preempt = common.preempt == Some(true);
    if !preempt {
        for (flag, g) in [
            ("--max-suspended", common.max_suspended.is_some()),
            ("--tick-us", common.tick_us.is_some()),
            ("--alpha", common.alpha.is_some()),
        ] {
            if g {
                return Err(Failure::bad_input(format!(
                    "{flag} applies to --preempt only"
                )));
            }
        }
    }
    if let Some(t) = common.tick_us {
        if !(t >= chronon::MIN_TICK_US && t.is_finite()) {
            return Err(Failure::bad_input(format!(
                "--tick-us is {t}; it must be at least {}",
                chronon::MIN_TICK_US
            )));
        }
    }
    let alpha = common.alpha.unwrap_or(0.5);
    if !(alpha > -1.0 && alpha.is_finite()) {
        return Err(Failure::bad_input(format!(
            "--alpha is {alpha}; it must be finite and > -1"
        )));
    }
    if common.alpha.is_some() && common.tick_us.is_none() {
        return Err(Failure::bad_input("--alpha applies to --tick-us only"));
    }
    Ok(TimeWarpOptions::new()
        .preempt(preempt)
        .max_suspended(common.max_suspended.unwrap_or(64))
        .ticks(common.tick_us.map(|t| Ticks::new(t, alpha)))
        .state_saving(state_saving)
        .checkpoint(common.checkpoint)
        .max_memory(max_memory)
        .window(common.window)
        .mapping(mapping(common)?))
}

/// The LP-to-worker mapping from `--mapping`.
fn mapping(common: &CommonArgs) -> Result<Mapping, Failure> {
    match common.mapping.as_deref().unwrap_or("block") {
        "block" => Ok(Mapping::Block),
        "round-robin" => Ok(Mapping::RoundRobin),
        other => Err(Failure::bad_input(format!(
            "unknown --mapping '{other}' (allowed: block, round-robin)"
        ))),
    }
}

/// The conservative executors' settings from `--barrier`, `--fan-in` and `--mapping`.
fn conservative(threads: usize, common: &CommonArgs) -> Result<ConservativeConfig, Failure> {
    let fan_in = common.fan_in.unwrap_or(4);
    let barrier = BarrierKind::parse(common.barrier.as_deref().unwrap_or("tree"), fan_in)
        .map_err(Failure::bad_input)?;
    let mapping = mapping(common)?;
    let dedicated = common.dedicated.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&dedicated) {
        return Err(Failure::bad_input(format!(
            "--dedicated is {dedicated}; it must be in [0, 1]"
        )));
    }
    let shared_sets = match common.shared_sets {
        Some(0) if dedicated < 1.0 => {
            return Err(Failure::bad_input(format!(
                "--shared-sets is 0; it must be at least 1 with --dedicated {dedicated}"
            )))
        }
        Some(n) => n,
        None if dedicated < 1.0 => 1,
        None => 0,
    };
    let mut cc = ConservativeConfig::new(threads)
        .barrier(barrier)
        .mapping(mapping)
        .dedicated(dedicated)
        .shared_sets(shared_sets)
        .runtime(runtime("lockstep", common)?);
    if let Some(cap) = common.max_null_messages {
        if !(cap >= 1.0) || cap > u64::MAX as f64 {
            return Err(Failure::bad_input(format!(
                "--max-null-messages is {cap}; it must be a count of at least 1, like 1e12"
            )));
        }
        cc = cc.max_null_messages(cap as u64);
    }
    Ok(cc)
}

/// How a model runs across worker processes (`--procs`): only models whose events may cross
/// a process boundary (`chronon::shm::ShmSafe`) can; the others say why.
pub(crate) trait Procs: Model + Sized {
    /// `sim` set to run in `procs` processes, or why this model cannot.
    fn processes(
        sim: Simulation<Self>,
        procs: usize,
        copy: bool,
    ) -> Result<Simulation<Self>, String>;
    /// `sim` set to run over MPI ranks (`crate::mpi`).
    #[cfg(feature = "mpi")]
    fn ranks(sim: Simulation<Self>) -> Result<Simulation<Self>, String>;
    /// Why this model (run under `name`) cannot run across processes, if it cannot.
    fn why_not(name: &str) -> Option<String> {
        let _ = name;
        None
    }
}

macro_rules! procs_capable {
    ($($t:ty),* $(,)?) => { $(
        impl Procs for $t {
            fn processes(
                sim: Simulation<Self>,
                procs: usize,
                copy: bool,
            ) -> Result<Simulation<Self>, String> {
                Ok(sim.processes(procs).payload_copy(copy))
            }
            #[cfg(feature = "mpi")]
            fn ranks(sim: Simulation<Self>) -> Result<Simulation<Self>, String> {
                crate::mpi::ranks(sim)
            }
        }
    )* };
}

// Every shipped model's events may cross a process boundary (variable-size payloads travel
// as shared-heap `BPtr`s) and serialize (MPI ranks).
procs_capable!(
    chronon_models::Phold,
    chronon_models::PholdPhases,
    chronon_models::Pcs,
    chronon_models::Manufacturing,
    chronon_models::Random,
    chronon_models::faulty::Faulty,
    chronon_models::SimpleSim,
    chronon_models::DataStore,
    chronon_models::net::NetModel,
);

/// `--payload`, `--heap-classes`, `--heap-segments`: sets this process's shared-heap classes;
/// whether payloads are copied.
fn payload_options(common: &CommonArgs, procs: Option<usize>) -> Result<bool, Failure> {
    let copy = match common.payload.as_deref() {
        None | Some("zero-copy") => false,
        Some("copy") => true,
        Some(other) => {
            return Err(Failure::bad_input(format!(
                "unknown --payload '{other}' (allowed: zero-copy, copy)"
            )))
        }
    };
    if copy && procs.is_none() {
        return Err(Failure::bad_input(
            "--payload copy compares transports between processes: it needs --procs",
        ));
    }
    let mut heap = match common.heap_classes.as_deref() {
        None => chronon::shm::HeapConfig::default(),
        Some(t) => chronon::shm::HeapConfig::parse(t).map_err(Failure::bad_input)?,
    };
    if let Some(n) = common.heap_segments {
        if !(1..=16).contains(&n) {
            return Err(Failure::bad_input(format!(
                "--heap-segments is {n}; it must be 1..=16 (1: the heaps never grow)"
            )));
        }
        heap = heap.max_segments(n);
    }
    chronon::shm::set_heap_config(heap);
    Ok(copy)
}

/// `--runtime bsp --threads N` runs N single-threaded worker processes (seed 002's BSP
/// version: one process per processor): the executor gets 1 thread and the run N processes.
fn bsp_processes(
    executor: Executor,
    procs: Option<usize>,
) -> Result<(Executor, Option<usize>), Failure> {
    match executor {
        Executor::Lockstep(cc) if cc.runtime == Runtime::Bsp => {
            if let Some(p) = procs {
                return Err(Failure::bad_input(format!(
                    "--runtime bsp starts one single-threaded process per --threads ({}); leave out --procs {p}",
                    cc.threads
                )));
            }
            let n = cc.threads;
            let mut one = cc;
            one.threads = 1;
            Ok((Executor::Lockstep(one), Some(n)))
        }
        other => Ok((other, procs)),
    }
}

/// `--procs`: at least 1, a conservative parallel executor, a model that can.
fn check_procs<M: Procs>(
    name: &str,
    procs: Option<usize>,
    executor: &Executor,
) -> Result<(), Failure> {
    let Some(p) = procs else {
        return Ok(());
    };
    if p == 0 {
        return Err(Failure::bad_input(
            "--procs is 0; it must be at least 1 worker process",
        ));
    }
    match executor.name() {
        "seq" => Err(Failure::bad_input(
            "--procs needs --sync window, lockstep, null-message or timewarp; got --sync seq",
        )),
        _ => M::why_not(name).map_or(Ok(()), |why| Err(Failure::bad_input(why))),
    }
}

/// Validates the common settings, runs `model`, prints the summary and writes the report.
#[allow(dead_code)] // for models whose states cannot be compared (none yet besides PHOLD)
pub(crate) fn run_simulation<M: Procs>(
    name: &str,
    model: M,
    lps: LpId,
    common: CommonArgs,
    model_config: serde_json::Value,
) -> Result<u8, Failure> {
    run_simulation_checked(name, model, lps, common, model_config, None)
}

/// [`run_simulation`] for a model whose states can be compared: `check_reverse` is
/// `Simulation::check_reverse`, applied when `--check-reverse` is given.
pub(crate) fn run_simulation_checked<M: Procs>(
    name: &str,
    model: M,
    lps: LpId,
    common: CommonArgs,
    model_config: serde_json::Value,
    check_reverse: Option<fn(Simulation<M>) -> Simulation<M>>,
) -> Result<u8, Failure> {
    let end = common.end.unwrap_or_else(|| default_end(name));
    if !(end > 0.0 && end.is_finite()) {
        return Err(Failure::bad_input(format!(
            "--end is {end}; it must be finite and > 0"
        )));
    }
    let queue: QueueKind = match common.queue.as_deref() {
        None => QueueKind::default(),
        Some(q) => q.parse().map_err(Failure::bad_input)?,
    };
    let executor = executor_with(common.sync.as_deref(), common.threads, &common)?;
    let tw = time_warp_options(&common, &executor)?;
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
    // The report's config keeps what was asked for (`--runtime bsp --threads N` reruns it).
    let asked = executor.clone();
    let (executor, procs) = bsp_processes(executor, common.procs)?;
    check_procs::<M>(name, procs, &executor)?;
    let copy = payload_options(&common, procs)?;
    // Over MPI ranks: MPI for the run (finalized when this function returns).
    let mpi = crate::mpi::start(common.ranks, procs)?;
    let outputs = plan_outputs(&common, &executor)?;

    let progress = Arc::new(Progress::new());
    install_ctrlc(&progress);
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

    let sim = Simulation::new(model)
        .lps(lps)
        .end_time(end)
        .seed(seed)
        .queue(queue)
        .executor(executor.clone())
        .time_warp(tw)
        .progress(progress.clone());
    let sim = match check {
        Some(f) => f(sim),
        None => sim,
    };
    let sim = match procs {
        None => sim,
        Some(p) => M::processes(sim, p, copy).map_err(Failure::bad_input)?,
    };
    #[cfg(feature = "mpi")]
    let sim = match &mpi {
        Some(_) => M::ranks(sim).map_err(Failure::bad_input)?,
        None => sim,
    };
    let result = sim.run();
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

    let config = report_config(&common, &asked, end, seed, queue, model_config);
    print_summary(name, &report);
    // Both files are attempted even when the first fails; the first failure is returned.
    let written = [
        outputs.path("--output").map_or(Ok(()), |p| {
            write_report(p, name, config, &report, &samples, rb)
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
    ];
    for w in written {
        w?;
    }
    if report.complete {
        Ok(0)
    } else {
        eprintln!("interrupted: the report covers the events committed before the stop");
        Ok(EXIT_INTERRUPTED)
    }
}

/// The report's `config`: every option that shaped the run, under the keys `--config` takes,
/// so that the report's config, written as TOML, reruns the same simulation. Executor options
/// are the ones in force (defaults included) where the executor takes them.
fn report_config(
    common: &CommonArgs,
    executor: &Executor,
    end: f64,
    seed: u64,
    queue: QueueKind,
    model_config: serde_json::Value,
) -> serde_json::Value {
    use serde_json::{json, Value};
    let mut c = serde_json::Map::new();
    c.insert("end".into(), json!(end));
    c.insert("seed".into(), json!(seed));
    c.insert("queue".into(), json!(queue.name()));
    c.insert("sync".into(), json!(executor.name()));
    c.insert("threads".into(), json!(executor.threads()));
    if let Some(p) = common.procs {
        c.insert("procs".into(), json!(p));
    }
    let mut put = |k: &str, v: Value| {
        c.insert(k.into(), v);
    };
    let mapping = common.mapping.as_deref().unwrap_or("block");
    match executor {
        Executor::Window(cc) | Executor::Lockstep(cc) | Executor::NullMessage(cc) => {
            put("mapping", json!(mapping));
            if !matches!(executor, Executor::NullMessage(_)) {
                let barrier = common.barrier.as_deref().unwrap_or("tree");
                put("barrier", json!(barrier));
                if barrier == "tree" {
                    put("fan-in", json!(common.fan_in.unwrap_or(4)));
                }
            }
            match cc.runtime {
                Runtime::WorkStealing { threshold } => {
                    put("runtime", json!(cc.runtime.name()));
                    put("threshold", json!(threshold));
                }
                Runtime::Bsp => put("runtime", json!(cc.runtime.name())),
                _ => {}
            }
            if matches!(executor, Executor::NullMessage(_)) {
                put("max-null-messages", json!(cc.max_null_messages as f64));
            }
            if matches!(executor, Executor::Window(_)) {
                put("dedicated", json!(cc.dedicated));
                if cc.dedicated < 1.0 {
                    put("shared-sets", json!(cc.shared_sets));
                }
            }
        }
        Executor::TimeWarp { .. } => {
            put("mapping", json!(mapping));
            put(
                "state-saving",
                json!(common.state_saving.as_deref().unwrap_or("auto")),
            );
            if let Some(k) = common.checkpoint {
                put("checkpoint", json!(k));
            }
            if let Some(m) = &common.max_memory {
                put("max-memory", json!(m));
            }
            if let Some(w) = common.window {
                // JSON has no infinity; the config file reads "inf" as well as numbers.
                put(
                    "window",
                    if w.is_finite() {
                        json!(w)
                    } else {
                        json!("inf")
                    },
                );
            }
            if common.check_reverse == Some(true) {
                put("check-reverse", json!(true));
            }
            if common.preempt == Some(true) {
                put("preempt", json!(true));
                put("max-suspended", json!(common.max_suspended.unwrap_or(64)));
                if let Some(t) = common.tick_us {
                    put("tick-us", json!(t));
                    put("alpha", json!(common.alpha.unwrap_or(0.5)));
                }
            }
        }
        // Sequential: nothing more.
        _ => {}
    }
    if let Value::Object(m) = model_config {
        for (k, v) in m {
            c.insert(k.replace('_', "-"), v);
        }
    }
    Value::Object(c)
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
        if dir && common.gvt_csv.is_none() && matches!(executor, Executor::TimeWarp { .. }) {
            wanted.push(("--gvt-csv", out.join("gvt.csv")));
        }
    }
    if let Some(p) = &common.gvt_csv {
        wanted.push(("--gvt-csv", p.clone()));
    }
    let inputs: Vec<(&'static str, &Path)> = common
        .config
        .as_deref()
        .map(|p| ("--config", p))
        .into_iter()
        .collect();
    Outputs::plan(&wanted, &inputs)
}

fn install_ctrlc(progress: &Arc<Progress>) {
    let p = progress.clone();
    let pressed = AtomicBool::new(false);
    // A second Ctrl-C ends the process at once. Failing to install the handler (another one is
    // already installed, as in a second run in one process) is harmless.
    let _ = ctrlc::set_handler(move || {
        // Ordering: a one-shot flag private to this handler.
        if pressed.swap(true, Ordering::Relaxed) {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
        p.request_stop();
    });
}

/// The progress thread: on a terminal it draws the progress line; everywhere it watches for a
/// stall (no simulated progress for `stall_after` of wall time, `--stall-secs`, default 10 s,
/// 0 = never) and then prints one warning naming the likely cause.
fn spawn_progress_bar(
    progress: Arc<Progress>,
    done: Arc<AtomicBool>,
    end: f64,
    stall_after: Duration,
) -> std::thread::JoinHandle<()> {
    let mut stall = (!stall_after.is_zero()).then(|| StallDetector::new(stall_after, end));
    // A worker process of --procs draws nothing: its parent owns the terminal.
    let terminal =
        std::io::stderr().is_terminal() && !chronon::is_worker_process() && !crate::mpi::quiet();
    std::thread::spawn(move || {
        let bar = if terminal {
            indicatif::ProgressBar::new(1000)
        } else {
            indicatif::ProgressBar::hidden()
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:24}] {percent:>3}% eta {eta} {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        let mut last = (std::time::Instant::now(), progress.events(), progress.now());
        // Ordering: see `run_simulation`.
        while !done.load(Ordering::Relaxed) {
            // Parked rather than asleep: the main thread unparks it when the run ends.
            std::thread::park_timeout(Duration::from_millis(250));
            if done.load(Ordering::Relaxed) {
                break;
            }
            let (t, events, now) = (std::time::Instant::now(), progress.events(), progress.now());
            if let Some(warning) = stall.as_mut().and_then(|s| s.observe(t, now)) {
                bar.suspend(|| eprintln!("{warning}"));
            }
            // The rates over the last interval, so start-up does not skew them.
            let dt = (t - last.0).as_secs_f64().max(1e-3);
            let rate = (events - last.1) as f64 / dt;
            let sim_rate = (now - last.2) / dt;
            last = (t, events, now);
            bar.set_position(((now / end) * 1000.0).clamp(0.0, 1000.0) as u64);
            bar.set_message(format!(
                "t={now:.4} {sim_rate:.3e} sim-s/s {:.2} M ev/s",
                rate / 1e6
            ));
        }
        bar.finish_and_clear();
    })
}

/// Prints the summary on stdout. A closed stdout (`chronon run ... | head -1`) is not an
/// error: the report is still written.
fn print_summary(name: &str, r: &Report) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // Write errors are ignored: see above.
    macro_rules! println {
        ($($t:tt)*) => {{ let _ = writeln!(out, $($t)*); }};
    }
    let procs = match (r.executor_stats.get("procs"), r.executor_stats.get("ranks")) {
        (Some(p), _) => format!(" in each of {p} processes"),
        (None, Some(n)) => format!(" on each of {n} MPI ranks"),
        (None, None) => String::new(),
    };
    println!(
        "{name}: sync {} ({} thread{}{procs}), queue {}, {} LPs, end {}",
        r.sync,
        r.threads,
        if r.threads == 1 { "" } else { "s" },
        r.queue,
        r.lps,
        r.end_time
    );
    println!("committed    {}", r.committed);
    if r.rolled_back > 0 {
        println!(
            "processed    {} ({} rolled back)",
            r.processed, r.rolled_back
        );
    }
    if let Some(eff) = r.executor_stats.get("efficiency") {
        println!("efficiency   {:.3}", eff);
    }
    for line in time_warp_lines(r) {
        println!("{line}");
    }
    println!("wall         {:.3} s", r.wall_s);
    println!("events/s     {:.0}", r.events_per_s);
    println!("fingerprint  {}", r.fingerprint);
    if !r.complete {
        println!("INCOMPLETE   stopped at t = {}", r.last_time);
    }
}

/// Time Warp's rollback and preemption lines of the summary (issue 12, item 6; the same
/// figures, per worker too, are in the report's `executor_stats` and `workers`).
fn time_warp_lines(r: &Report) -> Vec<String> {
    let es = &r.executor_stats;
    let get = |k: &str| es.get(k).copied().unwrap_or(0.0);
    let mut lines = Vec::new();
    if get("rollbacks") > 0.0 {
        lines.push(format!(
            "rollbacks    {} (mean {:.1} events, longest {}; {:.3} s rolling back, {:.1} us each)",
            get("rollbacks"),
            get("rollback_length_mean"),
            get("rollback_length_max"),
            get("rollback_wall_s"),
            get("rollback_wall_mean_us")
        ));
    }
    if es.contains_key("preemptions") {
        lines.push(format!(
            "preemption   {} started, {} preempted, {} resumed, {} discarded, {} ran unpreemptible",
            get("preempt_started"),
            get("preemptions"),
            get("preempt_resumed"),
            get("preempt_discarded"),
            get("preempt_fallbacks")
        ));
    }
    if es.contains_key("ticks_delivered") {
        let rule: Vec<String> = r
            .workers
            .iter()
            .enumerate()
            .map(|(w, m)| {
                let f = |k: &str| m.get(k).copied().unwrap_or(0.0);
                format!("w{w} {:.1} us / {:.2}", f("delta_e_us"), f("apms"))
            })
            .collect();
        lines.push(format!(
            "ticks        {} delivered, {} acted on, on for {:.3} s; Δe / APMS: {}",
            get("ticks_delivered"),
            get("ticks_acted_on"),
            get("ticks_on_s"),
            rule.join(", ")
        ));
    }
    lines
}

fn write_report(
    path: &Path,
    name: &str,
    config: serde_json::Value,
    report: &Report,
    samples: &[series::Sample],
    rollbacks: bool,
) -> Result<(), Failure> {
    let mut v = serde_json::to_value(report).expect("reports serialize");
    let obj = v.as_object_mut().expect("a report is an object");
    obj.insert("progress_series".into(), series::json(samples, rollbacks));
    obj.insert("model".into(), name.into());
    obj.insert("config".into(), config);
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
