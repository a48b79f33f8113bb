//! What a model gives the runner: [`ModelSpec`], implemented by the model's parameter struct.

use chronon::{Model, Simulation};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::draw::{Draw, Flags};

/// What an event type must be for the runner to run its model everywhere: across worker
/// processes (`--procs`: [`chronon::shm::ShmSafe`], e.g. with [`chronon::impl_shm_safe!`]),
/// across MPI ranks and into checkpoints (serde both ways: `#[derive(Serialize, Deserialize)]`).
/// Implemented for every type that is both.
pub trait RunnableEvent: chronon::shm::ShmSafe + Serialize + DeserializeOwned {}
impl<T: chronon::shm::ShmSafe + Serialize + DeserializeOwned> RunnableEvent for T {}

/// What an LP state type must be for the runner to save it in checkpoints (`--checkpoint-every`,
/// `--restore`): serde both ways (`#[derive(Serialize, Deserialize)]`). Implemented for every
/// such type.
pub trait RunnableState: Serialize + DeserializeOwned {}
impl<T: Serialize + DeserializeOwned> RunnableState for T {}

/// A change to a simulation before it runs (see [`ModelSpec::check_reverse`]).
pub type SimHook<M> = fn(Simulation<M>) -> Simulation<M>;

/// A model's parameters, one struct: its fields are the model's command-line flags (clap
/// [`Args`](clap::Args), with their help and defaults) and the keys of a `--config` TOML file
/// (serde; a flag overrides the file's key of the same name, which overrides the default).
/// Register it with [`App::model`](crate::App::model) and every subcommand of the runner works
/// for the model: `run` under every executor, `--procs`, MPI ranks, `--config`, `--output`,
/// `check`, `sweep`, `report`.
///
/// ```
/// use chronon::{Ctx, Model};
///
/// /// A token ring.
/// #[derive(Clone, Debug, clap::Args, serde::Serialize, serde::Deserialize)]
/// struct Ring {
///     /// Number of LPs.
///     #[arg(long, default_value_t = 16)]
///     lps: u32,
/// }
///
/// struct RingModel { lps: u32 }
///
/// impl Model for RingModel {
///     type State = u64;
///     type Event = ();
///     fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 {
///         if ctx.me() == 0 { ctx.send(1 % self.lps, 1.0, ()); }
///         0
///     }
///     fn on_event(&self, hops: &mut u64, _: &(), ctx: &mut Ctx<'_, Self>) {
///         *hops += 1;
///         ctx.send((ctx.me() + 1) % self.lps, 1.0, ());
///     }
///     fn lookahead(&self) -> f64 { 1.0 }
///     fn lp_count(&self) -> Option<u32> { Some(self.lps) }
/// }
///
/// impl chronon_cli::ModelSpec for Ring {
///     type Model = RingModel;
///     fn build(&self) -> Result<RingModel, String> {
///         if self.lps == 0 { return Err("--lps must be at least 1".into()); }
///         Ok(RingModel { lps: self.lps })
///     }
///     fn default_end() -> Option<f64> { Some(100.0) }
/// }
///
/// // fn main() -> std::process::ExitCode { chronon_cli::App::new("ring").model::<Ring>("ring").run() }
/// ```
pub trait ModelSpec: clap::Args + Serialize + DeserializeOwned + Clone + Send + 'static {
    /// The model these parameters build.
    type Model: Model<Event: RunnableEvent, State: RunnableState>;

    /// The model for these parameters, or a one-line reason why they are wrong (name the flag:
    /// "--lps must be at least 2").
    fn build(&self) -> Result<Self::Model, String>;

    /// The end time of a run that gives no `--end`: a run of the default parameters that takes
    /// a few seconds. `None` (the default): `--end` is required.
    fn default_end() -> Option<f64> {
        None
    }

    /// One line for `--help` and the model list.
    fn about() -> &'static str {
        ""
    }

    /// The report's `config` for these parameters [default: these parameters as serde writes
    /// them]. A report's `config` can be given back with `--config` to rerun the simulation.
    fn config(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// `check`'s random parameters: flags of this model to set on each drawn configuration
    /// (e.g. `flags.set("lps", draw.int(2, 40))`; `end` may be set too; a plain `bool`
    /// parameter, a switch, as `flags.set("flag", draw.chance(0.5))`: `check` passes `--flag`
    /// for true and leaves it out for false) [default: none, every configuration is the
    /// default parameters with a random seed]. Whether a configuration has a reverse handler
    /// is asked of the model these flags build.
    fn draw(draw: &mut Draw, flags: &mut Flags) {
        let _ = (draw, flags);
    }

    /// The parameters (their flag names without `--`, as `remote`) that a run restored from a
    /// checkpoint may change: those that only change what LPs do from then on, not what
    /// their saved states mean (an offered load, say) [default: none; every other parameter
    /// must be the checkpoint's].
    fn changeable() -> &'static [&'static str] {
        &[]
    }

    /// `--check-reverse` (Time Warp runs every event forward, then in reverse, and compares the
    /// states): `Some(Simulation::check_reverse)` for a model whose state is `PartialEq`
    /// [default: `None`, the flag is refused].
    fn check_reverse() -> Option<SimHook<Self::Model>> {
        None
    }
}
