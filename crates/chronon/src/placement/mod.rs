//! Where workers run: one core each, in NUMA-node order (`--pin`), and the memory of the LPs a
//! worker owns first touched by that worker, so that a first-touch kernel places it on the
//! worker's node. README.md beside this file says what is placed and what is not.
//!
//! A worker's number is its global number (`process * threads + thread` with `--procs`), so the
//! processes of one run plan the same cores and never share one while cores are free.

mod affinity;
mod machine;

pub use machine::Machine;

/// Whether workers are pinned to cores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pin {
    /// Pinned when the run's workers fit the cores this process may use; not pinned otherwise
    /// (workers that share cores are better left to the scheduler). First touch only on a
    /// machine of several NUMA nodes (on one node it would move memory for nothing).
    #[default]
    Auto,
    /// Always pinned, and always first-touched; with more workers than cores, worker `w`
    /// shares core `w mod cores`.
    On,
    /// Never pinned.
    Off,
}

impl Pin {
    /// The name used on the command line (`--pin`).
    pub fn name(self) -> &'static str {
        match self {
            Pin::Auto => "auto",
            Pin::On => "on",
            Pin::Off => "off",
        }
    }
}

impl std::str::FromStr for Pin {
    type Err = String;
    fn from_str(s: &str) -> Result<Pin, String> {
        match s {
            "auto" => Ok(Pin::Auto),
            "on" => Ok(Pin::On),
            "off" => Ok(Pin::Off),
            other => Err(format!("unknown --pin '{other}' (allowed: auto, on, off)")),
        }
    }
}

/// What placement did in a run, as the report shows it.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct Placement {
    /// The mode asked for (`auto`, `on`, `off`).
    pub pin: String,
    /// Whether every worker thread was pinned to its core.
    pub pinned: bool,
    /// The core of each worker, by global worker number (empty when not pinned).
    pub cores: Vec<usize>,
    /// Whether workers moved the records of their own LPs and their pending sets into memory
    /// they touched first (pinned workers do, with `on` or on several NUMA nodes).
    pub first_touch: bool,
    /// The longest time a worker spent on that move, in seconds (part of the run's wall time).
    pub first_touch_s: f64,
    /// One line: what was done, or why not.
    pub why: String,
    /// The machine: cores this process may use, NUMA nodes, CPU model.
    pub machine: Machine,
}

impl Placement {
    /// What an executor that runs on the calling thread (or on a pool it does not own) does:
    /// nothing, for the reason given.
    pub(crate) fn none(pin: Pin, why: &str) -> Placement {
        Placement {
            pin: pin.name().into(),
            why: why.into(),
            machine: Machine::detect(),
            ..Placement::default()
        }
    }

    /// Records that `failed` workers (if any) could not set their affinity.
    fn unpinned(&mut self, failed: usize) {
        if failed > 0 {
            self.pinned = false;
            self.why = format!(
                "not pinned: {failed} worker(s) could not set their affinity; {}",
                self.why
            );
        }
    }
}

/// The plan of a run's placement, shared by its worker threads: each pins itself and
/// first-touches its LPs' memory; failures are counted for the report.
#[derive(Debug)]
pub(crate) struct Pinner {
    plan: Placement,
    failed: std::sync::atomic::AtomicUsize,
    touch_ns: std::sync::atomic::AtomicU64,
}

impl Pinner {
    /// The plan for a run of `workers` workers in all (every process's).
    pub(crate) fn new(pin: Pin, workers: usize) -> Pinner {
        Pinner::with_machine(pin, workers, Machine::detect())
    }

