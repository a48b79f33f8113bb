//! `chronon check`'s random configurations of the shipped models: small ones that run in well
//! under a second, `--end` included.

use crate::registry::{Draw, Flags};

/// A random small configuration of `random`.
pub(super) fn random(draw: &mut Draw, flags: &mut Flags) {
    let lps = draw.int(2, 40);
    flags
        .set("lps", lps)
        .set("degree", draw.int(0, 5))
        .set("lookahead", draw.pick(&["0.25", "0.5", "1"]))
        .set("quantum", draw.pick(&["0.25", "0.5"]))
        .set("idle-lps", draw.int(0, lps))
        .set("start-at", draw.pick(&["0", "1", "5"]))
        .set("hot-lps", draw.int(0, lps.min(4)))
        .set("hot-work", draw.int(0, 300))
        .set("topology-seed", draw.int(0, 1 << 20));
    if draw.chance(0.4) {
        flags.set("zero-links", draw.pick(&["0.2", "0.5", "1"]));
        flags.set("zero-acyclic", draw.chance(0.8));
    }
    if draw.chance(0.4) {
        flags.set("zero-self", draw.pick(&["0.1", "0.3", "0.5"]));
    }
    if draw.chance(0.4) {
        flags.set("global-period", draw.pick(&["1", "2.5", "7"]));
        // Global events that change states and send LP events, half the time.
        flags.set("global-writes", draw.chance(0.5));
    }
    flags.set("end", draw.int(5, 40));
}

/// A random small configuration of `phold`.
pub(super) fn phold(draw: &mut Draw, flags: &mut Flags) {
    let la = draw.pick(&["0", "0.1", "0.5", "1"]);
    let lav: f64 = la.parse().expect("a number");
    let lps = draw.int(1, 96);
    flags
        .set("lps", lps)
        .set("start-events", draw.int(1, 4))
        .set("remote", draw.pick(&["0", "0.1", "0.5", "1"]))
        .set("lookahead", la)
        .set("mean", lav + draw.grid(0.25, 2.0, 0.25))
        .set("topology", draw.pick(&["mesh", "mesh", "mesh2d"]))
        .set("state-bytes", draw.pick(&["0", "0", "64"]));
    if draw.chance(0.3) {
        // At most every LP (more is bad input, refused by every executor).
        flags.set("hot-lps", draw.int(0, lps.min(2)));
        if draw.chance(0.5) {
            flags.set("hot-move", draw.pick(&["0.5", "2"]));
        }
    }
    flags.set("end", draw.int(5, 40));
}

/// A random small configuration of `phold-phases`.
pub(super) fn phold_phases(draw: &mut Draw, flags: &mut Flags) {
    let phase = draw.int(2, 5);
    flags
        .set("width", draw.int(2, 7))
        .set("height", draw.int(1, 6))
        .set("wrap", draw.chance(0.5))
        .set("jobs-per-object", draw.int(1, 3))
        .set("lookahead", draw.pick(&["0", "0.1", "0.5"]))
        .set("mean", draw.pick(&["0.5", "1", "1.5"]))
        .set("phase-length", phase)
        .set("work-a-us", 0)
        .set("work-b-us", 0)
        .set("work-c-us", 0)
        .set("end", 3 * phase);
}

/// A random small configuration of `simplesim`. One in five has 7000-byte payloads in a
/// shared heap of a drawn size (`--heap-segments`) a few times what Time Warp needs (it keeps
/// freed items until GVT passes them, and holds its speculation back past half a class).
pub(super) fn simplesim(draw: &mut Draw, flags: &mut Flags) {
    let dmin = draw.grid(0.0, 1.0, 0.25);
    let (lps, bound) = (draw.int(1, 12), draw.int(1, 40));
    let big = draw.chance(0.2);
    flags
        .set("lps", lps)
        .set("queue-bound", bound)
        .set("lookahead", draw.pick(&["0.5", "1", "2"]))
        .set("delay-min", dmin)
        // With a near-full heap, delays that vary: equal arrival times let an LP count a
        // message as arrived before it is handled, and its queue bound then bounds nothing.
        .set(
            "delay-max",
            dmin + draw.grid(if big { 0.5 } else { 0.0 }, 2.0, 0.5),
        )
        .set(
            "payload-bytes",
            if big {
                "7000"
            } else {
                draw.pick(&["0", "8", "64", "300"])
            },
        )
        .set("start-window", draw.pick(&["0.5", "1", "5"]))
        .set("warmup", draw.pick(&["0", "5"]))
        .set("touch", draw.pick(&["none", "read", "write"]))
        .set("end", draw.int(10, 60));
    if big {
        // Eight 8 KiB items per message an LP may have in flight (32 in a heap's first
        // segment, twice as many in each next one), rounded up to segments, and at least 3
        // segments (224 items). The sequential run needs about one per message; Time Warp
        // several times that (a freed item waits until GVT passes the time it was freed at,
        // a speculative one included, and receivers in other processes hold a sender's items
        // until they commit).
        let need = 8 * lps * (bound + 1);
        let segments = (3..=16u64)
            .find(|&k| 32 * ((1u64 << k) - 1) >= need)
            .unwrap_or(16);
        flags.set("heap-segments", segments);
    }
}

