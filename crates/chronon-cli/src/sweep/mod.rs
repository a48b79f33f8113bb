//! `chronon sweep MODEL [run options]`: a study. Any run option may be a list (`--load
//! 0.5,0.7,0.9`) or a range (`--lps 256..4096*2`); the study's points are their product, each
//! run `--replications N` times with independent seeds derived from `--seed`. The runs are child
//! processes (`chronon run ... --output`), `--jobs J` at once, or spread over the ranks of an
//! `mpirun` (`ranks.rs`); their reports are kept in `--out DIR/runs/`, so that a rerun of the same
//! command skips what finished, and the results (CSV, Markdown, SVG) are made from them.

mod plot;
mod pool;
#[cfg(feature = "mpi")]
mod ranks;
pub(crate) mod results;
mod spec;
mod stats;
mod study;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::{Args, Parser};

use crate::registry::Models;
use crate::{Failure, EXIT_INTERRUPTED};
use pool::{Ended, Job, Local};
use results::{Row, Table, RUN_STATS};
use spec::{Point, Spec};
use study::{Definition, Study};

/// The options of the sweep itself (the others go to its runs).
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct SweepOpts {
    /// Independent replications of each point (seeds derived from --seed; replication 0 runs
    /// with --seed itself) [default: 1].
    #[arg(long)]
    replications: Option<u64>,
    /// Runs at once on this machine [default: the cores divided by the threads (x processes)
    /// of a run].
    #[arg(long)]
    jobs: Option<usize>,
    /// The study's directory: runs/ (a report per finished run), runs.csv, summary.csv,
    /// summary.md, plots/. A rerun with the same --out skips the finished runs.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Statistics to plot, comma-separated, or `all` [default: the means and the plain
    /// figures, not the parts of a tally or histogram such as `.sum_sq`, `.min`, `.n`].
    #[arg(long, value_delimiter = ',')]
    plot: Vec<String>,
}

/// `chronon sweep`.
#[derive(Debug, Args)]
pub(crate) struct SweepCmd {
    #[command(flatten)]
    opts: SweepOpts,
    /// The model (one of `run`'s; a program with one model takes none), then the runs' options
    /// (see `run MODEL --help`); a value may be a list `a,b,c` or a range `A..B` (step 1),
    /// `A..B+STEP` or `A..B*FACTOR`. The sweep's own options may be given among them.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "MODEL RUN OPTIONS"
    )]
    args: Vec<String>,
}

/// The sweep's own options pulled from among the run options.
#[derive(Debug, Parser)]
#[command(name = "chronon sweep", no_binary_name = true)]
struct Pulled {
    #[command(flatten)]
    opts: SweepOpts,
}

const OWN: &[&str] = &["replications", "jobs", "out", "plot"];

/// Splits `args` into the sweep's own options (parsed) and the run options.
fn pull_own(args: &[String], given: SweepOpts) -> Result<(SweepOpts, Vec<String>), Failure> {
    let mut own = Vec::new();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let name = args[i].strip_prefix("--").unwrap_or("");
        let bare = name.split_once('=').map_or(name, |(n, _)| n);
        if OWN.contains(&bare) {
            own.push(args[i].clone());
            if !name.contains('=') && i + 1 < args.len() {
                own.push(args[i + 1].clone());
                i += 1;
            }
        } else {
            rest.push(args[i].clone());
        }
        i += 1;
    }
    let pulled = Pulled::try_parse_from(&own)
        .map_err(|e| Failure::bad_input(crate::clap_line(&e)))?
        .opts;
    let merged = SweepOpts {
        replications: once("replications", given.replications, pulled.replications)?,
        jobs: once("jobs", given.jobs, pulled.jobs)?,
        out: once("out", given.out, pulled.out)?,
        plot: once(
            "plot",
            Some(given.plot).filter(|p| !p.is_empty()),
            Some(pulled.plot).filter(|p| !p.is_empty()),
        )?
        .unwrap_or_default(),
    };
    Ok((merged, rest))
}

