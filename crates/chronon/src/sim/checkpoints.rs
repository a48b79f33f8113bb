//! The builder's checkpoint settings: when and where a run saves checkpoints, the checkpoint it
//! continues from, and how they are checked before a run (`chain_setup`).

use super::Simulation;
use crate::error::{ConfigError, Setting, SimError};
use crate::executor::checkpoint::{self, Codec, RestoreFrom};
use crate::executor::Executor;
use crate::model::{Model, Time};

/// Checkpoints: for models whose states and events serialize (serde).
impl<M: Model> Simulation<M>
where
    M::State: serde::Serialize + serde::de::DeserializeOwned,
    M::Event: serde::Serialize + serde::de::DeserializeOwned,
{
    /// Saves a checkpoint at every multiple of `every` (simulated time) before the end, each in
    /// `dir/t<T>` (see [`checkpoint`](crate::checkpoint)): the run stops at the cut, writes
    /// every LP's state and bookkeeping and every pending event, and goes on from what it
    /// wrote. The report lists them (`checkpoints`). Where a checkpoint cannot be written, the
    /// run stops at its cut: the report is incomplete and says why (`checkpoint_error`).
    ///
    /// ```
    /// # use chronon::{Ctx, Model, Simulation};
    /// # #[derive(serde::Serialize, serde::Deserialize)] struct Hop;
    /// # struct Ring;
    /// # impl Model for Ring {
    /// #     type State = u64;
    /// #     type Event = Hop;
    /// #     fn init(&self, ctx: &mut Ctx<'_, Self>) -> u64 { ctx.send(ctx.me(), 1.0, Hop); 0 }
    /// #     fn on_event(&self, n: &mut u64, _: &Hop, ctx: &mut Ctx<'_, Self>) {
    /// #         *n += 1;
    /// #         let next = (ctx.me() + 1) % ctx.lps();
    /// #         let delay = 0.5 + ctx.rng().uniform();
    /// #         ctx.send(next, delay, Hop);
    /// #     }
    /// # }
    /// let dir = std::env::temp_dir().join(format!("chronon-doc-{}", std::process::id()));
    /// let whole = Simulation::new(Ring).lps(8).end_time(20.0).seed(3).run()?;
    /// Simulation::new(Ring).lps(8).end_time(10.0).seed(3).checkpoint_at(10.0, &dir).run()?;
    /// // Later, maybe under another executor: continue from t = 10 to 20.
    /// let rest = Simulation::new(Ring)
    ///     .lps(8)
    ///     .end_time(20.0)
    ///     .restore(chronon::checkpoint::checkpoint_path(&dir, 10.0))
    ///     .run()?;
    /// assert_eq!(rest.fingerprint, whole.fingerprint);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), chronon::SimError>(())
    /// ```
    pub fn checkpoint_every(mut self, every: Time, dir: impl Into<std::path::PathBuf>) -> Self {
        let plan = self.checkpoints.get_or_insert_with(Default::default);
        plan.every = Some(every);
        plan.dir = dir.into();
        self.codec = Some(Codec::<M>::serde().erase());
        self
    }

    /// Saves a checkpoint at simulated time `at` in `dir/t<at>` (as
    /// [`checkpoint_every`](Self::checkpoint_every) does; both may be given, with one `dir`).
    /// A run whose end time is `at` saves it at its end.
    pub fn checkpoint_at(mut self, at: Time, dir: impl Into<std::path::PathBuf>) -> Self {
        let plan = self.checkpoints.get_or_insert_with(Default::default);
        plan.at.push(at);
        plan.dir = dir.into();
        self.codec = Some(Codec::<M>::serde().erase());
        self
    }

    /// Declares that the model's states and events serialize (serde), as checkpoints need:
    /// a model with global events can then run across worker processes
    /// ([`processes`](Self::processes)) and MPI ranks ([`ranks`](Self::ranks)), where the run
    /// ends at a cut before each global event and the handler runs on the cut's states
    /// (docs/conservative.md, "Global events"). Every checkpoint method implies it; the
    /// runner's models (`chronon run`) have it.
    pub fn serde_model(mut self) -> Self {
        self.codec = Some(Codec::<M>::serde().erase());
        self
    }

    /// Continues from the checkpoint in `path` (a `dir/t<T>` directory) instead of
    /// `Model::init`: the run starts at the checkpoint's cut under whatever executor, threads,
    /// processes or ranks it is given, and commits the history the saved run would have
    /// committed (the fingerprint, `committed` and model statistics include the history
    /// before the cut). The checkpoint must be of this model ([`checkpoint_label`](
    /// Self::checkpoint_label)) with this LP count; its files are checked (CRC-32).
    pub fn restore(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.restore = Some(RestoreFrom {
            path: path.into(),
            reseed: None,
        });
        self.codec = Some(Codec::<M>::serde().erase());
        self
    }
}

