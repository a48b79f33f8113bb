//! Runs of a study as child processes of this binary (`chronon run ... --output FILE`), up to
//! `--jobs` at once, and the loop that hands the runs out: to this process's children and, under
//! `mpirun`, to the other ranks (`ranks.rs`), whichever is free first.
//!
//! Each child runs in a process group of its own, so that Ctrl-C on the terminal reaches only
//! the sweep, which passes one SIGINT on to each running child: the child stops, writes an
//! incomplete report and exits 130, and the sweep keeps nothing of it (a rerun redoes it). A
//! child dies with the sweep (`PR_SET_PDEATHSIG`), so a sweep killed outright leaves no run
//! behind to write into its directory.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{one_line, Failure};

/// One run of the study.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Job {
    /// Its index in the study's list of runs.
    pub index: usize,
    /// `p<point>-r<replication>`.
    pub id: String,
    /// The child's arguments: `run MODEL FLAGS... --seed S` (the output file is added).
    pub args: Vec<String>,
}

/// How a run ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum Outcome {
    /// Exit 0 with a complete report: the report's text.
    Done(String),
    /// Stopped by Ctrl-C: not a result.
    Interrupted,
    /// Anything else: the exit code (none when a signal ended it) and its error line.
    Failed { code: Option<i32>, line: String },
}

/// This process's children.
pub(crate) struct Local {
    binary: crate::sys::SelfCommand,
    scratch: PathBuf,
    slots: usize,
    running: Vec<Running>,
}

struct Running {
    index: usize,
    child: Child,
    report: PathBuf,
    err: PathBuf,
}

/// Environment variables of MPI launchers, which a run must not see (it would take itself for a
/// rank of the sweep's `mpirun`).
fn launcher_var(name: &str) -> bool {
    [
        "PMI_", "PMIX_", "HYDRA_", "HYDI_", "MPIR_", "MPICH_", "OMPI_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

impl Local {
    /// Up to `slots` children of `binary`, writing their files in `scratch`.
    pub(crate) fn new(binary: crate::sys::SelfCommand, scratch: PathBuf, slots: usize) -> Local {
        Local {
            binary,
            scratch,
            slots,
            running: Vec::new(),
        }
    }

    pub(crate) fn free(&self) -> usize {
        self.slots.saturating_sub(self.running.len())
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.running.is_empty()
    }

    /// Starts `job` in a free slot.
    pub(crate) fn start(&mut self, job: &Job) -> Result<(), Failure> {
        let report = self.scratch.join(format!("{}.part.json", job.id));
        let err = self.scratch.join(format!("{}.err", job.id));
        let _ = fs::remove_file(&report);
        let err_file = File::create(&err)
            .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", err.display())))?;
        let mut cmd = self.binary.command();
        cmd.args(&job.args)
            .arg("--output")
            .arg(&report)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err_file)
            .process_group(0);
        for (k, _) in std::env::vars_os() {
            if launcher_var(&k.to_string_lossy()) {
                cmd.env_remove(k);
            }
        }
        // A run dies with the sweep (`kill -9` of the sweep included): an orphan would go on
        // writing into the study after a rerun cleaned it. The signal is tied to the thread
        // that forks, which is the thread that runs the whole loop.
        let parent = rustix::process::getpid();
        // Safety: the closure runs between fork and exec and makes only async-signal-safe
        // system calls (prctl, getppid); it allocates nothing and takes no lock.
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))?;
                // The sweep may have died before the signal was set.
                if rustix::process::getppid() != Some(parent) {
                    return Err(std::io::Error::from_raw_os_error(3)); // ESRCH
                }
                Ok(())
            })
        };
        let child = cmd.spawn().map_err(|e| {
            Failure::runtime(format!("cannot start {}: {e}", self.binary.display()))
        })?;
        self.running.push(Running {
            index: job.index,
            child,
            report,
            err,
        });
        Ok(())
    }

    /// The runs that ended since the last call.
    pub(crate) fn poll(&mut self) -> Vec<(usize, Outcome)> {
        let mut ended = Vec::new();
        let mut i = 0;
        while i < self.running.len() {
            match self.running[i].child.try_wait() {
                Ok(None) => i += 1,
                status => {
                    let r = self.running.swap_remove(i);
                    let code = status.ok().flatten().and_then(|s| s.code());
                    ended.push((r.index, outcome(code, &r.report, &r.err)));
                }
            }
        }
        ended
    }

    /// Passes one SIGINT to every running child.
    pub(crate) fn interrupt(&mut self) {
        for r in &self.running {
            if let Some(pid) = rustix::process::Pid::from_raw(r.child.id() as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            }
        }
    }
}