/// The value of option `--flag`, given before the model (`a`) or among the run options (`b`),
/// but not in both places.
fn once<T>(flag: &str, a: Option<T>, b: Option<T>) -> Result<Option<T>, Failure> {
    match (a, b) {
        (Some(_), Some(_)) => Err(Failure::bad_input(format!("--{flag} is given twice"))),
        (a, b) => Ok(a.or(b)),
    }
}

/// A study, checked and planned, before anything is written.
struct Plan {
    /// The arguments that start a run of the model (`run MODEL`).
    run: Vec<String>,
    spec: Spec,
    points: Vec<Point>,
    replications: u64,
    jobs: usize,
    out: PathBuf,
    plot: Vec<String>,
    def: Definition,
}

fn plan(cmd: SweepCmd, models: &Models) -> Result<Plan, Failure> {
    let (model, args) = models.model_and_args(&cmd.args, "sweep")?;
    let (opts, run_args) = pull_own(args, cmd.opts)?;
    let out = opts
        .out
        .ok_or_else(|| Failure::bad_input("--out DIR is required: the study's directory"))?;
    let replications = opts.replications.unwrap_or(1);
    if replications == 0 || replications > spec::MAX_VALUES as u64 {
        return Err(Failure::bad_input(format!(
            "--replications is {replications}; it must be from 1 to {}",
            spec::MAX_VALUES
        )));
    }
    if opts.jobs == Some(0) {
        return Err(Failure::bad_input("--jobs is 0; it must be at least 1"));
    }
    for p in &opts.plot {
        if p.is_empty() {
            return Err(Failure::bad_input("--plot has an empty statistic name"));
        }
    }
    let spec = Spec::parse(&run_args)?;
    if replications > 1 && spec.flags.iter().any(|f| f.name == "reseed") {
        return Err(Failure::bad_input(format!(
            "--reseed with --replications {replications}: each replication of a restored run already draws its streams anew from its own seed at the cut; drop --reseed"
        )));
    }
    let points = spec.points()?;
    // Every point's flags parse as `chronon run`'s (unknown flags, values of the wrong type).
    for (i, p) in points.iter().enumerate() {
        let mut argv = models.run_args(&model);
        argv.extend(p.args.iter().cloned());
        if let Err(e) = models.parses(&argv) {
            let at = if points.len() > 1 {
                format!("point {i} ({}): ", describe(p))
            } else {
                String::new()
            };
            return Err(Failure::bad_input(format!("{at}{}", e.message)));
        }
    }
    let cores = crate::sys::cores();
    let per_run = spec
        .flags
        .iter()
        .filter(|f| f.name == "threads" || f.name == "procs")
        .map(|f| {
            f.values
                .iter()
                .filter_map(|v| v.parse::<usize>().ok())
                .max()
                .unwrap_or(1)
                .max(1)
        })
        .product::<usize>();
    let jobs = opts.jobs.unwrap_or((cores / per_run.max(1)).max(1));
    let def = Definition {
        format: study::FORMAT.into(),
        model: model.clone(),
        args: run_args,
        replications,
    };
    Ok(Plan {
        run: models.run_args(&model),
        spec,
        points,
        replications,
        jobs,
        out,
        plot: opts.plot,
        def,
    })
}

/// A point's swept values, as flags.
fn describe(p: &Point) -> String {
    p.params
        .iter()
        .map(|(k, v)| format!("--{k} {v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every run of the study, replication by replication (so that a study stopped early has runs
/// of every point).
///
/// Runs that share a machine (several jobs, or ranks of an `mpirun`) are not pinned unless
/// `--pin` is given: each run would pin its workers to the same first cores.
fn jobs(plan: &Plan) -> Vec<Job> {
    let shared = plan.jobs > 1 || chronon::mpi::launched().is_some();
    let unpin = shared && !plan.spec.flags.iter().any(|f| f.name == "pin");
    let mut out = Vec::new();
    for r in 0..plan.replications {
        for (p, point) in plan.points.iter().enumerate() {
            let mut args = plan.run.clone();
            args.extend(point.args.iter().cloned());
            if unpin {
                args.extend(["--pin".to_string(), "off".to_string()]);
            }
            args.push("--seed".into());
            args.push(spec::replication_seed(point.seed, r).to_string());
            out.push(Job {
                index: out.len(),
                id: study::run_id(p, r),
                args,
            });
        }
    }
    out
}

/// Set by Ctrl-C.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn install_ctrlc() {
    // Ordering: a flag the run loop polls; it guards no data.
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::Relaxed));
}

