//! Command-line flags, TOML configuration files, and how they merge: a flag overrides the file's
//! key of the same name, which overrides the default.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use serde::Deserialize;

use crate::models::ModelCmd;
use crate::{one_line, Failure, EXIT_BAD_INPUT};

/// chronon: a parallel discrete event simulation engine.
#[derive(Debug, Parser)]
#[command(name = "chronon", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub(crate) enum Command {
    /// Run a model and print a summary (and write a JSON report with --output).
    Run(RunCmd),
    /// Benchmarks (see docs/benchmarks.md).
    Bench(crate::bench::BenchCmd),
    /// Differential suite: random configurations of every model under every executor,
    /// compared with the sequential run (see docs/testing.md).
    Check(crate::check::CheckCmd),
}

#[derive(Debug, Args)]
pub(crate) struct RunCmd {
    #[command(subcommand)]
    pub model: ModelCmd,
}

/// Keys every model takes, as flags and as TOML keys.
#[derive(Clone, Debug, Default, Args, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct CommonArgs {
    /// End time: events at or after it never execute.
    #[arg(long)]
    pub end: Option<f64>,
    /// Seed of every LP's random stream.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Pending-event set: heap or ladder.
    #[arg(long)]
    pub queue: Option<String>,
    /// Synchronization: seq, window, null-message, lockstep or timewarp.
    #[arg(long)]
    pub sync: Option<String>,
    /// Worker threads.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Barrier of the conservative executors: std, semaphore, spin or tree [default: tree].
    #[arg(long)]
    pub barrier: Option<String>,
    /// Fan-in of the tree barrier [default: 4].
    #[arg(long)]
    pub fan_in: Option<usize>,
    /// LP-to-worker mapping: block or round-robin [default: block].
    #[arg(long)]
    pub mapping: Option<String>,
    /// Window load balancing: fraction of each worker's LPs dedicated to it, in [0, 1]; the
    /// rest are shared and claimed each round by whichever worker is free [default: 1.0].
    #[arg(long)]
    pub dedicated: Option<f64>,
    /// Window load balancing: number of shared LP sets (>= 1 when --dedicated < 1)
    /// [default: 0, or 1 when --dedicated < 1 is given without it].
    #[arg(long)]
    pub shared_sets: Option<usize>,
    /// Write the JSON report here (a directory gets report.json inside).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Time Warp state saving: copy, reverse or auto [default: auto].
    #[arg(long)]
    pub state_saving: Option<String>,
    /// Time Warp copy state saving: save the state every K events [default: automatic].
    #[arg(long)]
    pub checkpoint: Option<u32>,
    /// Time Warp memory bound in bytes (suffixes K, M, G: powers of 1024) for saved states and
    /// event records; speculation is throttled to stay under it.
    #[arg(long)]
    pub max_memory: Option<String>,
    /// Time Warp optimism window: no event later than GVT + T runs. Fixes the window (inf:
    /// unbounded); without it the window adapts to the measured rollbacks.
    #[arg(long)]
    pub window: Option<f64>,
    /// Time Warp: run every event forward, then in reverse, and check the state is restored.
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub check_reverse: Option<bool>,
    /// Time Warp: write GVT over wall time as CSV here (with --output DIR/, DIR/gvt.csv).
    #[arg(long)]
    pub gvt_csv: Option<PathBuf>,
    /// Read keys from this TOML file (flags override it).
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
}

/// The TOML keys of [`CommonArgs`].
pub(crate) const COMMON_KEYS: &[&str] = &[
    "end",
    "seed",
    "queue",
    "sync",
    "threads",
    "output",
    "state-saving",
    "checkpoint",
    "max-memory",
    "window",
    "check-reverse",
    "gvt-csv",
    "barrier",
    "fan-in",
    "mapping",
    "dedicated",
    "shared-sets",
];