/// What a child that exited with `code` left in `report` and `err` (both removed).
fn outcome(code: Option<i32>, report: &Path, err: &Path) -> Outcome {
    let text = fs::read_to_string(report).ok();
    let line = fs::read_to_string(err)
        .map(|e| {
            let l = one_line(&e);
            l.strip_prefix("error: ").unwrap_or(l).to_string()
        })
        .unwrap_or_default();
    let _ = fs::remove_file(report);
    let _ = fs::remove_file(err);
    match code {
        Some(0) => match text {
            Some(t)
                if serde_json::from_str::<Value>(&t)
                    .is_ok_and(|v| v["complete"] == Value::Bool(true)) =>
            {
                Outcome::Done(t)
            }
            _ => Outcome::Failed {
                code,
                line: "exited 0 without a complete report".into(),
            },
        },
        Some(c) if c == i32::from(crate::EXIT_INTERRUPTED) => Outcome::Interrupted,
        _ => Outcome::Failed { code, line },
    }
}

/// Runs handed to other processes (the ranks of an `mpirun`).
pub(crate) trait Remote {
    /// Answers the requests that arrived: each may bring a finished run (returned) and asks for
    /// the next, which `next` gives (`None`: no more).
    fn poll(&mut self, next: &mut dyn FnMut() -> Option<Job>) -> Vec<(usize, Outcome)>;
    /// Whether every other process has been told that there is no more.
    fn done(&self) -> bool;
}

/// How the runs ended.
pub(crate) enum Ended {
    /// Every run finished.
    Complete,
    /// Ctrl-C: the runs that finished before are kept.
    Interrupted,
    /// A run failed (the others were stopped).
    Failed(Failure),
}

/// Runs `order` (indices into `jobs`) on `local` and `remote`; `keep` takes each finished run.
pub(crate) fn execute(
    jobs: &[Job],
    order: Vec<usize>,
    local: &mut Local,
    mut remote: Option<&mut dyn Remote>,
    interrupted: &AtomicBool,
    keep: &mut dyn FnMut(usize, String) -> Result<(), Failure>,
) -> Ended {
    let mut queue: VecDeque<usize> = order.into();
    let mut stopping = false;
    let mut failure: Option<Failure> = None;
    let mut was_interrupted = false;
    let mut pause = Duration::from_micros(200);
    loop {
        // Ordering: a flag set by the Ctrl-C handler; it guards no data.
        if interrupted.load(Ordering::Relaxed) && !stopping {
            stopping = true;
            was_interrupted = true;
            local.interrupt();
        }
        while !stopping && local.free() > 0 {
            let Some(j) = queue.pop_front() else { break };
            if let Err(e) = local.start(&jobs[j]) {
                failure = Some(e);
                stopping = true;
                local.interrupt();
            }
        }
        let mut ended = local.poll();
        if let Some(r) = remote.as_deref_mut() {
            let mut next = || {
                if stopping {
                    None
                } else {
                    queue.pop_front().map(|j| jobs[j].clone())
                }
            };
            ended.extend(r.poll(&mut next));
        }
        let progressed = !ended.is_empty();
        for (j, outcome) in ended {
            let result = match outcome {
                Outcome::Done(report) => keep(j, report),
                Outcome::Interrupted => {
                    was_interrupted = true;
                    Ok(())
                }
                // A run this loop stopped may end by the signal itself (sent before its
                // handler was installed): stopped, not failed.
                Outcome::Failed { .. } if stopping => Ok(()),
                Outcome::Failed { code, line } => Err(Failure {
                    code: if code == Some(i32::from(crate::EXIT_BAD_INPUT)) {
                        crate::EXIT_BAD_INPUT
                    } else {
                        1
                    },
                    message: format!(
                        "run {} failed ({}): {line}; it was: {} {}",
                        jobs[j].id,
                        code.map_or("killed by a signal".to_string(), |c| format!("exit {c}")),
                        crate::registry::program(),
                        jobs[j].args.join(" ")
                    ),
                }),
            };
            if let Err(e) = result {
                if failure.is_none() {
                    failure = Some(e);
                }
            }
            if (was_interrupted || failure.is_some()) && !stopping {
                stopping = true;
                local.interrupt();
            }
        }
        let drained = stopping || queue.is_empty();
        if drained && local.is_idle() && remote.as_deref().is_none_or(|r| r.done()) {
            break;
        }
        // Back off while nothing ends: runs last milliseconds to hours.
        pause = if progressed {
            Duration::from_micros(200)
        } else {
            (pause * 2).min(Duration::from_millis(20))
        };
        std::thread::sleep(pause);
    }
    match failure {
        Some(f) => Ended::Failed(f),
        None if was_interrupted => Ended::Interrupted,
        None => Ended::Complete,
    }
}