pub(crate) fn run(cmd: SweepCmd, models: &Models) -> Result<u8, Failure> {
    let launched = chronon::mpi::launched();
    if launched.is_some() && !chronon::mpi::COMPILED {
        return Err(Failure::bad_input(chronon::mpi::NOT_COMPILED));
    }
    #[cfg(feature = "mpi")]
    if launched.is_some() {
        return ranks::run(cmd, models);
    }
    let plan = plan(cmd, models)?;
    study_main(plan, None)
}

/// Runs the study (on this process's children and `remote`) and writes its results.
fn study_main(plan: Plan, remote: Option<&mut dyn pool::Remote>) -> Result<u8, Failure> {
    let existed = Study::check(&plan.out, &plan.def)?;
    let created = !plan.out.exists();
    let all = jobs(&plan);
    // The runs finished before, and the first of their reports.
    let mut first_before = None;
    let done_before: Vec<bool> = all
        .iter()
        .map(|j| {
            let report = existed.then(|| study::finished(&plan.out, &j.id)).flatten();
            let done = report.is_some();
            first_before = first_before.take().or(report);
            done
        })
        .collect();
    // --plot names are checked against a finished report: one already here, or the first run's
    // (before anything else is kept).
    let mut plot_checked = plan.plot.is_empty();
    if let (false, Some(first)) = (plot_checked, &first_before) {
        check_plot(&plan.plot, first)?;
        plot_checked = true;
    }
    let binary = crate::sys::SelfCommand::this()?;
    let study = Study::open(&plan.out, plan.def.clone())?;
    install_ctrlc();
    let todo: Vec<usize> = (0..all.len()).filter(|&i| !done_before[i]).collect();
    let skipped = all.len() - todo.len();
    let bar = progress_bar(all.len() as u64, skipped as u64);
    let mut local = Local::new(binary, study.runs_dir(), plan.jobs);
    let started = Instant::now();
    let mut plot_error: Option<Failure> = None;
    let mut keep = |j: usize, report: String| -> Result<(), Failure> {
        if !plot_checked {
            let v: serde_json::Value = serde_json::from_str(&report).unwrap_or_default();
            if let Err(e) = check_plot(&plan.plot, &v) {
                plot_error = Some(Failure::bad_input(e.message.clone()));
                return Err(e);
            }
            plot_checked = true;
        }
        study.keep(&all[j].id, &report)?;
        bar.inc(1);
        Ok(())
    };
    let ended = pool::execute(&all, todo, &mut local, remote, &INTERRUPTED, &mut keep);
    bar.finish_and_clear();
    if let Some(e) = plot_error {
        // Nothing of this study is left behind: it had no finished run before.
        remove_study(&plan.out, created);
        return Err(e);
    }
    let kept = all.iter().any(|j| study.report_path(&j.id).exists());
    if !kept {
        // No finished run, before or now: no results to write (not even an empty runs.csv).
        match ended {
            Ended::Failed(f) => {
                remove_study(&plan.out, created);
                return Err(f);
            }
            Ended::Interrupted => {
                eprintln!(
                    "interrupted before any run finished; rerun the same command to run the study"
                );
                return Ok(EXIT_INTERRUPTED);
            }
            Ended::Complete => {}
        }
    }
    let files = write_results(
        &plan.def,
        &plan.spec,
        &plan.points,
        &study.dir,
        &study.dir,
        &plan.plot,
    )?;
    let n = files.0;
    let files = files.1;
    let plots = files.iter().filter(|f| f.starts_with("plots/")).count();
    println!(
        "sweep: {n} of {} runs done ({skipped} from before) in {:.1} s; {} points x {} replications; results in {}: runs.csv, summary.csv, summary.md{}",
        all.len(),
        started.elapsed().as_secs_f64(),
        plan.points.len(),
        plan.replications,
        study.dir.display(),
        match plots {
            0 => String::new(),
            1 => ", 1 plot in plots/".to_string(),
            n => format!(", {n} plots in plots/"),
        }
    );
    match ended {
        Ended::Complete => Ok(0),
        Ended::Interrupted => {
            eprintln!(
                "interrupted: {n} of {} runs done; rerun the same command to finish the study",
                all.len()
            );
            Ok(EXIT_INTERRUPTED)
        }
        Ended::Failed(f) => Err(f),
    }
}