impl<M: Model> Simulation<M> {
    /// Moves LPs between workers every `every` units of simulated time, from what each LP
    /// cost since the last move: the run ends a stretch at each multiple of `every` (a
    /// checkpoint's cut: in memory on threads, in a temporary directory across processes and
    /// ranks), maps the LPs anew by cost where the busiest worker was more than 10 % busier
    /// than the mean (contiguous blocks for a model with a topology, rounds of runs of LPs
    /// for one without: docs/balance.md), and goes on from the cut. Any parallel executor
    /// (lock-step on its threads runtime), on threads, worker processes and MPI ranks; the
    /// history is the one every mapping commits. The report's `executor_stats` say
    /// `balance_cuts`, `balance_remaps` and `lps_moved`. Across processes and ranks the LPs
    /// travel through the checkpoint codec: call [`serde_model`](Self::serde_model) (the
    /// runner's models have it; the builder asks for it on threads too).
    ///
    /// `every` is a period of simulated time (`2.5`), or
    /// [`BalancePeriod::Auto`](crate::balance::BalancePeriod::Auto): a period that follows
    /// what moving LPs gains against what a cut costs, both measured (a finite end time).
    pub fn balance(mut self, every: impl Into<crate::balance::BalancePeriod>) -> Self {
        self.balance = Some(every.into());
        self
    }

    /// What [`balance`](Self::balance) asks for, checked against the executor: `None` without.
    fn balance_plan(&self, chosen: &Executor) -> Result<Option<checkpoint::BalancePlan>, SimError> {
        let Some(every) = self.balance else {
            return Ok(None);
        };
        match every {
            crate::balance::BalancePeriod::Every(t) if !(t > 0.0 && t.is_finite()) => {
                return Err(
                    ConfigError::new(Setting::Balance, t, "it must be finite and > 0").into(),
                );
            }
            crate::balance::BalancePeriod::Auto if !self.end.is_some_and(f64::is_finite) => {
                return Err(SimError::config(
                    Setting::Balance,
                    "an automatic period is a share of the end time: give a finite $end_time",
                ));
            }
            _ => {}
        }
        let refuse = |why: &str| Err(SimError::config(Setting::Balance, why.to_string()));
        let Some(start) = chosen.mapping() else {
            return refuse(
                "moving LPs needs workers that own them: a parallel $executor (window, null-message, lockstep on its threads runtime or timewarp)",
            );
        };
        if self.codec.is_none() {
            return refuse(
                "LPs move through checkpoint cuts, which need the model's states and events to serialize: call serde_model()",
            );
        }
        let mut workers = chosen.threads();
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        if let Some((o, _)) = &self.procs {
            workers *= o.procs;
        }
        // The model's links from LP 0 say whether it has a topology.
        let contiguous = crate::error::guard("Model::topology", Some(0), || {
            self.model.topology(0).is_some()
        })?;
        Ok(Some(checkpoint::BalancePlan {
            period: every,
            workers,
            start: start.clone(),
            contiguous,
        }))
    }

