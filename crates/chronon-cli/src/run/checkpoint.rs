//! The checkpoint options of `run`: `--checkpoint-every`, `--checkpoint-at`,
//! `--checkpoint-dir`, `--restore`, `--reseed`, checked before the run starts (a checkpoint
//! of another model or configuration is refused here, naming the parameter that differs).
//!
//! A restored run takes what its command line and `--config` do not give from the checkpoint:
//! the model's parameters, the seed and the end time ([`restored_defaults`]). Its `--seed`
//! names its random streams: the checkpoint's seed continues the saved streams, another seed
//! draws them anew at the cut (as `--reseed` with that seed does).

use std::path::PathBuf;

use chronon::checkpoint::Manifest;
use chronon::{Model, Simulation};

use crate::args::CommonArgs;
use crate::registry::{RunnableEvent, RunnableState};
use crate::Failure;

/// The checkpoint options of a run, checked.
#[derive(Debug, Default)]
pub(super) struct Checkpoints {
    every: Option<f64>,
    at: Option<f64>,
    dir: Option<PathBuf>,
    restore: Option<PathBuf>,
    reseed: Option<u64>,
    /// `--balance T|auto`: LPs move every T, or as often as pays (`None`: off).
    balance: Option<chronon::balance::BalancePeriod>,
    /// The changeable parameters this run gives other values than the checkpoint's.
    pub changed: Vec<String>,
}

impl Checkpoints {
    /// Checks the options: a directory goes with a period or a time (it is created here, so
    /// that one that cannot be is refused before the run), and a checkpoint to restore is of
    /// model `name` with configuration `config`, up to the parameters in `changeable`.
    pub(super) fn check(
        common: &CommonArgs,
        name: &str,
        config: &serde_json::Value,
        changeable: &[&str],
    ) -> Result<Self, Failure> {
        let c = Checkpoints {
            every: common.checkpoint_every,
            at: common.checkpoint_at,
            dir: common.checkpoint_dir.clone(),
            restore: common.restore.clone(),
            reseed: common.reseed,
            balance: balance(common)?,
            changed: Vec::new(),
        };
        let saves = c.every.is_some() || c.at.is_some();
        match (&c.dir, saves) {
            (None, true) => {
                let flag = if c.every.is_some() {
                    "--checkpoint-every"
                } else {
                    "--checkpoint-at"
                };
                return Err(Failure::bad_input(format!(
                    "{flag} needs --checkpoint-dir DIR (where the checkpoints go)"
                )));
            }
            (Some(_), false) => {
                return Err(Failure::bad_input(
                    "--checkpoint-dir needs --checkpoint-every T or --checkpoint-at T",
                ))
            }
            (Some(d), true) => std::fs::create_dir_all(d).map_err(|e| {
                Failure::bad_input(format!(
                    "--checkpoint-dir {}: cannot create it: {e}",
                    d.display()
                ))
            })?,
            (None, false) => {}
        }
        if c.reseed.is_some() && c.restore.is_none() {
            return Err(Failure::bad_input(
                "--reseed needs --restore DIR (it derives the LPs' streams anew at a checkpoint's cut)",
            ));
        }
        let Some(path) = &c.restore else {
            return Ok(c);
        };
        let m = read_for(path, name)?;
        let changed = compare(&m.config, config, changeable).map_err(|(key, saved, now)| {
            let may = if changeable.is_empty() {
                "this model declares no parameter that may change after a restore".to_string()
            } else {
                format!("a restored run may change only --{}", changeable.join(", --"))
            };
            Failure::bad_input(format!(
                "--restore {}: the checkpoint was saved with --{key} {saved}; this run has --{key} {now} ({may})",
                path.display()
            ))
        })?;
        let reseed = streams(path, &m, common.seed, c.reseed)?;
        Ok(Checkpoints {
            changed,
            reseed,
            ..c
        })
    }

    /// `sim` with these options.
    pub(super) fn apply<M>(
        &self,
        sim: Simulation<M>,
        name: &str,
        config: &serde_json::Value,
    ) -> Simulation<M>
    where
        M: Model<State: RunnableState, Event: RunnableEvent>,
    {
        // States and events serialize: global events can run across processes and ranks.
        let mut sim = sim.checkpoint_label(name, config.clone()).serde_model();
        if let Some(dir) = &self.dir {
            if let Some(t) = self.every {
                sim = sim.checkpoint_every(t, dir);
            }
            if let Some(t) = self.at {
                sim = sim.checkpoint_at(t, dir);
            }
        }
        if let Some(p) = &self.restore {
            sim = sim.restore(p);
        }
        if let Some(s) = self.reseed {
            sim = sim.reseed(s);
        }
        if let Some(t) = self.balance {
            sim = sim.balance(t);
        }
        sim
    }
}

