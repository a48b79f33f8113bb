//! The runner as a library: [`App`] turns one or more models ([`ModelSpec`]s) into a whole
//! simulation program with `run` (every executor and option), `check`, `sweep` and `report`.
//! The `chronon` binary is one such app, with the shipped models and its benchmarks. The app is
//! the one part that knows every subcommand: it registers the models (`../registry/`), builds
//! the command line and routes to the subcommand it names; no subcommand knows the app.

mod command;
mod hosted;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;

use clap::{ArgMatches, FromArgMatches};

use crate::registry::{set_program, ModelSpec, Models};
use crate::run::registered::Registered;
use crate::{mpi, one_line, short_numbers, Failure, EXIT_BAD_INPUT};
pub use hosted::Outcome;

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
    models: Models,
    tools: bool,
}

impl App {
    /// A program called `name` (its name in help and in the command lines it prints).
    pub fn new(name: &str) -> App {
        App {
            name: name.to_string(),
            about: String::new(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            models: Models::default(),
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
        self.models.add(Registered::<S>::boxed(name, hidden));
        self
    }

    /// The models shipped with chronon (`chronon_models`), each under its `chronon run` name
    /// (feature `models`).
    #[cfg(feature = "models")]
    pub fn builtins(self) -> App {
        use crate::builtins::*;
        self.model::<PholdArgs>("phold")
            .model::<PholdPhasesArgs>("phold-phases")
            .model::<SimplesimArgs>("simplesim")
            .model::<ManufacturingArgs>("manufacturing")
            .model::<PcsArgs>("pcs")
            .model::<DatastoreArgs>("datastore")
            .model::<StarCliqueArgs>("star-clique")
            .model::<CampusArgs>("campus")
            .model::<RandomArgs>("random")
            .hidden_model::<FaultyArgs>("faulty")
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
        set_program(&self.name);
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
        if self.models.all().next().is_none() {
            return Err(format!(
                "{} has no model: register one with App::model",
                self.name
            ));
        }
        let common = crate::args::common_flags();
        for (i, e) in self.models.all().enumerate() {
            if self.models.all().take(i).any(|o| o.name() == e.name()) {
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

    pub(crate) fn dispatch(&self, matches: &ArgMatches) -> Result<u8, Failure> {
        fn parsed<T: FromArgMatches>(m: &ArgMatches) -> Result<T, Failure> {
            T::from_arg_matches(m).map_err(|e| Failure::clap(&e))
        }
        match matches.subcommand() {
            Some(("run", m)) => {
                if let Some(only) = self.models.only() {
                    only.run(m)
                } else {
                    let (name, m) = m.subcommand().expect("run needs a model (clap checks)");
                    let entry = self
                        .models
                        .entry(name)
                        .expect("clap knows only registered models");
                    entry.run(m)
                }
            }
            Some(("check", m)) => crate::check::run(parsed(m)?, &self.models),
            Some(("sweep", m)) => crate::sweep::run(parsed(m)?, &self.models),
            Some(("report", m)) => crate::report::run(parsed(m)?),
            #[cfg(feature = "models")]
            Some(("bench", m)) if self.tools => crate::bench::run(parsed(m)?, &self.models),
            Some(("bench", m)) => crate::bench::model::run(parsed(m)?, &self.models),
            #[cfg(feature = "models")]
            Some(("experiment", m)) => crate::experiment::run(parsed(m)?),
            #[cfg(feature = "models")]
            Some(("calibrate", m)) => crate::calibrate::run(parsed(m)?),
            other => unreachable!("clap accepts only known subcommands: {other:?}"),
        }
    }
}