/// Removes what a sweep wrote into `out` for a study that has no finished run: the whole
/// directory when the sweep `created` it, else its study file and runs.
fn remove_study(out: &Path, created: bool) {
    if created {
        let _ = std::fs::remove_dir_all(out);
    } else {
        let _ = std::fs::remove_dir_all(out.join("runs"));
        let _ = std::fs::remove_file(out.join("study.json"));
    }
}

/// Every finished run of the study in `dir`, and how many.
fn finished_rows(points: &[Point], replications: u64, dir: &Path) -> (Vec<Row>, usize) {
    let mut rows = Vec::new();
    for r in 0..replications {
        for (p, point) in points.iter().enumerate() {
            if let Some(report) = study::finished(dir, &study::run_id(p, r)) {
                rows.push(Row {
                    point: p,
                    rep: r,
                    seed: spec::replication_seed(point.seed, r),
                    report,
                });
            }
        }
    }
    rows.sort_by_key(|r| (r.point, r.rep));
    let n = rows.len();
    (rows, n)
}

/// Writes the results of study `def` (runs in `dir`) into `out`: the number of finished runs
/// and the files written.
fn write_results(
    def: &Definition,
    spec: &Spec,
    points: &[Point],
    dir: &Path,
    out: &Path,
    plot: &[String],
) -> Result<(usize, Vec<String>), Failure> {
    let (rows, n) = finished_rows(points, def.replications, dir);
    let swept = spec.swept().iter().map(|s| s.to_string()).collect();
    let table = Table::new(points, swept, rows);
    let title = format!("chronon sweep {} {}", def.model, def.args.join(" "));
    Ok((n, table.write(out, &title, plot)?))
}

/// `chronon report DIR` on a study's directory: its results made again from `DIR/runs/`, into
/// `out` (DIR itself by default); `None` when DIR holds no study.
pub(crate) fn rewrite(dir: &Path, out: Option<&Path>) -> Result<Option<Vec<PathBuf>>, Failure> {
    let Some(def) = study::read_definition(dir)? else {
        return Ok(None);
    };
    let spec = Spec::parse(&def.args)?;
    let points = spec.points()?;
    let out = out.unwrap_or(dir);
    let (n, files) = write_results(&def, &spec, &points, dir, out, &[])?;
    if n == 0 {
        return Err(Failure::bad_input(format!(
            "{} holds a study with no finished run yet",
            dir.display()
        )));
    }
    Ok(Some(files.iter().map(|f| out.join(f)).collect()))
}

/// Every name of `plot` is a statistic of `report` or a run figure (or `plot` is `all`).
fn check_plot(plot: &[String], report: &serde_json::Value) -> Result<(), Failure> {
    if let [all] = plot {
        if all == results::PLOT_ALL {
            return Ok(());
        }
    }
    let mut names = results::model_stat_names(report);
    names.extend(RUN_STATS.iter().map(|s| s.to_string()));
    for p in plot {
        if !names.contains(p) {
            return Err(Failure::bad_input(format!(
                "--plot: no statistic '{p}' (this model's: {}; or all, alone)",
                names.join(", ")
            )));
        }
    }
    Ok(())
}

fn progress_bar(total: u64, done: u64) -> indicatif::ProgressBar {
    let bar = if std::io::stderr().is_terminal() && !crate::mpi::quiet() {
        indicatif::ProgressBar::new(total)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:24}] {pos}/{len} runs eta {eta}",
        )
        .expect("a valid template"),
    );
    bar.set_position(done);
    bar.reset_eta();
    bar
}
