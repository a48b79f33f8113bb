//! Setting up one part of a conservative run: the LP mapping over every worker of the run, the
//! declared links and the lookaheads derived from them, the null-message start-up checks,
//! lock-step's crossing LPs, the global-event queue, every LP's initial state, and the pending
//! sets of this part's workers with their first keys. A part is the whole run on threads
//! (`over/threads.rs`), or one worker process of `--procs` or one MPI rank (`parts.rs`,
//! `run_part`): the same steps, in the same order, for every transport.

use std::ops::Range;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Instant;

use super::balance::Balance;
use super::lookahead::{balance_lookaheads, crossing_lps, worker_lookaheads};
use super::lp_table::LpTable;
use super::{null_message, zero_links, ConservativeConfig, Protocol, Shared};
use crate::error::{Setting, SimError};
use crate::event::{Event, EventKey, Keyed};
use crate::executor::global::GlobalQueue;
use crate::executor::links::Links;
use crate::executor::{init_lps, RunConfig};
use crate::gsu::Published;
use crate::model::Model;
use crate::queue::PendingSet;

/// A part, set up and not yet running.
pub(crate) struct Part<'a, M: Model, Q> {
    /// What every worker of this part shares (its LP table holds every LP of the run).
    pub shared: Shared<'a, M>,
    /// The pending sets of this part's workers, in worker order.
    pub queues: Vec<Q>,
    /// Per worker of this part: the key of its first event (`Published::IDLE.moe`: none).
    pub first: Vec<EventKey>,
    /// The counters `Model::init` moved (this part's share: the whole in part 0, none in the
    /// others, since every part initializes every LP).
    pub init_counters: Vec<i64>,
    /// Seconds spent initializing the LPs.
    pub init_s: f64,
}

/// Sets up the part whose workers are `mine`, out of `workers` workers over the whole run.
/// Load balancing (shared LP sets) is set up only when the part is the whole run: across
/// parts it is refused before the run starts (`procs::check`).
pub(crate) fn set_up<'a, M: Model, Q: PendingSet<Event<M::Event>>>(
    model: &'a M,
    cfg: &'a RunConfig,
    protocol: Protocol,
    cc: &ConservativeConfig,
    workers: usize,
    mine: Range<usize>,
) -> Result<Part<'a, M, Q>, SimError> {
    let owner = cc
        .mapping
        .owners(cfg.lps, workers)
        .map_err(|m| SimError::config(Setting::Mapping, m))?;
    let links = Links::new(model, cfg.lps)?;
    let (mut worker_la, link_la) = worker_lookaheads(&links, &owner, workers);
    let whole = mine.start == 0 && mine.end == workers;
    crate::partition::set_this_part(
        (!whole).then(|| crate::partition::part_bits(cfg.lps, |lp| owner[lp], mine.clone())),
    );
    let balance = (whole && cc.dedicated < 1.0).then(|| {
        let set_of = crate::partition::shared_split(&owner, workers, cc.dedicated, cc.shared_sets);
        let shared_la = balance_lookaheads(&links, &owner, &set_of, &mut worker_la);
        Balance::new(cc.dedicated, &set_of, cc.shared_sets, shared_la)
    });
    if protocol == Protocol::NullMessage {
        zero_links::check_links(&links, &owner, &link_la, workers)?;
        null_message::check_budget(&link_la, workers, cfg.end, cc.max_null_messages)?;
    }
    let crossing = if protocol == Protocol::Lockstep {
        crossing_lps(&links, &owner, workers)
    } else {
        Vec::new()
    };
    let globals = GlobalQueue::for_run(model, cfg)?;
    let first_global = globals.next_time(cfg.end);

    let init_start = Instant::now();
    // Every part initializes every LP (the same states, streams and initial events in each)
    // and keeps the initial events of its own workers; the counters `init` moved are counted
    // once, by the part with worker 0.
    let mut init_counters = vec![0i64; model.counter_names().len()];
    let (slots, initial) = init_lps(model, cfg, &mut init_counters)?;
    if mine.start != 0 {
        init_counters.iter_mut().for_each(|c| *c = 0);
    }
    let mut queues: Vec<Q> = mine.clone().map(|_| Q::new()).collect();
    for ev in initial {
        match &balance {
            Some(b) if b.is_shared(ev.dst) => b.push(ev),
            _ => {
                let o = owner[ev.dst as usize] as usize;
                if mine.contains(&o) {
                    queues[o - mine.start].push(ev);
                }
            }
        }
    }
    let first = queues
        .iter_mut()
        .map(|q| q.peek().map_or(Published::IDLE.moe, |e| e.key()))
        .collect();
    let init_s = init_start.elapsed().as_secs_f64();
    let shared = Shared {
        model,
        cfg,
        lps: LpTable::new(slots),
        owner,
        links,
        workers,
        worker_la,
        link_la,
        crossing,
        globals: Mutex::new(globals),
        error: Mutex::new(None),
        global_next: AtomicU64::new(first_global.to_bits()),
        balance,
        leftover: Mutex::new(Vec::new()),
        global_sent: std::sync::atomic::AtomicBool::new(false),
        global_sends: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
    };
    Ok(Part {
        shared,
        queues,
        first,
        init_counters,
        init_s,
    })
}
