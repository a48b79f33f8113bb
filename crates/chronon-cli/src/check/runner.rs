//! Runs `chronon run` children for `chronon check`, with time limits, and compares their
//! reports with the sequential one.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::child::{describe, time_limit, wait_with_limit, with_end, workers, Ran, ScratchDir};
use crate::Failure;

/// Refusals that are part of an executor's contract, by a substring of their message. Any
/// other refusal of a configuration that the sequential executor accepted is a failure.
const EXPECTED_REFUSALS: &[(&str, &str)] = &[
    (
        "lookahead 0",
        "null-message: a zero-lookahead link between workers",
    ),
    (
        "zero-lookahead",
        "null-message: a cycle of zero-lookahead links between workers",
    ),
];

/// The sequential run's figures that every parallel run must reproduce.
pub(crate) struct Reference {
    /// Its report (`FIGURES` are compared).
    report: Value,
    wall: Duration,
    /// The run's end time (its report's `config.end`), for the checkpoint draws.
    end: Option<f64>,
    /// The LP costs it wrote (`--lp-costs`), for `--mapping profile:FILE` draws.
    profile: PathBuf,
}

/// The figures of a report that every parallel run must reproduce.
const FIGURES: [&str; 6] = [
    "fingerprint",
    "committed",
    "model_stats",
    "model_series",
    "last_time",
    "pending_at_end",
];

/// A failure, for `check` to explain and print (`diagnose.rs`).
pub(crate) struct Failed {
    /// What went wrong, one line.
    pub what: String,
    /// The command lines that reproduce it, in order.
    pub cmds: Vec<String>,
    /// A completed run that differs from the sequential one: what to rerun with a trace.
    pub rerun: Option<Rerun>,
}

/// A parallel run that differs from the sequential one, as `check` drew it.
#[derive(Clone)]
pub(crate) struct Rerun {
    pub model: String,
    /// The model's configuration (model flags, `--end`, `--seed`).
    pub flags: Vec<String>,
    /// The parallel run's executor flags.
    pub exec: Vec<String>,
    /// The parallel run's time limit.
    pub limit: Duration,
}

impl Reference {
    /// The end time the sequential run ran to.
    pub(crate) fn end(&self) -> Option<f64> {
        self.end
    }

    /// The profile of LP costs the sequential run wrote.
    pub(crate) fn profile(&self) -> &std::path::Path {
        &self.profile
    }
}

/// Counts for the summary.
#[derive(Default)]
pub(crate) struct Summary {
    pub compared: u64,
    pub failures: u64,
    pub refused: BTreeMap<String, u64>,
    pub per_pair: BTreeMap<(String, String), u64>,
    /// Compared runs that saved checkpoints on the way (`--checkpoint-every`).
    pub saving: u64,
    /// Compared runs restored from a checkpoint that another run saved (`--restore`).
    pub restored: u64,
}

pub(crate) struct Runner {
    binary: crate::sys::SelfCommand,
    /// The program's name, in the command lines shown.
    program: String,
    /// The models have no name on the command line (a one-model program).
    single: bool,
    dir: ScratchDir,
    slow_factor: f64,
    slow_floor: Duration,
    /// The cores this process may use (the time limit scales with the oversubscription).
    cores: usize,
    n: u64,
    /// Checkpoint directories made so far (each gets a fresh name).
    checkpoints: u64,
    /// Sequential references run so far (each writes its LP costs under a fresh name).
    references: u64,
    summary: Summary,
    /// Failures not yet taken (`take_failures`).
    failed: Vec<Failed>,
}

impl Runner {
    pub(crate) fn new(
        binary: crate::sys::SelfCommand,
        models: &crate::registry::Models,
        slow_factor: f64,
        slow_floor: f64,
    ) -> Result<Self, Failure> {
        Ok(Runner {
            binary,
            program: crate::registry::program().to_string(),
            single: models.single(),
            dir: ScratchDir::new()?,
            slow_factor,
            slow_floor: Duration::from_secs_f64(slow_floor.max(0.0)),
            cores: crate::sys::cores(),
            n: 0,
            checkpoints: 0,
            references: 0,
            summary: Summary::default(),
            failed: Vec::new(),
        })
    }

    pub(crate) fn summary(&self) -> &Summary {
        &self.summary
    }

    /// The failures since the last call, oldest first.
    pub(crate) fn take_failures(&mut self) -> Vec<Failed> {
        std::mem::take(&mut self.failed)
    }

    /// A path in the scratch directory (removed when the check ends).
    pub(crate) fn scratch(&self, name: &str) -> PathBuf {
        self.dir.path.join(name)
    }

