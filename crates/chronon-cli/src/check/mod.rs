//! `chronon check`: the differential suite. It draws random small configurations of every
//! model (and of a randomized test model with idle LPs, zero delays, ties, global events and
//! uneven load), runs each under the sequential executor, then under random parallel executors
//! with random options, and compares the fingerprint, the committed count and the model
//! statistics. Every run is a child process (`chronon run ... --output`), so a crash, a hang
//! (a time limit derived from the sequential run's own time, `child::time_limit`) or a wrong
//! exit code is caught too, and a mismatch is reported with the exact
//! command line that reproduces it. The campaign stops after the first failure (`--max-failures
//! N`, `--keep-going`); a parallel run that committed another history is diagnosed first
//! (`diagnose.rs`: shrunk, traced, the first differing LP and event, the likely cause).
//!
//! Each drawn configuration's model is asked whether it has a reverse handler (a handler may
//! depend on a parameter), and a drawn plain `bool` parameter becomes a switch (`--flag` or
//! nothing), as `run` takes it.
//!
//! `--ranks 2,3` (a build with the `mpi` feature, MPICH's `mpirun` on the PATH) adds the ranks
//! dimension: every parallel run is `mpirun -n R chronon run ... --ranks R` with R drawn from the
//! list, and only options that run over ranks are drawn (no `--procs`, work-stealing or
//! active-threads runtime,
//! `--barrier` or load balancing); the sequential reference still runs in one process.
//!
//! Checkpoints are drawn like any other option, over MPI ranks too: a parallel run in three also saves checkpoints every T (`--checkpoint-every`, 1–4
//! cuts) and must still match; one configuration in two has a pair in place of its last
//! parallel run: run A stops at a random cut C saving a checkpoint (`--checkpoint-at C
//! --end C`), run B under another random executor continues from it (`--restore DIR/tC`) to
//! the end and must end as the sequential run that was never interrupted.

mod child;
mod diagnose;
mod draw;
mod runner;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;

use crate::registry::{Draw, Flags, Models};
use crate::Failure;
use draw::SYNCS;
use runner::Runner;

#[derive(Debug, Args)]
pub(crate) struct CheckCmd {
    /// Stop after this many seconds [default: 60, unless --runs is given].
    #[arg(long)]
    seconds: Option<f64>,
    /// Stop after this many model configurations.
    #[arg(long)]
    runs: Option<u64>,
    /// Seed of the campaign (it is printed, so a campaign can be replayed) [default: from the
    /// clock].
    #[arg(long)]
    seed: Option<u64>,
    /// Models to draw from [default: every model of the program].
    #[arg(long, value_delimiter = ',')]
    models: Vec<String>,
    /// Parallel executors to compare with seq [default: window,null-message,lockstep,timewarp].
    #[arg(long, value_delimiter = ',')]
    sync: Vec<String>,
    /// Parallel runs per model configuration.
    #[arg(long, default_value_t = 3)]
    per_config: u32,
    /// A parallel run still running after (--slow-floor + this × the sequential run's time) ×
    /// max(1, its workers / the cores) is killed and reported as slow/hung (a failure).
    #[arg(long, default_value_t = 100.0)]
    slow_factor: f64,
    /// Seconds every parallel run gets on top of the multiple of the sequential run's time.
    #[arg(long, default_value_t = 20.0)]
    slow_floor: f64,
    /// Print every run's command line and outcome.
    #[arg(long)]
    verbose: bool,
    /// Stop after this many failures (each is diagnosed and printed) [default: 1].
    #[arg(long)]
    max_failures: Option<u64>,
    /// Go on after failures until the time or run limit (as --max-failures with no bound).
    #[arg(long, conflicts_with = "max_failures")]
    keep_going: bool,
    /// Run every parallel run over MPI ranks, `mpirun -n R` with R drawn from this list
    /// (e.g. 2,3; needs a build with the `mpi` feature and `mpirun` on the PATH).
    #[arg(long, value_delimiter = ',')]
    ranks: Vec<usize>,
    /// The chronon binary to check [default: this one].
    #[arg(long)]
    binary: Option<PathBuf>,
}

