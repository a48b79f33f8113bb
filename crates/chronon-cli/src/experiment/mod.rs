//! `chronon experiment NAME`: one seed experiment end to end. The sweep runs every measurement
//! in its own child process (repetitions interleaved), then writes to the output directory:
//!
//! * `NAME.csv`: the raw measurements, one row per repetition;
//! * `NAME.md`: the table(s) in the seed's layout (each cell from the fastest repetition);
//! * `NAME.svg`: the figure in the seed's layout;
//! * `runs/`: every child's JSON report (`chronon report DIR/runs` plots them).
//!
//! The experiments are a registry ([`registry::EXPERIMENTS`]): a new experiment is a new
//! entry.

pub(crate) mod gsu;
mod msg_lbts;
mod ours;
mod refcount;
mod refcount_campus;
mod registry;
mod runner;
pub(crate) mod scaling;
mod seed000;
mod seed001;
mod seed002;
mod seed003;
mod store_alloc;
pub(crate) mod ticks;

use std::path::PathBuf;

use clap::Args;

pub(crate) use runner::{fingerprint48, mpi_missing, run_metrics, Metrics, Point, Results};

use crate::Failure;

/// Flags of `chronon experiment`.
#[derive(Debug, Args)]
pub(crate) struct ExperimentCmd {
    /// The experiment to run (`--list` names them all).
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,
    /// List every experiment: its seed, table or figure, what it needs, and whether it is
    /// available.
    #[arg(long)]
    pub list: bool,
    /// A small version of the sweep (under a minute on a 2-core machine).
    #[arg(long)]
    pub quick: bool,
    /// Output directory [default: experiments/NAME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Thread counts of the sweep [default: per experiment, up to the cores available].
    #[arg(long, value_delimiter = ',')]
    pub threads: Option<Vec<usize>>,
    /// Repetitions of each measurement, interleaved [default: per experiment, 3 for most; 1
    /// with --quick].
    #[arg(long)]
    pub reps: Option<u32>,
    /// Measure nothing: redraw the table and figure from `NAME.csv` in this directory (an
    /// earlier run's), into --out [default: the same directory].
    #[arg(long, conflicts_with_all = ["quick", "threads", "reps"])]
    pub from: Option<PathBuf>,
    /// ours-scaling: the PHOLD configurations to run, of std, work, big, large [default: all].
    #[arg(long, value_delimiter = ',')]
    pub configs: Option<Vec<String>>,
    /// ours-scaling: worker-process splits PxW (P processes of W threads), run under window
    /// and Time Warp besides the thread counts, like 16x1,4x4 [default: none].
    #[arg(long, value_delimiter = ',')]
    pub splits: Option<Vec<String>>,
}

/// What an experiment's plan and tables see of the command line.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub quick: bool,
    /// The thread counts given with `--threads`, if any.
    pub threads: Option<Vec<usize>>,
    pub reps: u32,
    /// Cores available to this process.
    pub cores: usize,
    /// ours-scaling's `--configs` (None: every configuration).
    pub configs: Option<Vec<String>>,
    /// ours-scaling's `--splits`: (processes, threads) pairs.
    pub splits: Vec<(usize, usize)>,
}

impl Settings {
    /// The thread counts: `--threads`, or 1, 2, 4, ... up to the cores (at least 1 and 2).
    pub(crate) fn threads_or_default(&self) -> Vec<usize> {
        if let Some(t) = &self.threads {
            return t.clone();
        }
        let mut v = vec![1];
        let mut t = 2;
        while t <= self.cores.max(2) && t <= 64 {
            v.push(t);
            t *= 2;
        }
        v
    }

    /// The parallel thread counts (those above 1).
    pub(crate) fn parallel_threads(&self) -> Vec<usize> {
        let v: Vec<usize> = self
            .threads_or_default()
            .into_iter()
            .filter(|&t| t > 1)
            .collect();
        if v.is_empty() {
            vec![2]
        } else {
            v
        }
    }
}

/// What an experiment writes besides the CSV.
#[derive(Debug)]
pub(crate) struct Rendered {
    /// Markdown: the table(s) and notes on what is left out.
    pub table: String,
    /// The figure, an SVG document.
    pub figure: String,
}

/// How an experiment runs: its sweep, how to read a report, how to draw its tables and figure.
#[derive(Clone, Copy)]
pub(crate) struct Ready {
    pub plan: fn(&Settings) -> Result<Vec<Point>, Failure>,
    pub extract: fn(&serde_json::Value) -> Metrics,
    pub render: fn(&Settings, &Results) -> Result<Rendered, Failure>,
}

/// One entry of the registry.
#[derive(Clone, Copy)]
pub(crate) struct Experiment {
    pub name: &'static str,
    pub seed: &'static str,
    /// The seed's table or figure.
    pub what: &'static str,
    /// What it needs: threads, processes, MPI.
    pub needs: &'static str,
    /// Parts of the seed's layout that wait for a part not built yet (empty: none).
    pub partial: &'static str,
    /// Repetitions at full size unless `--reps` says otherwise (1 where one repetition already
    /// takes minutes).
    pub reps: u32,
    pub ready: Ready,
}

impl std::fmt::Debug for Experiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Experiment")
            .field("name", &self.name)
            .finish()
    }
}

/// A Markdown table.
pub(crate) fn md_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|", header.join(" | "));
    for (i, _) in header.iter().enumerate() {
        s.push_str(if i == 0 { "---|" } else { "---:|" });
    }
    s.push('\n');
    for r in rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}

