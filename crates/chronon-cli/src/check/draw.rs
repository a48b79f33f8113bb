//! Random configurations for `chronon check`: small model configurations that run in well
//! under a second, and random executor options that every executor accepts for them.

use chronon::LpRng;

/// Every model `chronon check` draws from, in the order `--models` lists them.
pub(crate) const MODELS: &[&str] = &[
    "random",
    "phold",
    "phold-phases",
    "simplesim",
    "manufacturing",
    "pcs",
    "datastore",
    "star-clique",
    "campus",
];

/// The parallel executors (`--sync` values) `chronon check` compares with `seq`.
pub(crate) const SYNCS: &[&str] = &["window", "null-message", "lockstep", "timewarp"];

/// A small helper over [`LpRng`] for drawing flags.
pub(crate) struct Draw {
    rng: LpRng,
}

impl Draw {
    pub(crate) fn new(seed: u64) -> Self {
        Draw {
            rng: LpRng::from_seed(seed),
        }
    }

    /// An integer in `lo..=hi`.
    pub(crate) fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rng.below(hi - lo + 1)
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.rng.uniform() < p
    }

    /// One of `items`.
    pub(crate) fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.rng.below(items.len() as u64) as usize]
    }

    /// A float in `[lo, hi)` rounded to a multiple of `step` (round numbers reproduce
    /// exactly from the printed command line and make ties).
    pub(crate) fn grid(&mut self, lo: f64, hi: f64, step: f64) -> f64 {
        let n = ((hi - lo) / step).floor() as u64;
        lo + step * self.rng.below(n.max(1)) as f64
    }
}

/// Flag list builder: `("--lps", 8)` pairs as strings.
#[derive(Default)]
pub(crate) struct Flags(pub Vec<String>);

impl Flags {
    pub(crate) fn set(&mut self, flag: &str, value: impl ToString) -> &mut Self {
        self.0.push(format!("--{flag}"));
        self.0.push(value.to_string());
        self
    }
}