pub(crate) fn run(cmd: CheckCmd, registered: &Models) -> Result<u8, Failure> {
    let all: Vec<&str> = registered.visible().map(|e| e.name()).collect();
    let models = pick_list(&cmd.models, &all, "--models")?;
    let syncs = pick_list(&cmd.sync, SYNCS, "--sync")?;
    if cmd.runs == Some(0) {
        return Err(Failure::bad_input(
            "--runs is 0; a check that compares nothing proves nothing: give at least 1",
        ));
    }
    if cmd.per_config == 0 {
        return Err(Failure::bad_input(
            "--per-config is 0; it must be at least 1",
        ));
    }
    if !(cmd.slow_factor >= 1.0 && cmd.slow_factor.is_finite()) {
        return Err(Failure::bad_input(format!(
            "--slow-factor is {}; it must be finite and >= 1",
            cmd.slow_factor
        )));
    }
    let limit = match (cmd.seconds, cmd.runs) {
        (Some(s), _) if !(s > 0.0 && s.is_finite()) => {
            return Err(Failure::bad_input(format!(
                "--seconds is {s}; it must be finite and > 0"
            )))
        }
        (Some(s), _) => Some(Duration::from_secs_f64(s)),
        (None, Some(_)) => None,
        (None, None) => Some(Duration::from_secs(60)),
    };
    let seed = cmd.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let max_failures = match (cmd.keep_going, cmd.max_failures) {
        (true, _) => u64::MAX,
        (false, Some(0)) => {
            return Err(Failure::bad_input(
                "--max-failures is 0; give at least 1 (or --keep-going)",
            ))
        }
        (false, n) => n.unwrap_or(1),
    };
    let ranks = check_ranks(&cmd.ranks, cmd.binary.is_some())?;
    let binary = match cmd.binary {
        Some(b) => crate::sys::SelfCommand::binary(b),
        None => crate::sys::SelfCommand::this()?,
    };
    let mut runner = Runner::new(binary, registered, cmd.slow_factor, cmd.slow_floor)?;
    eprintln!(
        "check: seed {seed}; models {}; executors {}{}",
        models.join(","),
        syncs.join(","),
        if ranks.is_empty() {
            String::new()
        } else {
            format!(
                "; over MPI ranks {}",
                ranks
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        }
    );
    let started = Instant::now();
    let mut draw = Draw::new(seed);
    let mut configs = 0u64;
    let mut shown = 0u64;
    // The models take turns, from a drawn one: every model gets a configuration in every
    // `models.len()` (a campaign of that many runs covers them all, whatever else is drawn).
    let first = draw.int(0, models.len() as u64 - 1) as usize;
    loop {
        if cmd.runs.is_some_and(|r| configs >= r)
            || limit.is_some_and(|l| started.elapsed() >= l)
            || settle(&mut runner, registered, &mut shown, max_failures)
        {
            break;
        }
        let model = models[(first + configs as usize) % models.len()];
        configs += 1;
        let entry = registered.entry(model).expect("the models were checked");
        let mut flags = Flags::default();
        entry.draw(&mut draw, &mut flags);
        flags.set("seed", draw.int(0, u64::from(u32::MAX)));
        let flags = entry.switches(flags.0);
        // Asked of this configuration's model: a reverse handler may depend on a parameter.
        let reverse = draw::Reverse {
            has: entry.has_reverse(&flags),
            checkable: entry.can_check_reverse(),
        };
        // A model configuration with a large shared heap: a memory bound drawn for Time Warp
        // would be below what the heap itself takes.
        let big_heap = flags.iter().any(|f| f == "--heap-segments");
        let Some(reference) = runner.reference(model, &flags, cmd.verbose) else {
            continue;
        };
        // Checkpoints: one configuration in two has a pair (a run that saves a checkpoint at a
        // cut, then a run restored from it) in place of its last parallel run, and one
        // parallel run in three saves checkpoints on the way.
        let end = reference.end();
        let pair = end.is_some() && draw.chance(0.5);
        let config = Config {
            model,
            flags,
            reverse,
            big_heap,
            reference,
            verbose: cmd.verbose,
        };
        for i in 0..cmd.per_config {
            if settle(&mut runner, registered, &mut shown, max_failures) {
                break;
            }
            let pair = pair && i + 1 == cmd.per_config;
            parallel_run(&mut runner, &mut draw, &config, (&syncs, &ranks), pair);
        }
    }
    let stopped =
        settle(&mut runner, registered, &mut shown, max_failures) && max_failures != u64::MAX;
    summary(&runner, (configs, shown), stopped, seed, started)
}

/// Prints the campaign's summary (configurations, runs, failures, per model and executor,
/// refusals) and the closing line; the exit code: 0 without failures, else 1, and an error when
/// nothing was compared. `shown`: failures printed; `stopped`: at `--max-failures`.
fn summary(
    runner: &Runner,
    (configs, shown): (u64, u64),
    stopped: bool,
    seed: u64,
    started: Instant,
) -> Result<u8, Failure> {
    let s = runner.summary();
    if stopped {
        eprintln!(
            "check: stopped after {} (--max-failures N or --keep-going to go on)",
            if shown == 1 {
                "the first failure".to_string()
            } else {
                format!("{shown} failures")
            }
        );
    }
    eprintln!(
        "check: {} configurations, {} parallel runs, {} refused, {} failures in {:.1} s (seed {seed})",
        configs,
        s.compared,
        s.refused.values().sum::<u64>(),
        s.failures,
        started.elapsed().as_secs_f64()
    );
    for ((model, sync), n) in &s.per_pair {
        eprintln!("check:   {model:<14} {sync:<13} {n} runs");
    }
    if s.saving + s.restored > 0 {
        eprintln!(
            "check:   checkpoints: {} runs saved them on the way, {} runs restored from one",
            s.saving, s.restored
        );
    }
    for (reason, n) in &s.refused {
        eprintln!("check:   refused {n}x: {reason}");
    }
    // The plain closing line test-log readers understand.
    println!(
        "check: {} passed, {} failed",
        s.compared - s.failures,
        s.failures
    );
    if s.compared == 0 && s.failures == 0 {
        // A check that compared nothing (a time limit shorter than one reference run) did
        // not pass.
        return Err(Failure::runtime(
            "check: no parallel run was compared; give more --seconds or --runs",
        ));
    }
    Ok(if s.failures == 0 { 0 } else { 1 })
}

/// A drawn model configuration and its sequential reference.
struct Config<'a> {
    model: &'a str,
    flags: Vec<String>,
    reverse: draw::Reverse,
    big_heap: bool,
    reference: runner::Reference,
    verbose: bool,
}