    /// Runs `model` with `flags` and `exec` once, in one process, within `limit`: its report
    /// when it completes, else why not (one line). For `diagnose.rs`.
    pub(crate) fn report_of(
        &mut self,
        model: &str,
        flags: &[String],
        exec: &[String],
        limit: Duration,
    ) -> Result<Value, String> {
        match self.child(model, flags, exec, None, limit) {
            Ran::Report(r, _) if r["complete"] == Value::Bool(true) => Ok(r),
            other => Err(describe(&other)),
        }
    }

    /// Runs the sequential reference; `None` (and a failure) if it does not complete.
    pub(crate) fn reference(
        &mut self,
        model: &str,
        flags: &[String],
        verbose: bool,
    ) -> Option<Reference> {
        // Its LP costs map some parallel runs (`--mapping profile:FILE`).
        self.references += 1;
        let profile = self.scratch(&format!("lp-costs-{}.csv", self.references));
        let seq = [
            "--sync".to_string(),
            "seq".to_string(),
            "--lp-costs".to_string(),
            profile.display().to_string(),
        ];
        let cmd = self.command_line(model, flags, &seq, None);
        if verbose {
            eprintln!("check: {cmd}");
        }
        match self.child(model, flags, &seq, None, Duration::from_secs(300)) {
            Ran::Report(r, wall) if r["complete"] == Value::Bool(true) => Some(Reference {
                end: r["config"]["end"].as_f64(),
                report: r,
                wall,
                profile,
            }),
            other => {
                self.fail(
                    &[cmd],
                    &format!("the sequential reference run {}", describe(&other)),
                );
                None
            }
        }
    }

    /// Runs `model` under the executor flags `exec` (over `ranks` MPI ranks when given) and
    /// compares it with `reference`.
    pub(crate) fn compare(
        &mut self,
        model: &str,
        flags: &[String],
        exec: &[String],
        ranks: Option<usize>,
        reference: &Reference,
        verbose: bool,
    ) {
        let cmd = self.command_line(model, flags, exec, ranks);
        if verbose {
            eprintln!("check: {cmd}");
        }
        let outcome = self.child(
            model,
            flags,
            exec,
            ranks,
            self.limit(reference, exec, ranks),
        );
        let flags = ranks.is_none().then_some(flags);
        self.judge((model, flags), exec, ranks, outcome, reference, &[cmd]);
    }

