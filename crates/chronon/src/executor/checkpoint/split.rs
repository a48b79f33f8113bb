//! Writing a run's LPs and pending events as several parts at once: the LPs in contiguous
//! ranges, each range with the events addressed to it, one thread per part (encoding a
//! million LPs and ten million events is CPU work that one thread does at a few hundred MB/s).

use crate::event::Event;
use crate::executor::global::GlobalQueue;
use crate::executor::{LpSlot, RunConfig};
use crate::model::{LpId, Model};

/// One part's LPs (with their ids) and events.
type Group<S, E> = (Vec<(LpId, LpSlot<S>)>, Vec<Event<E>>);

/// Parts a process writes at most.
const MAX_PARTS: usize = 8;

/// Writes parts `first..` of the checkpoint `cfg` ends at (nothing if it saves none): `lps`
/// (every LP of the run, in id order) and `events` (theirs) split into as
/// many parts as there are cores (at most 8 and `threads`, at least 1, no more than one per
/// 4096 LPs); the first part also carries `counters` and the global events. With `threads` 1
/// the one part is written on the calling thread (the sequential executor calls every model
/// method, serialization included, on the thread that runs it). Returns the number of parts.
pub(crate) fn write_split<M: Model>(
    cfg: &RunConfig,
    (first, threads): (usize, usize),
    lps: Vec<LpSlot<M::State>>,
    events: Vec<Event<M::Event>>,
    counters: &[i64],
    globals: Option<&GlobalQueue>,
) -> usize {
    if !cfg.saving() {
        return 0;
    }
    if let Some(kept) = cfg.ckpt.as_ref().and_then(|c| c.kept.as_ref()) {
        super::memory::keep::<M>(kept, lps, events, counters, globals);
        return 1;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n = cores
        .min(MAX_PARTS)
        .min(threads)
        .min(lps.len().div_ceil(4096))
        .max(1);
    // Part k holds the LPs lps[bounds[k]..bounds[k+1]].
    let per = lps.len().div_ceil(n).max(1);
    let mut groups: Vec<Group<M::State, M::Event>> = Vec::new();
    let mut lps = lps
        .into_iter()
        .enumerate()
        .map(|(i, s)| (i as LpId, s))
        .peekable();
    while lps.peek().is_some() {
        groups.push((lps.by_ref().take(per).collect(), Vec::new()));
    }
    if groups.is_empty() {
        groups.push((Vec::new(), Vec::new()));
    }
    let last_of: Vec<LpId> = groups
        .iter()
        .map(|g| g.0.last().map_or(LpId::MAX, |l| l.0))
        .collect();
    for e in events {
        let k = last_of
            .partition_point(|&last| last < e.dst)
            .min(groups.len() - 1);
        groups[k].1.push(e);
    }
    let saved = globals.map(GlobalQueue::saved);
    let parts = groups.len();
    let write_one = |k: usize, (lps, events): Group<M::State, M::Event>| {
        let zero = vec![0; counters.len()];
        let c = if k == 0 { counters } else { &zero[..] };
        let Some(mut part) = cfg.part_writer::<M>(first + k, c) else {
            return;
        };
        if let (0, Some(g)) = (k, &saved) {
            part.globals(g);
        }
        for (id, slot) in &lps {
            part.lp(*id, slot);
        }
        for e in &events {
            part.event(e);
        }
        cfg.part_done(part.finish());
        // What the part held goes with the thread that wrote it (shared-heap payloads too).
        drop((lps, events));
    };
    let write = |k: usize, group: Group<M::State, M::Event>| {
        // A model's serializer that panics fails the part, not the process.
        let wrote = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write_one(k, group)));
        if let Err(p) = wrote {
            let message = crate::error::panic_message(p.as_ref());
            cfg.part_done(Err(format!("writing part {k} panicked: {message}")));
        }
    };
    if parts == 1 {
        let group = groups.pop().expect("one group");
        write(0, group);
        return 1;
    }
    std::thread::scope(|s| {
        for (k, group) in groups.into_iter().enumerate() {
            let write = &write;
            s.spawn(move || write(k, group));
        }
    });
    parts
}