/// One parallel run of `c` under a drawn executor (over drawn MPI ranks when `ranks` is not
/// empty), compared with the reference: a plain run, or one that saves checkpoints on the way
/// (one in three), or with `pair` a pair, a run saving a checkpoint at a cut and one restored
/// from it.
fn parallel_run(
    runner: &mut Runner,
    draw: &mut Draw,
    c: &Config<'_>,
    (syncs, ranks): (&[&str], &[usize]),
    pair: bool,
) {
    let (model, flags, reference, verbose) = (c.model, &c.flags, &c.reference, c.verbose);
    let pick_ranks = |d: &mut Draw| {
        (!ranks.is_empty()).then(|| ranks[d.int(0, ranks.len() as u64 - 1) as usize])
    };
    let sync = draw.pick(syncs);
    let over = pick_ranks(draw);
    let mut exec = draw::executor_flags(c.reverse, sync, over.is_some(), c.big_heap, draw).0;
    let Some(end) = reference.end() else {
        runner.compare(model, flags, &exec, over, reference, verbose);
        return;
    };
    draw::balance(draw, end, &mut exec);
    if over.is_none() {
        draw::profile(draw, reference.profile(), &mut exec);
    }
    let seq = || vec!["--sync".to_string(), "seq".to_string()];
    if pair {
        // A: any executor; B: any. Either is now and then the sequential one (in one process).
        let mut over_a = over;
        if draw.chance(0.15) {
            (exec, over_a) = (seq(), None);
        }
        let sync_b = draw.pick(syncs);
        let over_b = pick_ranks(draw);
        let (exec_b, over_b) = if draw.chance(0.15) {
            (seq(), None)
        } else {
            let mut f =
                draw::executor_flags(c.reverse, sync_b, over_b.is_some(), c.big_heap, draw).0;
            draw::balance(draw, end, &mut f);
            if over_b.is_none() {
                draw::profile(draw, reference.profile(), &mut f);
            }
            (f, over_b)
        };
        match draw::checkpoint_time(draw, end, 0.0, end) {
            Some(cut) => runner.compare_restored(
                model,
                flags,
                (&exec, &exec_b),
                (over_a, over_b),
                cut,
                reference,
                verbose,
            ),
            None => runner.compare(model, flags, &exec, over, reference, verbose),
        }
        return;
    }
    let every = if draw.chance(1.0 / 3.0) {
        draw::checkpoint_time(draw, end, end / 5.0, end / 1.5)
    } else {
        None
    };
    match every {
        Some(every) => {
            // Now and then under the sequential executor (in one process).
            let mut over = over;
            if draw.chance(0.15) {
                (exec, over) = (seq(), None);
            }
            runner.compare_saving(model, flags, &exec, (every, over), reference, verbose)
        }
        None => runner.compare(model, flags, &exec, over, reference, verbose),
    }
}

