//! Cuts kept in memory: where a chain runs in one process (threads, no worker processes or
//! ranks) and keeps a cut only to start its next link from it (LPs that move, `balance.rs`),
//! the link hands its LPs and pending events over as values instead of writing part files,
//! and the next link takes them back: no encoding, checksum, file or decoding. What the next
//! link gets is what it would read back from the files (every LP in LP order, with its
//! pending events before it in the order the files would hold them, the counter sums and the
//! global events), so the history is the one the file path commits, which is `seq`'s.

use std::any::Any;
use std::sync::Mutex;

use super::{Loaded, Manifest};
use crate::error::{Setting, SimError};
use crate::event::Event;
use crate::executor::global::{GlobalQueue, SavedGlobals};
use crate::executor::LpSlot;
use crate::model::{LpId, Model};

/// Where a link on threads leaves its cut for the chain.
pub(crate) type KeptCut = Mutex<Option<Held>>;

/// A cut held in memory: the model's LPs and events (a [`Values`] of the model's types), and
/// what does not depend on them.
pub(crate) struct Held {
    values: Box<dyn Any + Send>,
    counters: Vec<i64>,
    globals: Option<SavedGlobals>,
}

/// Every LP of a run, in LP order, and the events pending for them.
struct Values<S, E> {
    lps: Vec<LpSlot<S>>,
    events: Vec<Event<E>>,
}

/// Leaves a link's cut in `kept` ([`write_split`](super::write_split)'s arguments).
pub(crate) fn keep<M: Model>(
    kept: &KeptCut,
    lps: Vec<LpSlot<M::State>>,
    events: Vec<Event<M::Event>>,
    counters: &[i64],
    globals: Option<&GlobalQueue>,
) {
    let held = Held {
        values: Box::new(Values { lps, events }),
        counters: counters.to_vec(),
        globals: globals.map(GlobalQueue::saved),
    };
    *kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(held);
}

impl Loaded {
    /// The cut a link left in `kept`, described by `manifest`; an error if the link left none
    /// (an executor that saves no cuts).
    pub(crate) fn from_memory(kept: &KeptCut, manifest: Manifest) -> Result<Loaded, SimError> {
        let cut = manifest.cut;
        let held = kept.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(held) = held else {
            return Err(SimError::config(
                Setting::Run,
                format!("the run to the cut at {cut} left no cut to continue from"),
            ));
        };
        Ok(Loaded::held(
            manifest,
            held.counters,
            held.globals,
            held.values,
        ))
    }
}

/// Builds every LP from a cut held in memory, in LP order: each LP's pending events to
/// `emit` first, then the LP (its cost cleared: a run measures its own) to `keep`.
pub(super) fn restore<M: Model>(
    values: Box<dyn Any + Send>,
    mut emit: impl FnMut(Event<M::Event>),
    mut keep: impl FnMut(LpId, LpSlot<M::State>),
) -> Result<(), SimError> {
    let Ok(values) = values.downcast::<Values<M::State, M::Event>>() else {
        return Err(SimError::config(
            Setting::Restore,
            "a cut held in memory is of another model",
        ));
    };
    let Values { lps, events } = *values;
    // Each LP's events in the order the files would list them (the order of `events`): a
    // counting sort by destination, stable and linear.
    let mut first = vec![0usize; lps.len() + 1];
    for e in &events {
        let Some(n) = first.get_mut(e.dst as usize + 1) else {
            return Err(SimError::config(
                Setting::Restore,
                format!(
                    "a cut held in memory has an event to LP {}, which does not exist",
                    e.dst
                ),
            ));
        };
        *n += 1;
    }
    for i in 1..first.len() {
        first[i] += first[i - 1];
    }
    let mut next = first.clone();
    let mut by_lp: Vec<Option<Event<M::Event>>> =
        std::iter::repeat_with(|| None).take(events.len()).collect();
    for e in events {
        let at = &mut next[e.dst as usize];
        by_lp[*at] = Some(e);
        *at += 1;
    }
    let mut by_lp = by_lp.into_iter().flatten();
    for (lp, mut slot) in lps.into_iter().enumerate() {
        for mut e in by_lp.by_ref().take(first[lp + 1] - first[lp]) {
            e.tag = 0;
            emit(e);
        }
        slot.cost = Default::default();
        keep(lp as LpId, slot);
    }
    Ok(())
}
