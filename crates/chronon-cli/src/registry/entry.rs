//! A registered model with its parameter type erased: what the subcommands ask of a model
//! (its one implementation, for any `ModelSpec`, is `run/registered.rs`).

use clap::{ArgMatches, Command};

use super::draw::{Draw, Flags};
use crate::Failure;

/// A model as the subcommands see it.
pub(crate) trait Entry: Send + Sync {
    /// The model's name (its `run` subcommand when the app has several).
    fn name(&self) -> &str;
    /// Left out of help and of `check`'s draws.
    fn hidden(&self) -> bool;
    /// One line for help.
    fn about(&self) -> &'static str;
    /// The end time of a run that gives no `--end`.
    fn default_end(&self) -> Option<f64>;
    /// `cmd` with the model's flags.
    fn args(&self, cmd: Command) -> Command;
    /// Runs the model as the matched `run` command line says.
    fn run(&self, m: &ArgMatches) -> Result<u8, Failure>;
    /// Whether the model these flags build (a drawn configuration: model flags, `--end`,
    /// `--seed`) implements reverse computation; the default model's answer when they do not
    /// parse or build.
    fn has_reverse(&self, flags: &[String]) -> bool;
    /// Whether the model takes `--check-reverse` (its states compare).
    fn can_check_reverse(&self) -> bool;
    /// `flags` as `run` takes them: a drawn `--flag true` of a plain `bool` parameter (a
    /// switch) becomes `--flag`, and `--flag false` is left out.
    fn switches(&self, flags: Vec<String>) -> Vec<String>;
    /// `check`'s random model flags.
    fn draw(&self, draw: &mut Draw, flags: &mut Flags);
}
