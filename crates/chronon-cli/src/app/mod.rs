//! The runner as a library: [`App`] turns one or more models ([`ModelSpec`]s) into a whole
//! simulation program with `run` (every executor and option), `check`, `sweep` and `report`.
//! The `chronon` binary is one such app, with the shipped models and its benchmarks.

mod command;
pub(crate) mod entry;
mod merge;
pub(crate) mod spec;

use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::{ArgMatches, FromArgMatches};

use crate::{mpi, one_line, short_numbers, Failure, EXIT_BAD_INPUT};
use entry::{clap_failure, Entry, Registered};
pub(crate) use merge::flag_spelling;
pub use spec::{Draw, Flags, ModelSpec, RunnableEvent, RunnableState, SimHook};

/// A simulation program: its models and the subcommands that run, check and study them.
///
/// ```no_run
/// # #[derive(Clone, Debug, clap::Args, serde::Serialize, serde::Deserialize)]
/// # struct Ring { #[arg(long, default_value_t = 4)] lps: u32 }
/// # impl chronon_cli::ModelSpec for Ring {
/// #     type Model = chronon_models::Phold;
/// #     fn build(&self) -> Result<Self::Model, String> { Ok(Default::default()) }
/// # }
/// fn main() -> std::process::ExitCode {
///     chronon_cli::App::new("ring").model::<Ring>("ring").run()
/// }
/// ```
///
/// With one model, its flags are `run`'s (`ring run --sync window --threads 2`); with several,
/// each model is a subcommand of `run` (`prog run ring --threads 2`).
pub struct App {
    name: String,
    about: String,
    version: String,
    models: Vec<Box<dyn Entry>>,
    tools: bool,
}

/// The program's name (for the command lines shown in messages), set when an app runs.
static PROGRAM: OnceLock<String> = OnceLock::new();

/// The running program's name: "chronon" unless an [`App`] of another name runs.
pub(crate) fn program() -> &'static str {
    PROGRAM.get().map_or("chronon", String::as_str)
}