/// A random small configuration of `model`: its flags, `--end` and `--seed` included.
pub(crate) fn model_flags(model: &str, d: &mut Draw) -> Flags {
    let mut f = Flags::default();
    match model {
        "random" => {
            let lps = d.int(2, 40);
            f.set("lps", lps)
                .set("degree", d.int(0, 5))
                .set("lookahead", d.pick(&["0.25", "0.5", "1"]))
                .set("quantum", d.pick(&["0.25", "0.5"]))
                .set("idle-lps", d.int(0, lps))
                .set("start-at", d.pick(&["0", "1", "5"]))
                .set("hot-lps", d.int(0, lps.min(4)))
                .set("hot-work", d.int(0, 300))
                .set("topology-seed", d.int(0, 1 << 20));
            if d.chance(0.4) {
                f.set("zero-links", d.pick(&["0.2", "0.5", "1"]));
                f.set("zero-acyclic", d.chance(0.8));
            }
            if d.chance(0.4) {
                f.set("zero-self", d.pick(&["0.1", "0.3", "0.5"]));
            }
            if d.chance(0.4) {
                f.set("global-period", d.pick(&["1", "2.5", "7"]));
            }
            f.set("end", d.int(5, 40));
        }
        "phold" => {
            let la = d.pick(&["0", "0.1", "0.5", "1"]);
            let lav: f64 = la.parse().expect("a number");
            let lps = d.int(1, 96);
            f.set("lps", lps)
                .set("start-events", d.int(1, 4))
                .set("remote", d.pick(&["0", "0.1", "0.5", "1"]))
                .set("lookahead", la)
                .set("mean", lav + d.grid(0.25, 2.0, 0.25))
                .set("topology", d.pick(&["mesh", "mesh", "mesh2d"]))
                .set("state-bytes", d.pick(&["0", "0", "64"]));
            if d.chance(0.3) {
                // At most every LP (more is bad input, refused by every executor).
                f.set("hot-lps", d.int(0, lps.min(2)));
            }
            f.set("end", d.int(5, 40));
        }
        "phold-phases" => {
            let phase = d.int(2, 5);
            f.set("width", d.int(2, 7))
                .set("height", d.int(1, 6))
                .set("wrap", d.chance(0.5))
                .set("jobs-per-object", d.int(1, 3))
                .set("lookahead", d.pick(&["0", "0.1", "0.5"]))
                .set("mean", d.pick(&["0.5", "1", "1.5"]))
                .set("phase-length", phase)
                .set("work-a-us", 0)
                .set("work-b-us", 0)
                .set("work-c-us", 0)
                .set("end", 3 * phase);
        }
        "simplesim" => {
            let dmin = d.grid(0.0, 1.0, 0.25);
            f.set("lps", d.int(1, 12))
                .set("queue-bound", d.int(1, 40))
                .set("lookahead", d.pick(&["0.5", "1", "2"]))
                .set("delay-min", dmin)
                .set("delay-max", dmin + d.grid(0.0, 2.0, 0.5))
                .set("payload-bytes", d.pick(&["0", "8", "64", "300"]))
                .set("start-window", d.pick(&["0.5", "1", "5"]))
                .set("warmup", d.pick(&["0", "5"]))
                .set("touch", d.pick(&["none", "read", "write"]))
                .set("end", d.int(10, 60));
        }
        "manufacturing" => {
            let assembly = d.int(0, 2);
            f.set("lines", d.int(1, 3))
                .set("stations-per-line", d.int(1, 3))
                .set("assembly-stations", assembly)
                .set("testing-stations", d.int(u64::from(assembly > 0), 3))
                .set("interarrival", d.pick(&["2", "5", "10"]))
                .set("rework", d.pick(&["0", "0.1", "0.3"]))
                .set("transfer", d.pick(&["0.5", "0.5", "1", "0"]))
                .set("warmup", d.pick(&["0", "20"]))
                .set("work-us", d.pick(&["0", "0", "0", "2"]))
                .set("end", d.int(50, 300));
        }
        "pcs" => {
            f.set("width", d.int(2, 5))
                .set("height", d.int(1, 4))
                .set("channels", d.int(1, 12))
                .set("call-interarrival", d.pick(&["0.05", "0.2", "1"]))
                .set("call-duration", d.pick(&["0.5", "2"]))
                .set("residence", d.pick(&["0", "0.5", "2", "5"]))
                .set("handoff-delay", d.pick(&["0.01", "0.05", "0.1"]))
                .set("fading-work", d.int(0, 2))
                .set("fading-period", d.pick(&["0", "0", "0.5", "1.5"]))
                .set("warmup", d.pick(&["0", "1"]))
                .set("sample-period", d.pick(&["0", "0", "0.7", "2"]))
                .set("end", d.int(2, 8));
        }
        "datastore" => {
            let nodes = d.int(2, 16);
            f.set("nodes", nodes)
                .set("partitions-per-node", d.int(1, 3))
                .set("keys-per-partition", d.int(2, 40))
                .set("batching-factor", d.int(1, 8))
                .set("ops-per-tx", d.int(1, 6))
                .set("remote", d.pick(&["0", "0.2", "0.5", "1"]))
                .set("batch-interarrival", d.pick(&["0.5", "1", "2"]))
                .set("hold", d.pick(&["0", "0.2", "0.5"]))
                .set("net-delay", d.pick(&["0.01", "0.05", "0.2"]))
                .set("work-us", d.pick(&["0", "0", "0", "1"]))
                .set("alloc", d.pick(&["round-robin", "upfront"]))
                .set("end", d.int(2, 8));
        }
        "star-clique" => {
            f.set("stars", d.int(2, 4))
                .set("leaf-bandwidth", d.pick(&["1000000", "10000000"]))
                .set("leaf-delay", d.pick(&["0.0001", "0.001"]))
                .set("hub-bandwidth", d.pick(&["10000000", "100000000"]))
                .set("hub-delay", d.pick(&["0.001", "0.01"]))
                .set("queue-packets", d.int(1, 50))
                .set("packet-bytes", d.pick(&["256", "1024"]))
                .set("load", d.pick(&["0.1", "0.5", "0.9"]))
                .set("on-mean", d.pick(&["0.05", "0.1", "0.5"]))
                .set("off-mean", d.pick(&["0", "0.1", "0.5"]))
                .set("start-window", d.pick(&["0.05", "0.5"]))
                .set("end", d.grid(0.1, 0.4, 0.05));
        }
        "campus" => {
            f.set("campuses", d.int(1, 3))
                .set("servers", d.int(1, 3))
                .set("lans-per-net", d.int(1, 2))
                .set("clients-per-lan", d.int(1, 4))
                .set("queue-packets", d.int(1, 50))
                .set("load", d.pick(&["0.01", "0.1", "0.5"]))
                .set("on-mean", d.pick(&["0.05", "0.5"]))
                .set("off-mean", d.pick(&["0", "0.5"]))
                .set("start-window", d.pick(&["0.05", "0.5"]))
                .set("sample-period", d.pick(&["0", "0", "0.03", "0.1"]))
                .set("end", d.grid(0.1, 0.4, 0.05));
        }
        other => unreachable!("model list checked before drawing: {other}"),
    }
    f.set("seed", d.int(0, u64::from(u32::MAX)));
    f
}

