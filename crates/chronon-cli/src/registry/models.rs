//! The models a program registered, as its subcommands see them: by name, the visible ones, the
//! command line that runs one (`run`, with the model's flags and the runner's), and the
//! program's name for the command lines they print.

use std::sync::OnceLock;

use clap::{Args, Command};

use super::entry::Entry;
use crate::args::CommonArgs;
use crate::Failure;

/// The program's name (for the command lines shown in messages), set when an app runs.
static PROGRAM: OnceLock<String> = OnceLock::new();

/// The running program's name: "chronon" unless an app of another name runs.
pub(crate) fn program() -> &'static str {
    PROGRAM.get().map_or("chronon", String::as_str)
}

/// Names the running program (the first app to run in this process names it).
pub(crate) fn set_program(name: &str) {
    let _ = PROGRAM.set(name.to_string());
}

/// The registered models of a program, in the order of registration.
#[derive(Default)]
pub(crate) struct Models {
    list: Vec<Box<dyn Entry>>,
}

impl Models {
    /// Adds a model (after the others).
    pub(crate) fn add(&mut self, entry: Box<dyn Entry>) {
        self.list.push(entry);
    }

    /// Every model, hidden ones too.
    pub(crate) fn all(&self) -> impl Iterator<Item = &dyn Entry> {
        self.list.iter().map(|e| e.as_ref())
    }

    /// The models `check` and `sweep` offer.
    pub(crate) fn visible(&self) -> impl Iterator<Item = &dyn Entry> {
        self.all().filter(|e| !e.hidden())
    }

    /// The model called `name`.
    pub(crate) fn entry(&self, name: &str) -> Option<&dyn Entry> {
        self.all().find(|e| e.name() == name)
    }

    /// Whether the program has one model (whose flags are `run`'s, with no model name).
    pub(crate) fn single(&self) -> bool {
        self.list.len() == 1
    }

    /// The one model of a one-model program.
    pub(crate) fn only(&self) -> Option<&dyn Entry> {
        match self.list.as_slice() {
            [one] => Some(one.as_ref()),
            _ => None,
        }
    }

    /// The arguments that start a run of `model`: `run MODEL`, or `run` in a one-model program.
    pub(crate) fn run_args(&self, model: &str) -> Vec<String> {
        let mut v = vec!["run".to_string()];
        if !self.single() {
            v.push(model.to_string());
        }
        v
    }

    /// Whether `args` (after the program name, starting with [`run_args`](Self::run_args))
    /// parse as a `run` command line of this program.
    pub(crate) fn parses(&self, args: &[String]) -> Result<(), Failure> {
        let argv = std::iter::once(program().to_string()).chain(args.iter().cloned());
        Command::new(program())
            .subcommand(self.run_command())
            .try_get_matches_from(argv)
            .map(|_| ())
            .map_err(|e| Failure::clap(&e))
    }

    /// The model named first in `args` (none in a one-model program: its only model) and the
    /// run options after it, for the subcommand `what`.
    pub(crate) fn model_and_args<'a>(
        &self,
        args: &'a [String],
        what: &str,
    ) -> Result<(String, &'a [String]), Failure> {
        if self.single() {
            let only = self.visible().next().map_or("", |e| e.name());
            return Ok((only.to_string(), args));
        }
        let known: Vec<&str> = self.visible().map(|e| e.name()).collect();
        match args.split_first() {
            Some((m, rest)) if known.contains(&m.as_str()) => Ok((m.clone(), rest)),
            Some((m, _)) if !m.starts_with('-') => Err(Failure::bad_input(format!(
                "unknown model '{m}' (allowed: {})",
                known.join(", ")
            ))),
            _ => Err(Failure::bad_input(format!(
                "give the model first: {} {what} MODEL [run options] (models: {})",
                program(),
                known.join(", ")
            ))),
        }
    }

    /// `run`: the model's flags and the runner's, or a subcommand per model.
    pub(crate) fn run_command(&self) -> Command {
        const ABOUT: &str =
            "Run a model and print a summary (and write a JSON report with --output)";
        let run = Command::new("run");
        if let Some(only) = self.only() {
            let about = only.about();
            let about = if about.is_empty() {
                ABOUT.to_string()
            } else {
                format!("{ABOUT}: {about}")
            };
            return model_command(only, run).about(about);
        }
        let run = run.about(ABOUT);
        let run = run.subcommand_required(true);
        self.all().fold(run, |run, e| {
            let c = Command::new(e.name().to_string()).hide(e.hidden());
            run.subcommand(model_command(e, c).about(e.about()))
        })
    }
}

/// `cmd` with the flags of model `e` and the runner's.
fn model_command(e: &dyn Entry, cmd: Command) -> Command {
    let end = match e.default_end() {
        Some(end) => format!("[default: {end}]"),
        None => "(required: this model has no default end)".to_string(),
    };
    let cmd = e.args(
        cmd.allow_negative_numbers(true)
            .next_help_heading("Model options"),
    );
    CommonArgs::augment_args(cmd.next_help_heading(None::<&str>)).mut_arg("end", |a| {
        a.help(format!(
            "End time: events at or after it never execute {end}"
        ))
    })
}