impl App {
    /// A program called `name` (its name in help and in the command lines it prints).
    pub fn new(name: &str) -> App {
        App {
            name: name.to_string(),
            about: String::new(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            models: Vec::new(),
            tools: false,
        }
    }

    /// The program's one-line description in `--help`.
    pub fn about(mut self, about: &str) -> App {
        self.about = about.to_string();
        self
    }

    /// The version `--version` prints [default: chronon's].
    pub fn version(mut self, version: &str) -> App {
        self.version = version.to_string();
        self
    }

    /// Registers the model whose parameters are `S` under `name`.
    pub fn model<S: ModelSpec>(self, name: &str) -> App {
        self.register::<S>(name, false)
    }

    /// Registers a model that help and `check` leave out (a test model).
    pub fn hidden_model<S: ModelSpec>(self, name: &str) -> App {
        self.register::<S>(name, true)
    }

    fn register<S: ModelSpec>(mut self, name: &str, hidden: bool) -> App {
        self.models.push(Box::new(Registered::<S> {
            name: name.to_string(),
            hidden,
            spec: PhantomData,
        }));
        self
    }

    /// The models shipped with chronon (`chronon_models`), each under its `chronon run` name
    /// (feature `models`).
    #[cfg(feature = "models")]
    pub fn builtins(self) -> App {
        crate::builtins::register(self)
    }

    /// The `chronon` binary's own subcommands: `bench` (the engine's benchmarks),
    /// `experiment` (the seed papers' experiments) and `calibrate` (feature `models`).
    #[cfg(feature = "models")]
    pub fn engine_tools(mut self) -> App {
        self.tools = true;
        self
    }

    /// Parses the command line and runs the subcommand it names. Errors are one line on
    /// stderr; the exit code is 0 on success, 2 for bad input, 130 for a run stopped by
    /// Ctrl-C, 1 for other failures.
    pub fn run(self) -> ExitCode {
        ExitCode::from(self.run_from(std::env::args_os()))
    }

    /// [`run`](Self::run) with the command line `args` (the program's name first) instead of
    /// this process's; returns the exit code. For a host that starts the app itself (the
    /// Python package); a `--procs` run's workers re-run this command line
    /// ([`chronon::program_args`]), so the host sets it with [`chronon::set_program`].
    pub fn run_from<I, T>(self, args: I) -> u8
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        // Under mpirun each rank becomes a waiting parent and the child that runs (rank_fault/
        // README.md); first, while this process has one thread.
        #[cfg(all(feature = "mpi", target_os = "linux"))]
        crate::rank_fault::supervise();
        let _ = PROGRAM.set(self.name.clone());
        // Model panics are caught by the engine and reported as one line; keep the default
        // hook from printing a second, multi-line message.
        std::panic::set_hook(Box::new(|_| {}));
        if let Err(why) = self.problems() {
            eprintln!("error: {why}");
            return EXIT_BAD_INPUT;
        }
        let matches = match self.command().try_get_matches_from(args) {
            Ok(m) => m,
            Err(e) => return command::clap_exit(e, &self),
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| self.dispatch(&matches)));
        match outcome {
            Ok(Ok(code)) => code,
            Ok(Err(f)) => {
                // Under mpirun every rank has the same error; rank 0 says it.
                if !mpi::quiet() {
                    eprintln!("error: {}", short_numbers(one_line(&f.message)));
                }
                f.code
            }
            Err(payload) => {
                let msg = chronon::panic_message(payload.as_ref());
                eprintln!("error: internal error: {}", short_numbers(one_line(&msg)));
                101
            }
        }
    }

    /// What is wrong with the app itself (no model, a name or flag given twice).
    pub(crate) fn problems(&self) -> Result<(), String> {
        if self.models.is_empty() {
            return Err(format!(
                "{} has no model: register one with App::model",
                self.name
            ));
        }
        let common = crate::args::common_flags();
        for (i, e) in self.models.iter().enumerate() {
            if self.models[..i].iter().any(|o| o.name() == e.name()) {
                return Err(format!("two models are registered as '{}'", e.name()));
            }
            let cmd = e.args(clap::Command::new("model"));
            for a in cmd.get_arguments() {
                let long = a.get_long().unwrap_or(a.get_id().as_str());
                if common.iter().any(|c| c == long || c == a.get_id().as_str()) {
                    return Err(format!(
                        "model '{}' has a flag --{long}, which is one of the runner's own; rename the model's",
                        e.name()
                    ));
                }
            }
        }
        Ok(())
    }

    /// The models `check` and `sweep` offer.
    pub(crate) fn visible(&self) -> impl Iterator<Item = &dyn Entry> {
        self.models
            .iter()
            .filter(|e| !e.hidden())
            .map(|e| e.as_ref())
    }

    /// The model called `name`.
    pub(crate) fn entry(&self, name: &str) -> Option<&dyn Entry> {
        self.models
            .iter()
            .find(|e| e.name() == name)
            .map(|e| e.as_ref())
    }

    /// Whether the program has one model (whose flags are `run`'s, with no model name).
    pub(crate) fn single(&self) -> bool {
        self.models.len() == 1
    }

    /// The arguments that start a run of `model`: `run MODEL`, or `run` in a one-model app.
    pub(crate) fn run_args(&self, model: &str) -> Vec<String> {
        let mut v = vec!["run".to_string()];
        if !self.single() {
            v.push(model.to_string());
        }
        v
    }

    /// Whether `args` (after the program name) parse as a command line of this program.
    pub(crate) fn parses(&self, args: &[String]) -> Result<(), Failure> {
        let argv = std::iter::once(self.name.clone()).chain(args.iter().cloned());
        self.command()
            .try_get_matches_from(argv)
            .map(|_| ())
            .map_err(|e| clap_failure(&e))
    }

    pub(crate) fn dispatch(&self, matches: &ArgMatches) -> Result<u8, Failure> {
        fn parsed<T: FromArgMatches>(m: &ArgMatches) -> Result<T, Failure> {
            T::from_arg_matches(m).map_err(|e| clap_failure(&e))
        }
        match matches.subcommand() {
            Some(("run", m)) => {
                if self.single() {
                    self.models[0].run(m)
                } else {
                    let (name, m) = m.subcommand().expect("run needs a model (clap checks)");
                    let entry = self.entry(name).expect("clap knows only registered models");
                    entry.run(m)
                }
            }
            Some(("check", m)) => crate::check::run(parsed(m)?, self),
            Some(("sweep", m)) => crate::sweep::run(parsed(m)?, self),
            Some(("report", m)) => crate::report::run(parsed(m)?),
            #[cfg(feature = "models")]
            Some(("bench", m)) if self.tools => crate::bench::run(parsed(m)?, self),
            Some(("bench", m)) => crate::bench::model::run(parsed(m)?, self),
            #[cfg(feature = "models")]
            Some(("experiment", m)) => crate::experiment::run(parsed(m)?),
            #[cfg(feature = "models")]
            Some(("calibrate", m)) => crate::calibrate::run(parsed(m)?),
            other => unreachable!("clap accepts only known subcommands: {other:?}"),
        }
    }
}