    /// Runs `model` under the executor flags `exec`, saving a checkpoint every `every` time
    /// units on the way (in a fresh directory, removed after), and compares it with
    /// `reference`: saving changes nothing.
    pub(crate) fn compare_saving(
        &mut self,
        model: &str,
        flags: &[String],
        exec: &[String],
        (every, over): (f64, Option<usize>),
        reference: &Reference,
        verbose: bool,
    ) {
        let dir = self.checkpoint_dir();
        let mut exec = exec.to_vec();
        exec.extend([
            "--checkpoint-every".to_string(),
            every.to_string(),
            "--checkpoint-dir".to_string(),
            dir.display().to_string(),
        ]);
        let compared = self.summary.compared;
        self.compare(model, flags, &exec, over, reference, verbose);
        self.summary.saving += self.summary.compared - compared;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A pair: run A (`exec_a`) to `cut` only, saving a checkpoint there, then run B
    /// (`exec_b`) from that checkpoint to the reference's end; B must end as the sequential
    /// run that was never interrupted. A failure shows both command lines, A's first. The
    /// checkpoint's directory is removed after. `ranks`: the MPI ranks A and B run over.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn compare_restored(
        &mut self,
        model: &str,
        flags: &[String],
        (exec_a, exec_b): (&[String], &[String]),
        (ranks_a, ranks_b): (Option<usize>, Option<usize>),
        cut: f64,
        reference: &Reference,
        verbose: bool,
    ) {
        let Some(end) = reference.end else {
            return;
        };
        let dir = self.checkpoint_dir();
        let flags_a = with_end(flags, cut);
        let mut a = exec_a.to_vec();
        a.extend([
            "--checkpoint-at".to_string(),
            cut.to_string(),
            "--checkpoint-dir".to_string(),
            dir.display().to_string(),
        ]);
        let flags_b = with_end(flags, end);
        let mut b = exec_b.to_vec();
        b.extend([
            "--restore".to_string(),
            dir.join(format!("t{cut}")).display().to_string(),
        ]);
        let cmd_a = self.command_line(model, &flags_a, &a, ranks_a);
        let cmd_b = self.command_line(model, &flags_b, &b, ranks_b);
        if verbose {
            eprintln!("check: {cmd_a}");
        }
        match self.child(
            model,
            &flags_a,
            &a,
            ranks_a,
            self.limit(reference, &a, ranks_a),
        ) {
            Ran::Report(r, _) if r["complete"] == Value::Bool(true) => {
                if verbose {
                    eprintln!("check: {cmd_b}");
                }
                let limit = self.limit(reference, &b, ranks_b);
                let outcome = self.child(model, &flags_b, &b, ranks_b, limit);
                let compared = self.summary.compared;
                self.judge(
                    (model, None),
                    &b,
                    ranks_b,
                    outcome,
                    reference,
                    &[cmd_a, cmd_b],
                );
                self.summary.restored += self.summary.compared - compared;
            }
            Ran::Exit(2, msg) if self.expected_refusal(&msg) => {}
            other => {
                self.summary.compared += 1;
                let what = match other {
                    Ran::Timeout(limit) => {
                        format!(": {}", self.slow(limit, reference, &a, ranks_a))
                    }
                    _ => format!(" {}", describe(&other)),
                };
                self.fail(&[cmd_a], &format!("the run saving a checkpoint{what}"));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The time limit of a parallel run under `exec` (over `ranks` MPI ranks): see
    /// `child::time_limit`.
    fn limit(&self, reference: &Reference, exec: &[String], ranks: Option<usize>) -> Duration {
        let workers = workers(exec, ranks);
        time_limit(
            reference.wall,
            (workers, self.cores),
            self.slow_factor,
            self.slow_floor,
        )
    }

    /// What a run killed at its time limit `limit` was: slow or hung, against the sequential
    /// run's time and with how the limit came about.
    fn slow(
        &self,
        limit: Duration,
        reference: &Reference,
        exec: &[String],
        ranks: Option<usize>,
    ) -> String {
        let workers = workers(exec, ranks);
        format!(
            "slow/hung: killed after {:.1} s, the sequential run took {:.2} s (the limit: \
             (--slow-floor {} + --slow-factor {} × seq) × {:.1}, {workers} workers on {} cores)",
            limit.as_secs_f64(),
            reference.wall.as_secs_f64(),
            self.slow_floor.as_secs_f64(),
            self.slow_factor,
            (workers as f64 / self.cores.max(1) as f64).max(1.0),
            self.cores,
        )
    }

    /// A fresh checkpoint directory's path in the scratch directory (the run creates it).
    fn checkpoint_dir(&mut self) -> PathBuf {
        self.checkpoints += 1;
        self.dir
            .path
            .join(format!("checkpoints-{}", self.checkpoints))
    }

    /// Counts an executor's refusal by contract (true), or says it is none (false).
    fn expected_refusal(&mut self, msg: &str) -> bool {
        match EXPECTED_REFUSALS.iter().find(|(m, _)| msg.contains(m)) {
            Some((_, reason)) => {
                *self.summary.refused.entry(reason.to_string()).or_default() += 1;
                true
            }
            None => false,
        }
    }

    /// Compares the outcome of a run under `exec` with `reference`; a failure shows `cmds`,
    /// the command lines that reproduce it, in order. `flags`: the model's configuration when
    /// the run can be rerun alone with a trace (not a restored run, not over MPI ranks).
    fn judge(
        &mut self,
        (model, flags): (&str, Option<&[String]>),
        exec: &[String],
        ranks: Option<usize>,
        outcome: Ran,
        reference: &Reference,
        cmds: &[String],
    ) {
        let sync = exec
            .iter()
            .position(|a| a == "--sync")
            .map_or("?", |i| exec[i + 1].as_str())
            .to_string();
        let sync = match ranks {
            Some(r) => format!("{sync} ({r} rank{})", if r == 1 { "" } else { "s" }),
            None => sync,
        };
        match outcome {
            Ran::Report(r, _) => {
                self.summary.compared += 1;
                *self
                    .summary
                    .per_pair
                    .entry((model.to_string(), sync.clone()))
                    .or_default() += 1;
                let mut wrong = Vec::new();
                if r["complete"] != Value::Bool(true) {
                    wrong.push("the run says it is incomplete".to_string());
                }
                wrong.extend(differences(&r, &reference.report));
                if !wrong.is_empty() {
                    let limit = self.limit(reference, exec, ranks);
                    let rerun = flags.map(|flags| Rerun {
                        model: model.to_string(),
                        flags: flags.to_vec(),
                        exec: exec.to_vec(),
                        limit,
                    });
                    self.fail_with(
                        cmds,
                        &format!(
                            "{model} under {sync} differs from seq: {}",
                            wrong.join(", ")
                        ),
                        rerun,
                    );
                }
            }
            Ran::Exit(2, msg) => {
                if !self.expected_refusal(&msg) {
                    self.summary.compared += 1;
                    self.fail(
                        cmds,
                        &format!(
                            "{model} under {sync} refused a configuration that seq accepts: {msg}"
                        ),
                    );
                }
            }
            Ran::Timeout(limit) => {
                self.summary.compared += 1;
                let slow = self.slow(limit, reference, exec, ranks);
                self.fail(cmds, &format!("{model} under {sync}: {slow}"));
            }
            other => {
                self.summary.compared += 1;
                self.fail(cmds, &format!("{model} under {sync}: {}", describe(&other)));
            }
        }
    }

    /// The command line that reproduces a run.
    pub(crate) fn command_line(
        &self,
        model: &str,
        flags: &[String],
        exec: &[String],
        ranks: Option<usize>,
    ) -> String {
        let mut parts = Vec::new();
        if let Some(r) = ranks {
            parts.extend(["mpirun".to_string(), "-n".to_string(), r.to_string()]);
        }
        parts.extend([self.program.clone(), "run".to_string()]);
        if !self.single {
            parts.push(model.to_string());
        }
        parts.extend(flags.iter().cloned());
        parts.extend(exec.iter().cloned());
        if let Some(r) = ranks {
            parts.extend(["--ranks".to_string(), r.to_string()]);
        }
        parts.join(" ")
    }

    /// Records a failure with the command lines that reproduce it, run in order (a restored
    /// run's: the run that saved the checkpoint, then the restored one).
    fn fail(&mut self, cmds: &[String], what: &str) {
        self.fail_with(cmds, what, None);
    }

    fn fail_with(&mut self, cmds: &[String], what: &str, rerun: Option<Rerun>) {
        self.summary.failures += 1;
        self.failed.push(Failed {
            what: what.to_string(),
            cmds: cmds.to_vec(),
            rerun,
        });
    }

    /// Runs one child (`mpirun -n R chronon run ... --ranks R` when `ranks` is given) with a
    /// time limit and reads its report.
    fn child(
        &mut self,
        model: &str,
        flags: &[String],
        exec: &[String],
        ranks: Option<usize>,
        limit: Duration,
    ) -> Ran {
        self.n += 1;
        let out = self.dir.path.join(format!("run-{}.json", self.n));
        let started = Instant::now();
        let mut command = match ranks {
            Some(r) => {
                let mut c = Command::new("mpirun");
                c.args(["-n", &r.to_string()]).args(self.binary.words());
                c
            }
            None => self.binary.command(),
        };
        command.arg("run");
        if !self.single {
            command.arg(model);
        }
        command.args(flags).args(exec);
        if let Some(r) = ranks {
            command.args(["--ranks", &r.to_string()]);
        }
        let spawned = command
            .arg("--output")
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                return Ran::Broken(format!(
                    "could not start {}: {e}",
                    command.get_program().to_string_lossy()
                ))
            }
        };
        let status = match wait_with_limit(&mut child, limit, ranks.is_some()) {
            Some(s) => s,
            None => return Ran::Timeout(limit),
        };
        let wall = started.elapsed();
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let first = crate::one_line(&err).to_string();
        let code = status.code().unwrap_or(-1);
        if code != 0 {
            let _ = std::fs::remove_file(&out);
            return Ran::Exit(code, first);
        }
        let report = std::fs::read_to_string(&out)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()));
        let _ = std::fs::remove_file(&out);
        match report {
            Ok(r) => Ran::Report(r, wall),
            Err(e) => Ran::Broken(format!("exited 0 but its report is unreadable: {e}")),
        }
    }
}