/// Explains and prints the failures not yet shown, up to `max` in all; whether `max` is reached.
fn settle(runner: &mut Runner, registered: &Models, shown: &mut u64, max: u64) -> bool {
    let reverse = |model: &str, flags: &[String]| {
        registered
            .entry(model)
            .is_some_and(|e| e.has_reverse(flags))
    };
    for f in runner.take_failures() {
        if *shown >= max {
            break;
        }
        *shown += 1;
        for line in diagnose::explain(runner, f, &reverse) {
            eprintln!("check: {line}");
        }
    }
    *shown >= max
}

/// The `--ranks` list, checked: every count at least 1; MPI support compiled in (unless another
/// binary is checked); `mpirun` starts; `chronon check` itself not under `mpirun` (it starts
/// `mpirun` for each run).
fn check_ranks(given: &[usize], other_binary: bool) -> Result<Vec<usize>, Failure> {
    if given.is_empty() {
        return Ok(Vec::new());
    }
    if given.contains(&0) {
        return Err(Failure::bad_input(
            "--ranks has 0; every rank count must be at least 1",
        ));
    }
    if chronon::mpi::launched().is_some() {
        return Err(Failure::bad_input(
            "chronon check --ranks starts mpirun for each run itself: run it without mpirun",
        ));
    }
    if !chronon::mpi::COMPILED && !other_binary {
        return Err(Failure::bad_input(chronon::mpi::NOT_COMPILED));
    }
    let mpirun = std::process::Command::new("mpirun")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if !mpirun.is_ok_and(|s| s.success()) {
        return Err(Failure::bad_input(
            "--ranks needs MPICH's mpirun on the PATH (apt-get install -y mpich libmpich-dev libclang-dev)",
        ));
    }
    Ok(given.to_vec())
}

/// The entries of `given` (all of `all` when empty), each checked against `all`.
fn pick_list<'a>(given: &[String], all: &[&'a str], flag: &str) -> Result<Vec<&'a str>, Failure> {
    if given.is_empty() {
        return Ok(all.to_vec());
    }
    given
        .iter()
        .map(|g| {
            all.iter().copied().find(|a| a == g).ok_or_else(|| {
                Failure::bad_input(format!(
                    "{flag}: unknown value '{g}' (allowed: {})",
                    all.join(", ")
                ))
            })
        })
        .collect()
}