/// A random small configuration of `manufacturing`.
pub(super) fn manufacturing(draw: &mut Draw, flags: &mut Flags) {
    let assembly = draw.int(0, 2);
    flags
        .set("lines", draw.int(1, 3))
        .set("stations-per-line", draw.int(1, 3))
        .set("assembly-stations", assembly)
        .set("testing-stations", draw.int(u64::from(assembly > 0), 3))
        .set("interarrival", draw.pick(&["2", "5", "10"]))
        .set("rework", draw.pick(&["0", "0.1", "0.3"]))
        .set("transfer", draw.pick(&["0.5", "0.5", "1", "0"]))
        .set("warmup", draw.pick(&["0", "20"]))
        .set("work-us", draw.pick(&["0", "0", "0", "2"]))
        .set("end", draw.int(50, 300));
}

/// A random small configuration of `pcs`.
pub(super) fn pcs(draw: &mut Draw, flags: &mut Flags) {
    flags
        .set("width", draw.int(2, 5))
        .set("height", draw.int(1, 4))
        .set("channels", draw.int(1, 12))
        .set("call-interarrival", draw.pick(&["0.05", "0.2", "1"]))
        .set("call-duration", draw.pick(&["0.5", "2"]))
        .set("residence", draw.pick(&["0", "0.5", "2", "5"]))
        .set("handoff-delay", draw.pick(&["0.01", "0.05", "0.1"]))
        .set("fading-work", draw.int(0, 2))
        .set("fading-period", draw.pick(&["0", "0", "0.5", "1.5"]))
        .set("warmup", draw.pick(&["0", "1"]))
        .set("sample-period", draw.pick(&["0", "0", "0.7", "2"]))
        .set("end", draw.int(2, 8));
}

/// A random small configuration of `datastore`.
pub(super) fn datastore(draw: &mut Draw, flags: &mut Flags) {
    let nodes = draw.int(2, 16);
    flags
        .set("nodes", nodes)
        .set("partitions-per-node", draw.int(1, 3))
        .set("keys-per-partition", draw.int(2, 40))
        .set("batching-factor", draw.int(1, 8))
        .set("ops-per-tx", draw.int(1, 6))
        .set("remote", draw.pick(&["0", "0.2", "0.5", "1"]))
        .set("batch-interarrival", draw.pick(&["0.5", "1", "2"]))
        .set("hold", draw.pick(&["0", "0.2", "0.5"]))
        .set("net-delay", draw.pick(&["0.01", "0.05", "0.2"]))
        .set("work-us", draw.pick(&["0", "0", "0", "1"]))
        .set("alloc", draw.pick(&["round-robin", "upfront"]))
        .set("end", draw.int(2, 8));
}

/// A random small configuration of `star-clique`.
pub(super) fn star_clique(draw: &mut Draw, flags: &mut Flags) {
    flags
        .set("stars", draw.int(2, 4))
        .set("leaf-bandwidth", draw.pick(&["1000000", "10000000"]))
        .set("leaf-delay", draw.pick(&["0.0001", "0.001"]))
        .set("hub-bandwidth", draw.pick(&["10000000", "100000000"]))
        .set("hub-delay", draw.pick(&["0.001", "0.01"]))
        .set("queue-packets", draw.int(1, 50))
        .set("packet-bytes", draw.pick(&["256", "1024"]))
        .set("load", draw.pick(&["0.1", "0.5", "0.9"]))
        .set("on-mean", draw.pick(&["0.05", "0.1", "0.5"]))
        .set("off-mean", draw.pick(&["0", "0.1", "0.5"]))
        .set("start-window", draw.pick(&["0.05", "0.5"]))
        .set("refcount", draw.pick(REFCOUNTS))
        .set("end", draw.grid(0.1, 0.4, 0.05));
}

/// Every `--refcount` of the network models: the history must not depend on it.
const REFCOUNTS: &[&str] = &[
    "heap",
    "locked",
    "lock-add",
    "xadd",
    "cas",
    "per-thread",
    "buffered",
    "buffered-thread",
];

/// A random small configuration of `campus`.
pub(super) fn campus(draw: &mut Draw, flags: &mut Flags) {
    flags
        .set("campuses", draw.int(1, 3))
        .set("servers", draw.int(1, 3))
        .set("lans-per-net", draw.int(1, 2))
        .set("clients-per-lan", draw.int(1, 4))
        .set("queue-packets", draw.int(1, 50))
        .set("load", draw.pick(&["0.01", "0.1", "0.5"]))
        .set("on-mean", draw.pick(&["0.05", "0.5"]))
        .set("off-mean", draw.pick(&["0", "0.5"]))
        .set("start-window", draw.pick(&["0.05", "0.5"]))
        .set("sample-period", draw.pick(&["0", "0", "0.03", "0.1"]))
        .set("data", draw.pick(&["false", "true", "true"]))
        .set("refcount", draw.pick(REFCOUNTS))
        .set("end", draw.grid(0.1, 0.4, 0.05));
}