/// A number for a table: 3 significant digits, "—" for a missing one.
pub(crate) fn num(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn list() -> u8 {
    println!(
        "{:<18} {:<5} {:<44} {:<32} status",
        "experiment", "seed", "table / figure", "needs"
    );
    for e in registry::EXPERIMENTS {
        let mut status = if e.partial.is_empty() {
            "available".to_string()
        } else {
            format!("available; {}", e.partial)
        };
        // The MPI part of an experiment, where this binary cannot launch ranks.
        if let (true, Some(why)) = (e.needs.contains("MPI:"), mpi_missing()) {
            status.push_str(&format!("; MPI part not here: {why}"));
        }
        println!(
            "{:<18} {:<5} {:<44} {:<32} {status}",
            e.name, e.seed, e.what, e.needs
        );
    }
    0
}

pub(crate) fn run(cmd: ExperimentCmd) -> Result<u8, Failure> {
    if cmd.list {
        return Ok(list());
    }
    let name = cmd.name.as_deref().unwrap_or_default();
    let Some(e) = registry::EXPERIMENTS.iter().find(|e| e.name == name) else {
        let names: Vec<&str> = registry::EXPERIMENTS.iter().map(|e| e.name).collect();
        return Err(Failure::bad_input(format!(
            "unknown experiment '{name}' (allowed: {}; `chronon experiment --list` describes them)",
            names.join(", ")
        )));
    };
    let ready = e.ready;
    if cmd.reps == Some(0) {
        return Err(Failure::bad_input("--reps is 0; it must be at least 1"));
    }
    if let Some(t) = &cmd.threads {
        if t.is_empty() || t.contains(&0) {
            return Err(Failure::bad_input(
                "--threads needs counts of at least 1, like 1,2,4",
            ));
        }
    }
    if (cmd.configs.is_some() || cmd.splits.is_some()) && name != "ours-scaling" {
        return Err(Failure::bad_input(format!(
            "--configs and --splits apply to ours-scaling only; got experiment '{name}'"
        )));
    }
    if let Some(c) = &cmd.configs {
        scaling::check_configs(c)?;
    }
    let splits = cmd
        .splits
        .iter()
        .flatten()
        .map(|s| scaling::parse_split(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Failure::bad_input)?;
    let settings = Settings {
        quick: cmd.quick,
        threads: cmd.threads.clone(),
        reps: cmd.reps.unwrap_or(if cmd.quick { 1 } else { e.reps }),
        cores: crate::sys::cores(),
        configs: cmd.configs.clone(),
        splits,
    };
    let dir = cmd
        .out
        .clone()
        .or_else(|| cmd.from.clone())
        .unwrap_or_else(|| PathBuf::from("experiments").join(name));
    // An earlier run's CSV is read before anything is created.
    let earlier = match &cmd.from {
        Some(from) => {
            let csv = from.join(format!("{name}.csv"));
            let text = std::fs::read_to_string(&csv).map_err(|e| {
                Failure::bad_input(format!("--from: cannot read {}: {e}", csv.display()))
            })?;
            let r = Results::from_csv(&text, &[]).map_err(|e| {
                Failure::bad_input(format!(
                    "--from: {} is not an experiment CSV: {e}",
                    csv.display()
                ))
            })?;
            let reps = r.samples.iter().map(Vec::len).max().unwrap_or(0);
            Some((
                r,
                format!("redrawn from {} ({reps} repetition(s))", csv.display()),
            ))
        }
        None => None,
    };
    let files = ["csv", "md", "svg"].map(|ext| dir.join(format!("{name}.{ext}")));
    let runs = dir.join("runs");
    // Every output is checked (directories created, writable) before anything runs.
    let outputs = crate::output::Outputs::plan(
        &[
            ("--out", files[0].clone()),
            ("--out", files[1].clone()),
            ("--out", files[2].clone()),
            ("--out", runs.join("probe")),
        ],
        &[],
    )?;
    drop(outputs);
    let started = std::time::Instant::now();
    let (results, how) = match earlier {
        Some(x) => x,
        None => {
            let points = (ready.plan)(&settings)?;
            let r = runner::sweep(points, settings.reps, &runs, ready.extract)?;
            let how = format!(
                "`chronon experiment {name}{}` — {} repetition(s), {} core(s), {:.0} s",
                if settings.quick { " --quick" } else { "" },
                settings.reps,
                settings.cores,
                started.elapsed().as_secs_f64()
            );
            (r, how)
        }
    };
    let rendered = (ready.render)(&settings, &results)?;
    let header = format!(
        "# {name}: seed {} {}\n\n{how}; each cell is from the fastest repetition (the least \
         disturbed on a shared machine; the median where a measurement has no wall time); \
         every repetition is in {name}.csv.\n\n",
        e.seed, e.what,
    );
    let partial = if e.partial.is_empty() {
        String::new()
    } else {
        format!("\nNot measured yet: {}.\n", e.partial)
    };
    let md = format!("{header}{}{partial}", rendered.table);
    for (path, text) in files.iter().zip([results.csv(), md, rendered.figure]) {
        crate::output::write_or_rescue("--out", path, text.as_bytes())?;
    }
    if cmd.from.is_some() {
        let _ = std::fs::remove_dir(&runs);
    }
    println!("{}", files.map(|f| f.display().to_string()).join("\n"));
    Ok(0)
}