impl CommonArgs {
    /// This flag set over `file`'s.
    pub(crate) fn over(self, file: CommonArgs) -> CommonArgs {
        CommonArgs {
            end: self.end.or(file.end),
            seed: self.seed.or(file.seed),
            queue: self.queue.or(file.queue),
            sync: self.sync.or(file.sync),
            threads: self.threads.or(file.threads),
            barrier: self.barrier.or(file.barrier),
            fan_in: self.fan_in.or(file.fan_in),
            mapping: self.mapping.or(file.mapping),
            dedicated: self.dedicated.or(file.dedicated),
            shared_sets: self.shared_sets.or(file.shared_sets),
            output: self.output.or(file.output),
            state_saving: self.state_saving.or(file.state_saving),
            checkpoint: self.checkpoint.or(file.checkpoint),
            max_memory: self.max_memory.or(file.max_memory),
            window: self.window.or(file.window),
            check_reverse: self.check_reverse.or(file.check_reverse),
            gvt_csv: self.gvt_csv.or(file.gvt_csv),
            config: self.config,
        }
    }
}

/// A parsed TOML configuration file.
#[derive(Debug, Default)]
pub(crate) struct ConfigFile {
    path: String,
    table: toml::Table,
}

impl ConfigFile {
    /// Reads `path` (or nothing) and checks that every key is one of `common` or `model`.
    pub(crate) fn load(path: Option<&Path>, model_keys: &[&str]) -> Result<ConfigFile, Failure> {
        let Some(path) = path else {
            return Ok(ConfigFile::default());
        };
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::bad_input(format!("cannot read config file {shown}: {e}")))?;
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            Failure::bad_input(format!(
                "config file {shown} is not valid TOML: {}",
                one_line(e.message())
            ))
        })?;
        for key in table.keys() {
            if !COMMON_KEYS.contains(&key.as_str()) && !model_keys.contains(&key.as_str()) {
                let mut allowed: Vec<&str> = COMMON_KEYS.to_vec();
                allowed.extend_from_slice(model_keys);
                return Err(Failure::bad_input(format!(
                    "unknown key '{key}' in {shown} (allowed: {})",
                    allowed.join(", ")
                )));
            }
        }
        Ok(ConfigFile { path: shown, table })
    }

    /// The file's keys as `T` (keys `T` does not know are ignored: `load` checked them all).
    pub(crate) fn get<T: for<'de> Deserialize<'de> + Default>(&self) -> Result<T, Failure> {
        if self.table.is_empty() {
            return Ok(T::default());
        }
        T::deserialize(self.table.clone()).map_err(|e| {
            Failure::bad_input(format!(
                "in config file {}: {}",
                self.path,
                one_line(e.message())
            ))
        })
    }
}

/// Prints a clap outcome: help and version go to stdout with exit 0; a usage error is one line
/// on stderr with exit 2.
pub(crate) fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(EXIT_BAD_INPUT)
            } else {
                ExitCode::SUCCESS
            }
        }
        kind => {
            let rendered = e.render().to_string();
            let line = one_line(&rendered);
            let line = line.strip_prefix("error: ").unwrap_or(line);
            let hint = match kind {
                ErrorKind::InvalidSubcommand => format!(" (allowed: {})", subcommand_names()),
                ErrorKind::UnknownArgument => " (see --help for the allowed flags)".to_string(),
                _ => String::new(),
            };
            eprintln!("error: {line}{hint}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// The visible subcommands of `chronon`, `chronon run` and `chronon bench`, for error hints.
fn subcommand_names() -> String {
    use clap::CommandFactory;
    let cli = Cli::command();
    let mut names = Vec::new();
    let visible = |c: &clap::Command| -> Vec<String> {
        c.get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_string())
            .collect()
    };
    names.push(format!("commands {}", visible(&cli).join(", ")));
    for sub in ["run", "bench"] {
        if let Some(c) = cli.find_subcommand(sub) {
            names.push(format!("{sub} {}", visible(c).join("|")));
        }
    }
    names.join("; ")
}