/// Whether `model` implements reverse computation (so `--state-saving reverse` applies).
fn has_reverse(model: &str) -> bool {
    matches!(model, "phold" | "phold-phases")
}

/// Random executor flags for `sync`: threads, queue and the options that executor takes;
/// `over_ranks`: only what runs over MPI ranks (no worker processes, work-stealing runtime or
/// load balancing), 1–2 threads per rank (the ranks share this machine's cores).
pub(crate) fn executor_flags(model: &str, sync: &str, over_ranks: bool, d: &mut Draw) -> Flags {
    let mut f = Flags::default();
    f.set("sync", sync)
        .set("threads", d.int(1, if over_ranks { 2 } else { 4 }))
        .set("queue", d.pick(&["ladder", "heap"]));
    // Lock-step on the work-stealing runtime (seed 002), a few LPs per task to many; it has no
    // LP owners and no barrier, so no --mapping or --barrier.
    let ws = sync == "lockstep" && !over_ranks && d.chance(0.4);
    if ws {
        f.set("runtime", "work-stealing");
        f.set("threshold", d.pick(&["1", "2", "7", "50"]));
    } else if d.chance(0.3) {
        f.set("mapping", d.pick(&["block", "round-robin"]));
    }
    if sync == "timewarp" {
        let saving = if has_reverse(model) {
            d.pick(&["copy", "reverse", "auto"])
        } else {
            d.pick(&["copy", "auto"])
        };
        f.set("state-saving", saving);
        // Checkpoints apply to copy state saving only (auto picks reverse when it can).
        let copies = saving == "copy" || (saving == "auto" && !has_reverse(model));
        if copies && d.chance(0.5) {
            f.set("checkpoint", d.int(1, 8));
        }
        if d.chance(0.25) {
            f.set("max-memory", d.pick(&["64M", "256M", "1G"]));
        }
        if d.chance(0.25) {
            f.set("window", d.pick(&["0.5", "2", "10"]));
        }
    } else if sync != "null-message" && !ws {
        // Null messages use no barrier.
        let barrier = d.pick(&["tree", "std", "semaphore", "spin"]);
        if d.chance(0.5) {
            f.set("barrier", barrier);
            if barrier == "tree" && d.chance(0.5) {
                f.set("fan-in", d.int(2, 4));
            }
        }
        if sync == "window" && !over_ranks && d.chance(0.3) {
            f.set("dedicated", d.pick(&["0", "0.5"]));
            f.set("shared-sets", d.int(1, 3));
        }
    }
    // Worker processes (issue 10) for the conservative protocols on persistent workers without
    // load balancing, on every model (every shipped model's events may cross a process
    // boundary); a drawn configuration with global events is refused in one line and counted
    // as refused.
    let balanced = f.0.iter().any(|a| a == "--dedicated");
    if matches!(sync, "window" | "lockstep" | "null-message")
        && !ws
        && !balanced
        && !over_ranks
        && d.chance(0.3)
    {
        f.set("procs", d.int(1, 3));
    }
    // Placement: pinned or not, more workers than cores included (`on` shares cores).
    if d.chance(0.4) {
        f.set("pin", d.pick(&["auto", "on", "off"]));
    }
    f
}
