//! The app's command line (clap, built from its registered models) and how a clap outcome is
//! printed: help and version on stdout with exit 0, a usage error as one line with exit 2.

use clap::{Args, Command};

use super::App;
use crate::EXIT_BAD_INPUT;

impl App {
    /// The whole command line of this program.
    pub(crate) fn command(&self) -> Command {
        let mut root = Command::new(self.name.clone())
            .version(self.version.clone())
            .about(self.about_line())
            .subcommand_required(true)
            .arg_required_else_help(true)
            .subcommand(self.models.run_command())
            .subcommand(crate::sweep::SweepCmd::augment_args(Command::new("sweep")).about(
                "A study: any run option may be a list or a range; every point run --replications times; runs.csv, summary (mean, sd, 95 % interval) and plots in --out DIR",
            ))
            .subcommand(crate::check::CheckCmd::augment_args(Command::new("check")).about(
                "Differential suite: random configurations of the models under every executor, compared with the sequential run",
            ))
            .subcommand(crate::report::ReportCmd::augment_args(Command::new("report")).about(
                "Draw SVG plots from run reports (throughput, speedup, progress, per-worker shares)",
            ));
        if !self.tools {
            root = root.subcommand(
                crate::bench::model::ModelBench::augment_args(Command::new("bench")).about(
                    "The model under each executor, thread and process count, side by side, fingerprints compared",
                ),
            );
        } else {
            root = Self::tool_commands(root);
        }
        if self.models.single() {
            // `sweep` and `bench` take no model name: every argument is a run option.
            let unnamed = |s: Command| s.mut_arg("args", |a| a.value_name("RUN OPTIONS"));
            root = root.mut_subcommand("sweep", unnamed);
            if !self.tools {
                root = root.mut_subcommand("bench", unnamed);
            }
        }
        root
    }

    /// The `chronon` binary's own subcommands (`App::engine_tools`).
    #[cfg(feature = "models")]
    fn tool_commands(root: Command) -> Command {
        root
                .subcommand(
                    crate::bench::BenchCmd::augment_args(Command::new("bench"))
                        .about("Benchmarks (see docs/benchmarks.md)"),
                )
                .subcommand(
                    crate::experiment::ExperimentCmd::augment_args(Command::new("experiment"))
                        .about("Run one seed experiment end to end: CSV, Markdown table and SVG figure (see docs/experiments.md; `--list` names them all)"),
                )
                .subcommand(
                    crate::calibrate::CalibrateCmd::augment_args(Command::new("calibrate"))
                        .about("Measure machine constants: `ticks` (tick overhead vs period, for --tick-us)"),
                )
    }

    /// Without the shipped models there are no engine tools (`App::engine_tools` is absent).
    #[cfg(not(feature = "models"))]
    fn tool_commands(root: Command) -> Command {
        root
    }

    /// The program's line in `--help`: [`App::about`], else the one model's own
    /// (`ModelSpec::about`), then where the runner is documented.
    fn about_line(&self) -> String {
        if !self.about.is_empty() {
            return self.about.clone();
        }
        let model = match self.models.only() {
            Some(one) if !one.about().is_empty() => {
                let about = one.about().trim_end();
                let stop = if about.ends_with('.') { "" } else { "." };
                format!("{about}{stop} ")
            }
            _ => String::new(),
        };
        format!(
            "{}: {model}A simulation on chronon, a parallel discrete event simulation engine \
             (chronon's docs/ folder: cli.md for every option, tutorial.md for a model of one's \
             own)",
            self.name
        )
    }
}

/// Prints a clap outcome: help and version go to stdout with exit 0; a usage error is one line
/// on stderr with exit 2.
pub(super) fn clap_exit(e: clap::Error, app: &App) -> u8 {
    use clap::error::ErrorKind;
    // Under mpirun every rank parsed the same command line: rank 0 prints (the error, the
    // help), every rank exits with the same code.
    let quiet = crate::mpi::quiet();
    match app.clap_error(&e) {
        None => {
            if !quiet {
                let _ = e.print();
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                EXIT_BAD_INPUT
            } else {
                0
            }
        }
        Some(line) => {
            if !quiet {
                eprintln!("error: {line}");
            }
            EXIT_BAD_INPUT
        }
    }
}

impl App {
    /// A clap usage error as one line (without "error: "); None for help and version.
    pub(crate) fn clap_error(&self, e: &clap::Error) -> Option<String> {
        use clap::error::ErrorKind;
        match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => None,
            ErrorKind::InvalidValue if invalid_choice(e).is_some() => {
                let line = invalid_choice(e).unwrap_or_default();
                Some(crate::short_numbers(&line))
            }
            kind => {
                let line = crate::clap_line(e);
                let hint = match kind {
                    ErrorKind::InvalidSubcommand => {
                        format!(" (allowed: {})", subcommand_names(self))
                    }
                    ErrorKind::UnknownArgument => " (see --help for the allowed flags)".to_string(),
                    _ => String::new(),
                };
                Some(format!("{}{hint}", crate::short_numbers(&line)))
            }
        }
    }
}

/// A value outside a choice flag's names (`--sync magic`), in the words of every other
/// refusal: `unknown --sync 'magic' (allowed: seq, window, ...)`.
fn invalid_choice(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let arg = match e.get(ContextKind::InvalidArg)? {
        ContextValue::String(a) => a.split(' ').next().unwrap_or(a).to_string(),
        _ => return None,
    };
    let value = match e.get(ContextKind::InvalidValue)? {
        ContextValue::String(v) => v.clone(),
        _ => return None,
    };
    let allowed = match e.get(ContextKind::ValidValue)? {
        ContextValue::Strings(v) => v.join(", "),
        _ => return None,
    };
    Some(format!("unknown {arg} '{value}' (allowed: {allowed})"))
}

/// The visible subcommands of the program, of `run` and of `bench`, for error hints.
fn subcommand_names(app: &App) -> String {
    let cli = app.command();
    let mut names = Vec::new();
    let visible = |c: &Command| -> Vec<String> {
        c.get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_string())
            .collect()
    };
    names.push(format!("commands {}", visible(&cli).join(", ")));
    for sub in ["run", "bench"] {
        if let Some(c) = cli.find_subcommand(sub) {
            let v = visible(c);
            if !v.is_empty() {
                names.push(format!("{sub} {}", v.join("|")));
            }
        }
    }
    names.join("; ")
}