    pub(crate) fn with_machine(pin: Pin, workers: usize, machine: Machine) -> Pinner {
        let n = machine.order.len();
        let (pinned, why) = match pin {
            Pin::Off => (false, "not pinned: --pin off".to_string()),
            _ if n == 0 || !affinity::SUPPORTED => (
                false,
                "not pinned: this OS does not report the cores a process may use".to_string(),
            ),
            Pin::Auto if workers > n => (
                false,
                format!("not pinned: {workers} workers on {n} cores (--pin auto pins only workers that fit; --pin on shares cores)"),
            ),
            Pin::On if workers > n => (
                true,
                format!("pinned, {workers} workers on {n} cores: worker w on core w mod {n}, cores shared"),
            ),
            _ => (
                true,
                format!(
                    "pinned: {workers} worker(s) on {workers} of {n} cores, NUMA node by node ({} node(s))",
                    machine.numa_nodes
                ),
            ),
        };
        let first_touch = pinned && (pin == Pin::On || machine.numa_nodes > 1);
        let why = format!(
            "{why}; {}",
            match (first_touch, pinned) {
                (true, _) => "first touch: each worker moves its LPs' records and pending set",
                (false, true) => "no first touch: one NUMA node",
                (false, false) => "no first touch",
            }
        );
        let cores = if pinned {
            (0..workers).map(|w| machine.order[w % n]).collect()
        } else {
            Vec::new()
        };
        Pinner {
            plan: Placement {
                pin: pin.name().into(),
                pinned,
                cores,
                first_touch,
                first_touch_s: 0.0,
                why,
                machine,
            },
            failed: Default::default(),
            touch_ns: Default::default(),
        }
    }

    /// Pins the calling thread, worker `w` (global number), to its core (nothing when the plan
    /// pins nothing). A failure is counted and the worker runs unpinned.
    pub(crate) fn pin(&self, w: usize) {
        if let Some(&core) = self.plan.cores.get(w) {
            if affinity::pin_current_thread(core).is_err() {
                // Ordering: a counter read after the workers are joined (the join
                // synchronizes).
                self.failed
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Runs `touch` (a worker moving its memory) when the plan first-touches, and keeps the
    /// longest such time for the report.
    pub(crate) fn touch<T>(&self, x: T, touch: impl FnOnce(T) -> T) -> T {
        if !self.plan.first_touch {
            return x;
        }
        let t = std::time::Instant::now();
        let x = touch(x);
        let ns = t.elapsed().as_nanos() as u64;
        // Ordering: a maximum read after the workers are joined (the join synchronizes).
        self.touch_ns
            .fetch_max(ns, std::sync::atomic::Ordering::Relaxed);
        x
    }

    /// What placement did, once every worker of this process has been joined.
    pub(crate) fn placement(&self) -> Placement {
        let mut p = self.plan.clone();
        // Ordering: read after the workers were joined.
        p.unpinned(self.failed.load(std::sync::atomic::Ordering::Relaxed));
        p.first_touch_s = self.touch_ns.load(std::sync::atomic::Ordering::Relaxed) as f64 * 1e-9;
        p
    }
}

/// What a worker process adds to each of its workers' figures, for the parent's report:
/// `pinned` (1 or 0) and `first_touch_s`.
pub(crate) fn mark_workers(p: &Placement, workers: &mut [std::collections::BTreeMap<String, f64>]) {
    for w in workers {
        w.insert("pinned".into(), f64::from(u8::from(p.pinned)));
        w.insert("first_touch_s".into(), p.first_touch_s);
    }
}

/// The placement of a run over worker processes (or MPI ranks), from the plan of its `n`
/// workers and what each worker's process said ([`mark_workers`]).
pub(crate) fn gathered(
    pin: Pin,
    n: usize,
    workers: &[std::collections::BTreeMap<String, f64>],
) -> Placement {
    let mut p = Pinner::new(pin, n).placement();
    if p.pinned {
        p.unpinned(
            workers
                .iter()
                .filter(|w| w.get("pinned") == Some(&0.0))
                .count(),
        );
    }
    p.first_touch_s = workers
        .iter()
        .filter_map(|w| w.get("first_touch_s").copied())
        .fold(0.0, f64::max);
    p
}

/// `v`'s elements moved into a vector the calling thread allocates and writes first.
pub(crate) fn touch_vec<T>(mut v: Vec<T>) -> Vec<T> {
    let mut fresh = Vec::with_capacity(v.len());
    fresh.append(&mut v);
    fresh
}

/// `q`'s events moved into a pending set the calling thread builds (the same events, so the
/// same pop order: keys are unique).
pub(crate) fn touch_queue<T: crate::event::Keyed, Q: crate::queue::PendingSet<T>>(mut q: Q) -> Q {
    let mut fresh = Q::new();
    while let Some(e) = q.pop() {
        fresh.push(e);
    }
    fresh
}

#[cfg(test)]
mod tests;
