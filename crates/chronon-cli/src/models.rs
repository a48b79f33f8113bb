//! The models `chronon run` knows: each has its flags (also its TOML keys) and builds a
//! [`chronon::Simulation`].

use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};

use crate::args::{CommonArgs, ConfigFile, RunCmd};
use crate::run::run_simulation;
use crate::Failure;

#[derive(Debug, Subcommand)]
pub(crate) enum ModelCmd {
    /// PHOLD: the standard PDES benchmark (ROSS semantics).
    Phold(PholdCmd),
}

pub(crate) fn run(cmd: RunCmd) -> Result<u8, Failure> {
    match cmd.model {
        ModelCmd::Phold(c) => run_phold(c),
    }
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub(crate) struct PholdCmd {
    #[command(flatten)]
    model: PholdArgs,
    #[command(flatten)]
    common: CommonArgs,
}

/// PHOLD's flags and TOML keys.
#[derive(Clone, Debug, Default, Args, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct PholdArgs {
    /// Number of LPs [default: 1024].
    #[arg(long)]
    lps: Option<u32>,
    /// Events each LP starts with [default: 10].
    #[arg(long)]
    start_events: Option<u32>,
    /// Probability that an event goes to a random LP [default: 0.1].
    #[arg(long)]
    remote: Option<f64>,
    /// Minimum delay of every event [default: 0.1].
    #[arg(long)]
    lookahead: Option<f64>,
    /// Mean delay of every event, lookahead included [default: 1.0].
    #[arg(long)]
    mean: Option<f64>,
    /// Busy work per event in microseconds of wall time [default: 0].
    #[arg(long)]
    work_us: Option<f64>,
    /// Bytes of state per LP [default: 0].
    #[arg(long)]
    state_bytes: Option<usize>,
    /// Communication graph: mesh (any LP) or mesh2d (neighbours on a 2-D torus) [default: mesh].
    #[arg(long)]
    topology: Option<String>,
}

const PHOLD_KEYS: &[&str] = &[
    "lps",
    "start-events",
    "remote",
    "lookahead",
    "mean",
    "work-us",
    "state-bytes",
    "topology",
];

fn run_phold(cmd: PholdCmd) -> Result<u8, Failure> {
    let file = ConfigFile::load(cmd.common.config.as_deref(), PHOLD_KEYS)?;
    let common = cmd.common.over(file.get()?);
    let f: PholdArgs = file.get()?;
    let a = cmd.model;
    let d = chronon_models::Phold::default();
    let model = chronon_models::Phold {
        lps: a.lps.or(f.lps).unwrap_or(d.lps),
        start_events: a.start_events.or(f.start_events).unwrap_or(d.start_events),
        remote: a.remote.or(f.remote).unwrap_or(d.remote),
        lookahead: a.lookahead.or(f.lookahead).unwrap_or(d.lookahead),
        mean: a.mean.or(f.mean).unwrap_or(d.mean),
        work_us: a.work_us.or(f.work_us).unwrap_or(d.work_us),
        state_bytes: a.state_bytes.or(f.state_bytes).unwrap_or(d.state_bytes),
        topology: match a.topology.or(f.topology) {
            None => d.topology,
            Some(t) => t.parse().map_err(Failure::bad_input)?,
        },
    };
    model.validate().map_err(Failure::bad_input)?;
    let lps = model.lps;
    let config = serde_json::to_value(&model).expect("PHOLD parameters serialize");
    run_simulation("phold", model, lps, common, config)
}