    /// With [`restore`](Self::restore): every LP's random stream is derived anew from `seed`
    /// (and the cut) instead of continuing the saved one, so that many runs branch from one
    /// checkpoint.
    pub fn reseed(mut self, seed: u64) -> Self {
        self.reseed = Some(seed);
        self
    }

    /// The model's name and configuration that checkpoints record; a checkpoint is restored
    /// only into a simulation of the same name. Default: the model's type name and `null`.
    pub fn checkpoint_label(mut self, model: impl Into<String>, config: serde_json::Value) -> Self {
        self.label = Some((model.into(), config));
        self
    }
    /// What the checkpoint settings ask for, checked: `None` for a run without them.
    pub(super) fn chain_setup(
        &self,
        chosen: &Executor,
        end: Time,
    ) -> Result<Option<(checkpoint::ChainSetup, String)>, SimError> {
        if self.reseed.is_some() && self.restore.is_none() {
            return Err(SimError::config(
                Setting::Reseed,
                "a new seed at the cut needs a checkpoint to restore",
            ));
        }
        let balance = self.balance_plan(chosen)?;
        let Some(codec) = self.codec.clone() else {
            return Ok(None);
        };
        // A codec alone (`serde_model`) asks for a chain only where global events need cuts.
        if self.checkpoints.is_none() && self.restore.is_none() && balance.is_none() {
            let globals =
                crate::error::guard("Model::global_events", None, || self.model.global_events())?;
            if !self.across_parts() || globals.is_empty() {
                return Ok(None);
            }
        }
        if let Some(plan) = &self.checkpoints {
            if let Some(every) = plan.every {
                if !(every > 0.0 && every.is_finite()) {
                    return Err(ConfigError::new(
                        Setting::CheckpointEvery,
                        every,
                        "it must be finite and > 0",
                    )
                    .into());
                }
            }
            for &at in &plan.at {
                if !(at > 0.0 && at <= end) {
                    return Err(ConfigError::new(
                        Setting::CheckpointAt,
                        at,
                        format!("it must be > 0 and not after the end time {end}"),
                    )
                    .into());
                }
            }
        }
        #[cfg(feature = "mpi")]
        let ranks: Option<Box<dyn checkpoint::ChainRanks>> = match self.ranks {
            None => None,
            Some(_) => Some(Box::new(crate::run::ranks::WorldRanks::new()?)),
        };
        #[cfg(not(feature = "mpi"))]
        let ranks: Option<Box<dyn checkpoint::ChainRanks>> = None;
        // Over ranks, every rank's threads are workers of the mapping.
        let mut balance = balance;
        if let (Some(b), Some(r)) = (&mut balance, &ranks) {
            b.workers *= r.size();
        }
        let mut plan = self.checkpoints.clone();
        // A checkpoint at the end time is saved by the run's last link.
        let at_end = plan.as_ref().is_some_and(|p| p.at.contains(&end));
        if let Some(p) = &mut plan {
            p.at.retain(|t| *t < end);
        }
        let (model, config) = self.label.clone().unwrap_or_else(|| {
            (
                std::any::type_name::<M>().to_string(),
                serde_json::Value::Null,
            )
        });
        let mut saved_by = format!("{} with {} thread(s)", chosen.name(), chosen.threads());
        #[cfg(all(target_os = "linux", not(chronon_loom)))]
        if let Some((o, _)) = &self.procs {
            saved_by += &format!(" in each of {} processes", o.procs);
        }
        if let Some(r) = &ranks {
            saved_by += &format!(" on each of {} MPI ranks", r.size());
        }
        Ok(Some((
            checkpoint::ChainSetup {
                ranks,
                codec,
                plan,
                at_end,
                restore: self.restore.clone().map(|r| RestoreFrom {
                    reseed: self.reseed,
                    ..r
                }),
                model,
                config,
                balance,
                in_process: !self.across_parts(),
            },
            saved_by,
        )))
    }
}