/// The figures of the report `run` that differ from the sequential report `seq`'s, each short:
/// a figure's name with both values (`committed 812 (seq 790)`), or for a map (the model's
/// statistics) the keys that differ, at most four, then how many more.
pub(crate) fn differences(run: &Value, seq: &Value) -> Vec<String> {
    let short = |v: Option<&Value>| {
        let s = v.map_or("none".to_string(), Value::to_string);
        if s.chars().count() > 24 {
            format!("{}...", s.chars().take(21).collect::<String>())
        } else {
            s
        }
    };
    let mut out = Vec::new();
    for name in FIGURES {
        let (a, b) = (&run[name], &seq[name]);
        if a == b {
            continue;
        }
        match (a.as_object(), b.as_object()) {
            (Some(x), Some(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                let differ: Vec<&String> = keys
                    .into_iter()
                    .filter(|k| x.get(*k) != y.get(*k))
                    .collect();
                for k in differ.iter().take(4) {
                    out.push(format!(
                        "{name}.{k} {} (seq {})",
                        short(x.get(*k)),
                        short(y.get(*k))
                    ));
                }
                if differ.len() > 4 {
                    out.push(format!("{} more {name} keys", differ.len() - 4));
                }
            }
            _ if name == "fingerprint" => out.push(name.to_string()),
            _ => out.push(format!(
                "{name} {} (seq {})",
                short(Some(a)),
                short(Some(b))
            )),
        }
    }
    out
}
