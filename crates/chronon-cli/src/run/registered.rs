//! [`Entry`] for a parameter type `S`: how `run` runs a registered model (its parameters from the
//! flags, a `--config` file and a restored checkpoint, then [`run_simulation`]), and what
//! `check` asks of it.

use std::marker::PhantomData;

use clap::{ArgMatches, Args, Command, FromArgMatches};

use super::checkpoint::restored_defaults;
use super::merge;
use super::run_simulation;
use crate::args::{CommonArgs, ConfigFile};
use crate::registry::{Draw, Entry, Flags, ModelSpec};
use crate::Failure;

/// [`Entry`] for the parameter type `S`.
pub(crate) struct Registered<S> {
    name: String,
    hidden: bool,
    spec: PhantomData<fn() -> S>,
}

impl<S: ModelSpec> Registered<S> {
    /// The model of parameters `S` under `name`; `hidden`: left out of help and `check`.
    pub(crate) fn boxed(name: &str, hidden: bool) -> Box<dyn Entry> {
        Box::new(Registered::<S> {
            name: name.to_string(),
            hidden,
            spec: PhantomData,
        })
    }
}

impl<S: ModelSpec> Entry for Registered<S> {
    fn name(&self) -> &str {
        &self.name
    }

    fn hidden(&self) -> bool {
        self.hidden
    }

    fn about(&self) -> &'static str {
        S::about()
    }

    fn default_end(&self) -> Option<f64> {
        S::default_end()
    }

    fn args(&self, cmd: Command) -> Command {
        S::augment_args(cmd)
    }

    fn run(&self, m: &ArgMatches) -> Result<u8, Failure> {
        let common = CommonArgs::from_arg_matches(m).map_err(|e| Failure::clap(&e))?;
        let keys = merge::keys::<S>();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let file = ConfigFile::load(common.config.as_deref(), &keys)?;
        let mut common = common.over(file.get()?);
        // A restored run: the checkpoint's parameters, seed and end unless given.
        let saved = restored_defaults(&mut common, &self.name)?;
        let spec: S = merge::resolve(m, &file, saved.as_ref().map(|s| &s.config))?;
        let model = spec.build().map_err(Failure::bad_input)?;
        run_simulation(
            &self.name,
            model,
            common,
            spec.config(),
            S::default_end(),
            S::check_reverse(),
            S::changeable(),
        )
    }

    fn has_reverse(&self, flags: &[String]) -> bool {
        use chronon::Model;
        let given = CommonArgs::augment_args(S::augment_args(
            Command::new("model")
                .no_binary_name(true)
                .allow_negative_numbers(true),
        ))
        .try_get_matches_from(flags)
        .ok()
        .and_then(|m| S::from_arg_matches(&m).ok());
        given
            .or_else(merge::defaults::<S>)
            .and_then(|s| s.build().ok())
            .is_some_and(|m| m.reverse_handler().is_some())
    }

    fn can_check_reverse(&self) -> bool {
        S::check_reverse().is_some()
    }

    fn switches(&self, flags: Vec<String>) -> Vec<String> {
        let cmd = S::augment_args(Command::new("model"));
        let switch = |flag: &str| {
            let long = flag.strip_prefix("--")?;
            let arg = cmd.get_arguments().find(|a| a.get_long() == Some(long))?;
            matches!(arg.get_action(), clap::ArgAction::SetTrue).then_some(())
        };
        let mut out = Vec::with_capacity(flags.len());
        let mut it = flags.into_iter().peekable();
        while let Some(f) = it.next() {
            let value = it.peek().map(String::as_str);
            if switch(&f).is_some() && matches!(value, Some("true" | "false")) {
                if it.next().as_deref() == Some("true") {
                    out.push(f);
                }
            } else {
                out.push(f);
            }
        }
        out
    }

    fn draw(&self, draw: &mut Draw, flags: &mut Flags) {
        S::draw(draw, flags)
    }
}