/// `--balance`: off, auto, or a period of simulated time.
fn balance(common: &CommonArgs) -> Result<Option<chronon::balance::BalancePeriod>, Failure> {
    use chronon::balance::BalancePeriod;
    let Some(v) = common.balance.as_deref() else {
        return Ok(None);
    };
    match v {
        "off" => return Ok(None),
        "auto" => return Ok(Some(BalancePeriod::Auto)),
        _ => {}
    }
    match v.parse::<f64>() {
        Ok(t) if t > 0.0 && t.is_finite() => Ok(Some(BalancePeriod::Every(t))),
        _ => Err(Failure::bad_input(format!(
            "--balance is {v}; it must be off, auto or a period of simulated time > 0 (LPs move at each multiple of it)"
        ))),
    }
}

/// The manifest of the checkpoint at `path`, which must be one of the model `name`.
fn read_for(path: &std::path::Path, name: &str) -> Result<Manifest, Failure> {
    let m = chronon::checkpoint::read_manifest(path)?;
    if m.model != name {
        return Err(Failure::bad_input(format!(
            "--restore {}: a checkpoint of the model {}, not {name}",
            path.display(),
            m.model
        )));
    }
    Ok(m)
}

/// For a run that restores a checkpoint (`--restore`): the checkpoint of model `name`, read
/// and checked, its seed and end time made `common`'s where neither the command line nor
/// `--config` gave one (the end only when it is after the cut: a checkpoint saved at the end
/// of its run, as a warm-up is, needs `--end`); `None` without `--restore`. The model's
/// recorded parameters are the caller's to use (`merge::resolve`).
pub(crate) fn restored_defaults(
    common: &mut CommonArgs,
    name: &str,
) -> Result<Option<Manifest>, Failure> {
    let Some(path) = &common.restore else {
        return Ok(None);
    };
    let m = read_for(path, name)?;
    if common.seed.is_none() {
        common.seed = Some(m.seed);
    }
    if common.end.is_none() {
        match m.end.filter(|e| *e > m.cut) {
            Some(e) => common.end = Some(e),
            None => {
                let why = match m.end {
                    Some(_) => "the checkpoint was saved at the end of its run",
                    None => "the checkpoint records no end time",
                };
                return Err(Failure::bad_input(format!(
                    "--restore {}: give --end, a time after the cut {} ({why})",
                    path.display(),
                    m.cut
                )));
            }
        }
    }
    Ok(Some(m))
}

/// How a restored run draws its random streams at the cut: `None` continues the saved ones
/// (its seed is the checkpoint's), `Some(s)` derives them anew from `s` (`--reseed s`, or a
/// `--seed s` other than the checkpoint's). Both, with another seed, is refused.
fn streams(
    path: &std::path::Path,
    m: &Manifest,
    seed: Option<u64>,
    reseed: Option<u64>,
) -> Result<Option<u64>, Failure> {
    let seed = seed.unwrap_or(m.seed);
    match (reseed, seed != m.seed) {
        (Some(r), true) => Err(Failure::bad_input(format!(
            "--restore {}: --seed {seed} and --reseed {r}: give one (the checkpoint was saved with seed {}; another --seed draws the streams anew at the cut as --reseed does)",
            path.display(),
            m.seed
        ))),
        (Some(r), false) => Ok(Some(r)),
        (None, true) => Ok(Some(seed)),
        (None, false) => Ok(None),
    }
}

/// The changeable parameters whose values differ between `saved` and `now`; `Err((key, saved
/// value, this value))` for the first other one that differs.
fn compare(
    saved: &serde_json::Value,
    now: &serde_json::Value,
    changeable: &[&str],
) -> Result<Vec<String>, (String, String, String)> {
    let (saved, now) = (
        &super::merge::flag_spelling(saved.clone()),
        &super::merge::flag_spelling(now.clone()),
    );
    let empty = serde_json::Map::new();
    let (a, b) = (
        saved.as_object().unwrap_or(&empty),
        now.as_object().unwrap_or(&empty),
    );
    if a.is_empty() && b.is_empty() && saved != now {
        return Err(("config".into(), saved.to_string(), now.to_string()));
    }
    let mut changed = Vec::new();
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (x, y) = (a.get(k), b.get(k));
        if x == y {
            continue;
        }
        let flag = k.clone();
        if changeable.contains(&flag.as_str()) {
            changed.push(flag);
            continue;
        }
        let show =
            |v: Option<&serde_json::Value>| v.map_or("(none)".to_string(), |v| v.to_string());
        return Err((flag, show(x), show(y)));
    }
    Ok(changed)
}
