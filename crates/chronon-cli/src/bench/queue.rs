//! `chronon bench queue`: the pending-event sets on adversarial patterns (equal times, Time Warp
//! style rollbacks, time bands nested deeper than the ladder's rungs) and on the plain hold
//! model, ladder against heap, side by side in one run.

use std::time::Instant;

use chronon::queue::{HeapQueue, LadderQueue, PendingSet};
use chronon::{Event, EventKey, LpRng, QueueKind};

use crate::Failure;

/// `chronon bench queue`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct QueueBench {
    /// Patterns: hold, equal, rollback, bands.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "hold,equal,rollback,bands"
    )]
    pub patterns: Vec<String>,
    /// Pending-event sets (the first is the reference of the ratio column).
    #[arg(long, value_delimiter = ',', default_value = "heap,ladder")]
    pub queues: Vec<String>,
    /// Events pending during the hold steps.
    #[arg(long, default_value_t = 100_000)]
    pub pending: usize,
    /// Hold steps (pop one, push one) after the initial pushes.
    #[arg(long, default_value_t = 1_000_000)]
    pub steps: usize,
    /// Repetitions of each measurement, interleaved (the fastest is kept).
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
}

/// What a pattern does; see `PATTERNS`.
#[derive(Clone, Copy)]
enum Pattern {
    Hold,
    Equal,
    Rollback,
    Bands,
}

const PATTERNS: [(&str, Pattern, &str); 4] = [
    (
        "hold",
        Pattern::Hold,
        "exponential increments (the common case)",
    ),
    ("equal", Pattern::Equal, "every time equal, zero increments"),
    (
        "rollback",
        Pattern::Rollback,
        "half zero increments; every 50 steps the last 64 popped events come back",
    ),
    (
        "bands",
        Pattern::Bands,
        "times 2^-k for k in 0..=1074: more nested bands than rungs",
    ),
];

/// `2^-k` exactly, for `k` in `0..=1074`.
fn pow2_neg(k: u64) -> f64 {
    if k <= 1022 {
        f64::from_bits((1023 - k) << 52)
    } else {
        f64::from_bits(1 << (1074 - k))
    }
}

/// The outcome of one measurement.
struct Measured {
    ops: u64,
    secs: f64,
    /// A digest of the popped sequence (both queues must agree).
    digest: u64,
}

fn measure<Q: PendingSet<Event<()>>>(p: Pattern, pending: usize, steps: usize) -> Measured {
    let mut rng = LpRng::from_seed(7);
    let mut q = Q::new();
    let mut seq = 0u64;
    let mut key = |time: f64| {
        seq += 1;
        EventKey {
            time,
            src: (seq % 1024) as u32,
            seq,
        }
    };
    let mut ops = 0u64;
    let mut digest = 0u64;
    let mut popped: Vec<Event<()>> = Vec::new();
    let t0 = Instant::now();
    for i in 0..pending {
        let time = match p {
            Pattern::Hold => rng.exponential_mean(1.0),
            Pattern::Equal => 1.0,
            Pattern::Rollback => (i % 100) as f64 * 0.01,
            Pattern::Bands => pow2_neg(i as u64 % 1075),
        };
        q.push(Event::new(key(time), 0, ()));
        ops += 1;
    }
    for step in 0..steps {
        let e = q.pop().expect("a pending event");
        digest = digest.rotate_left(5) ^ e.seq;
        let time = match p {
            Pattern::Hold => e.time + rng.exponential_mean(1.0),
            Pattern::Equal => e.time,
            Pattern::Rollback if rng.bernoulli(0.5) => e.time,
            Pattern::Rollback => e.time + rng.exponential_mean(0.01),
            Pattern::Bands => e.time + pow2_neg(rng.below(1075)),
        };
        q.push(Event::new(key(time), 0, ()));
        ops += 2;
        if let Pattern::Rollback = p {
            popped.push(e);
            if step % 50 == 49 {
                for e in popped.drain(popped.len().saturating_sub(64)..) {
                    q.push(e);
                    ops += 1;
                }
            }
        }
    }
    while let Some(e) = q.pop() {
        digest = digest.rotate_left(5) ^ e.seq;
        ops += 1;
    }
    Measured {
        ops,
        secs: t0.elapsed().as_secs_f64(),
        digest,
    }
}

pub(crate) fn run(b: QueueBench) -> Result<u8, Failure> {
    if b.pending == 0 || b.reps == 0 {
        return Err(Failure::bad_input(
            "--pending and --reps must be at least 1",
        ));
    }
    let queues = b
        .queues
        .iter()
        .map(|q| q.parse::<QueueKind>().map_err(Failure::bad_input))
        .collect::<Result<Vec<_>, _>>()?;
    let patterns = b
        .patterns
        .iter()
        .map(|name| {
            PATTERNS.iter().find(|p| p.0 == name).ok_or_else(|| {
                Failure::bad_input(format!(
                    "unknown pattern '{name}' (allowed: hold, equal, rollback, bands)"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    println!(
        "{} pending events, {} hold steps, fastest of {} interleaved repetitions",
        b.pending, b.steps, b.reps
    );
    for (name, _, what) in &patterns {
        println!("  {name}: {what}");
    }
    println!();
    println!(
        "| pattern | queue | operations | wall s | ns/op | time x {} |",
        queues[0].name()
    );
    println!("|---|---|---:|---:|---:|---:|");
    for &&(name, p, _) in &patterns {
        let mut best: Vec<Option<Measured>> = queues.iter().map(|_| None).collect();
        for _ in 0..b.reps {
            for (slot, &kind) in best.iter_mut().zip(&queues) {
                let m = match kind {
                    QueueKind::Heap => measure::<HeapQueue<Event<()>>>(p, b.pending, b.steps),
                    QueueKind::Ladder => measure::<LadderQueue<Event<()>>>(p, b.pending, b.steps),
                };
                if slot.as_ref().is_none_or(|s| m.secs < s.secs) {
                    *slot = Some(m);
                }
            }
        }
        let best: Vec<Measured> = best.into_iter().flatten().collect();
        if best.iter().any(|m| m.digest != best[0].digest) {
            return Err(Failure::runtime(format!(
                "pattern {name}: the queues popped different sequences"
            )));
        }
        for (m, kind) in best.iter().zip(&queues) {
            println!(
                "| {name} | {} | {} | {:.3} | {:.1} | {:.2} |",
                kind.name(),
                m.ops,
                m.secs,
                m.secs * 1e9 / m.ops as f64,
                m.secs / best[0].secs
            );
        }
    }
    Ok(0)
}
