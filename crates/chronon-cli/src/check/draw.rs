//! Random executor options for `chronon check` that every executor accepts for a drawn model
//! configuration (each model draws its own small configurations through `ModelSpec::draw`).

use crate::registry::{Draw, Flags};

/// The parallel executors (`--sync` values) `chronon check` compares with `seq`.
pub(crate) const SYNCS: &[&str] = &["window", "null-message", "lockstep", "timewarp"];

/// Random executor flags for `sync`: threads, queue and the options that executor takes;
/// `over_ranks`: only what runs over MPI ranks (no worker processes, work-stealing or active-threads runtime,
/// barrier choice or `--dedicated` load balancing), 1–2 threads per rank (the ranks share this machine's cores);
/// `big_heap`: the model's configuration has a large shared heap, so no `--max-memory` (a
/// drawn bound would be below what the heap takes, and Time Warp would rightly refuse it).
pub(crate) fn executor_flags(
    reverse: Reverse,
    sync: &str,
    over_ranks: bool,
    big_heap: bool,
    d: &mut Draw,
) -> Flags {
    let mut f = Flags::default();
    f.set("sync", sync)
        .set("threads", d.int(1, if over_ranks { 2 } else { 4 }))
        .set("queue", d.pick(&["ladder", "heap"]));
    // Lock-step on the work-stealing (Cilk) or active-threads runtime (seed 002), a few LPs
    // per task to many (small thresholds give several tasks on small drawn models); they have
    // no LP owners and no --barrier, so no --mapping or --barrier.
    let ws = sync == "lockstep" && !over_ranks && d.chance(0.5);
    if ws {
        f.set("runtime", d.pick(&["work-stealing", "active-threads"]));
        f.set("threshold", d.pick(&["1", "2", "3", "7", "50"]));
    } else if d.chance(0.3) {
        f.set("mapping", d.pick(&["block", "round-robin"]));
    }
    if sync == "timewarp" {
        let saving = if reverse.has {
            d.pick(&["copy", "reverse", "auto"])
        } else {
            d.pick(&["copy", "auto"])
        };
        f.set("state-saving", saving);
        // A state-saving period applies to copy state saving only (auto picks reverse when it
        // can).
        let copies = saving == "copy" || (saving == "auto" && !reverse.has);
        if copies && d.chance(0.5) {
            f.set("save-every", d.int(1, 8));
        }
        if !big_heap && d.chance(0.25) {
            // A rank carries MPI's own memory: its process alone can pass 64 MiB.
            let bounds: &[&str] = if over_ranks {
                &["256M", "1G"]
            } else {
                &["64M", "256M", "1G"]
            };
            f.set("max-memory", d.pick(bounds));
        }
        if d.chance(0.25) {
            f.set("window", d.pick(&["0.5", "2", "10"]));
        }
        // Preemptive Time Warp (seed 003): events in contexts, a few suspended per worker;
        // with ticks that always run (alpha -0.99), which preempt by interrupt in this binary
        // (it installs chronon::PlatformAlloc): a handler is switched off between any two
        // instructions of its own code. Not over MPI ranks, which refuse --preempt.
        if !over_ranks && d.chance(0.3) {
            f.0.push("--preempt".to_string());
            if d.chance(0.4) {
                f.set("max-suspended", d.int(1, 4));
            }
            if d.chance(0.6) {
                f.set("tick-us", d.pick(&["50", "100"]));
                f.set("alpha", "-0.99");
                if d.chance(0.25) {
                    f.set("tick-interrupts", "false");
                }
            }
        }
    } else if sync != "null-message" && !ws {
        // Null messages use no barrier; MPI ranks meet at their own.
        let barrier = d.pick(&["tree", "std", "semaphore", "spin"]);
        if !over_ranks && d.chance(0.5) {
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
    // Worker processes for every protocol on persistent workers without load balancing or a
    // chosen barrier (the processes meet at their own), on every model (every shipped model's
    // events may cross a process boundary); global events then run at cuts of the whole model.
    let balanced = f.0.iter().any(|a| a == "--dedicated");
    let barrier = f.0.iter().any(|a| a == "--barrier");
    if matches!(sync, "window" | "lockstep" | "null-message" | "timewarp")
        && !ws
        && !balanced
        && !barrier
        && !over_ranks
        && d.chance(0.3)
    {
        f.set("procs", d.int(1, 3));
    }
    // `--check-reverse` where this configuration's reverse handler runs (Time Warp with reverse
    // computation, in one process) and the model's states compare.
    let saving =
        f.0.iter()
            .position(|a| a == "--state-saving")
            .map(|i| f.0[i + 1].as_str());
    if reverse.has
        && reverse.checkable
        && matches!(saving, Some("reverse" | "auto"))
        && !over_ranks
        && !f.0.iter().any(|a| a == "--procs")
        && d.chance(0.3)
    {
        f.0.push("--check-reverse".to_string());
    }
    // Placement: pinned or not, more workers than cores included (`on` shares cores).
    if d.chance(0.4) {
        f.set("pin", d.pick(&["auto", "on", "off"]));
    }
    f
}

/// Now and then, LPs that move between workers (`--balance T`, T between an eighth and half
/// of the end time `end`), for executors whose workers own LPs.
pub(crate) fn balance(d: &mut Draw, end: f64, exec: &mut Vec<String>) {
    let owners = !exec.iter().any(|a| a == "--runtime");
    if owners && d.chance(0.3) {
        if let Some(t) = checkpoint_time(d, end, end / 8.0, end / 2.0) {
            exec.push("--balance".to_string());
            exec.push(t.to_string());
        }
    }
}

/// Now and then, LPs mapped from the sequential reference's LP costs (`--mapping
/// profile:FILE`), where no other mapping was drawn and workers own LPs.
pub(crate) fn profile(d: &mut Draw, profile: &std::path::Path, exec: &mut Vec<String>) {
    let free = !exec.iter().any(|a| a == "--runtime" || a == "--mapping");
    if free && d.chance(0.15) {
        exec.push("--mapping".to_string());
        exec.push(format!("profile:{}", profile.display()));
    }
}

/// What a drawn configuration of a model has of reverse computation (asked of the model built
/// from that configuration's flags, not of its defaults).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Reverse {
    /// The model built from the flags has a reverse handler.
    pub has: bool,
    /// The model takes `--check-reverse` (its states compare).
    pub checkable: bool,
}

/// A checkpoint time in `[lo, hi]` and strictly inside `(0, end)`, on a grid fitted to `end`:
/// quarters when `end >= 2`, else the decimal step `10^-s` that has at least 8 steps below
/// `end`. The value is the double nearest a short decimal, so its `{}` Display (which names a
/// checkpoint's directory, `t<T>`) is that short decimal. `None` when the grid has no point
/// there.
pub(crate) fn checkpoint_time(d: &mut Draw, end: f64, lo: f64, hi: f64) -> Option<f64> {
    if !(end > 0.0 && end.is_finite()) {
        return None;
    }
    let digits = if end >= 2.0 {
        None
    } else {
        Some((1..=6).find(|&s| end * 10f64.powi(s) >= 8.0)?)
    };
    let step = digits.map_or(0.25, |s| 10f64.powi(-s));
    let at = |k: u64| match digits {
        None => k as f64 * 0.25,
        Some(s) => format!("{k}e-{s}").parse().expect("a number"),
    };
    let first = ((lo / step).ceil() as u64).max(1);
    let mut last = (hi.min(end) / step).floor() as u64;
    while last >= first && at(last) >= end {
        last -= 1;
    }
    (first <= last).then(|| at(d.int(first, last)))
}
