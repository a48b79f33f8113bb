//! A partitioned in-memory key/value data store (seed 003, §3.3).
//!
//! `nodes` nodes (default 64) are one LP each and hold `partitions_per_node` partitions of
//! `keys_per_partition` keys. Every node receives batches of `batching_factor` transactions as a
//! Poisson stream (mean gap `batch_interarrival`; the node generates them itself, one window
//! ahead). A transaction makes `ops_per_tx` accesses; each goes to a uniformly chosen key of the
//! node itself or, with probability `remote`, of a uniformly chosen other node.
//!
//! The operations of a batch are served round-robin — first operation of every transaction,
//! then the second of every transaction, … — like a multi-threaded server sharing its CPUs.
//! A local access is decided on the spot; the remote accesses of the batch are gathered per
//! destination node and sent as one event carrying that request set, arriving `net_delay` (the
//! lookahead) later; the remote node serves them in the same round-robin order and sends the
//! outcomes back in one reply. A transaction commits when all its accesses succeeded and
//! aborts as soon as its last outcome is in and one failed.
//!
//! **Conflicts.** An access takes a lease on its key for `hold` time units. An access to a key
//! leased by another transaction fails; it takes no lease. With `hold = 0` no access ever fails.
//! With one access per transaction and one transaction per batch the accesses to a key form a
//! Poisson stream served by a one-server loss system, so the fraction of failed accesses is
//! Erlang B with one server, `r·hold / (1 + r·hold)` for the per-key access rate `r`, whatever
//! the hold time's distribution (the tests check it).
//!
//! Statistics (transactions decided at or after `warmup`): `committed`, `aborted`,
//! `abort_rate`, `throughput` (commits per time unit), `mean_latency`; and over the whole run
//! `tx_started`, `tx_decided`, `tx_in_flight` (a counter) and `tx_pending_in_batches` (counted
//! from the nodes' pending batches at the end), `accesses`,
//! `access_conflicts`. `work_us` spins that many microseconds per transaction in a batch event
//! and per remote request served (the seed's events cost about 300–500 µs for batches of 10–20).

use std::collections::{BTreeMap, HashMap};

use chronon::shm::{BPtr, ShmSafe, Slice};
use chronon::{Ctx, LpId, Model, ModelStats, SizeHint};

use crate::phold::spin_for_us_in;

/// The data store's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DataStore {
    /// Nodes (one LP each).
    pub nodes: u32,
    /// Partitions each node holds.
    pub partitions_per_node: u32,
    /// Keys per partition.
    pub keys_per_partition: u32,
    /// Transactions per batch.
    pub batching_factor: u32,
    /// Accesses per transaction.
    pub ops_per_tx: u32,
    /// Probability that an access goes to another node.
    pub remote: f64,
    /// Mean time between batches at a node (Poisson).
    pub batch_interarrival: f64,
    /// How long an access leases its key.
    pub hold: f64,
    /// One-way network delay between nodes: the lookahead.
    pub net_delay: f64,
    /// Busy work per transaction and per remote request, microseconds.
    pub work_us: f64,
    /// Statistics count transactions decided at or after this time.
    pub warmup: f64,
    /// When a batch allocates the meta-data of its transactional requests (seed 003 §3.3).
    pub alloc: Alloc,
}

/// When a batch event allocates the meta-data of its transactional requests (one heap record
/// per access). Both give the same history; they differ in how allocation interleaves with the
/// event's work (seed 003 §3.3, Fig. 8). The seed's platform intercepts the model's memory
/// allocations, so each one is a switch to platform mode and back; here each record's
/// allocation is followed by [`Ctx::preemption_point`] (a platform-mode return), so under
/// `--preempt` the two patterns place those returns differently: spread between the slices of
/// work (`RoundRobin`) or clustered at the start of the event (`Upfront`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", try_from = "String")]
pub enum Alloc {
    /// The seed's original model: each access's record is allocated when the round-robin
    /// service reaches it, between slices of the per-transaction work.
    #[default]
    RoundRobin,
    /// The seed's "varied" configuration: every record of the batch is allocated at the start
    /// of the batch event, then the accesses are served.
    Upfront,
}

impl std::str::FromStr for Alloc {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "round-robin" => Ok(Alloc::RoundRobin),
            "upfront" => Ok(Alloc::Upfront),
            _ => Err(format!(
                "unknown alloc '{s}' (allowed: round-robin, upfront)"
            )),
        }
    }
}

impl TryFrom<String> for Alloc {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// The meta-data of one transactional request, allocated on the heap per access.
#[derive(Debug, Default)]
struct RequestMeta {
    tx: u16,
    op: u32,
    key: u64,
    remote: Option<LpId>,
}

impl Default for DataStore {
    /// 64 nodes, batching factor 10 (the seed's light configuration).
    fn default() -> Self {
        DataStore {
            nodes: 64,
            partitions_per_node: 8,
            keys_per_partition: 1000,
            batching_factor: 10,
            ops_per_tx: 4,
            remote: 0.2,
            batch_interarrival: 1.0,
            hold: 0.5,
            net_delay: 0.05,
            work_us: 30.0,
            warmup: 0.0,
            alloc: Alloc::RoundRobin,
        }
    }
}

impl DataStore {
    /// The number of LPs: one per node.
    pub fn lps(&self) -> u32 {
        self.nodes
    }

    /// Checks the parameters; the error names the parameter and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        use crate::check::*;
        at_least("nodes", u64::from(self.nodes), 1)?;
        at_least(
            "partitions-per-node",
            u64::from(self.partitions_per_node),
            1,
        )?;
        at_least("keys-per-partition", u64::from(self.keys_per_partition), 1)?;
        at_least("batching-factor", u64::from(self.batching_factor), 1)?;
        if self.batching_factor > u32::from(u16::MAX) {
            return Err(format!(
                "batching-factor is {}; it must be at most 65535",
                self.batching_factor
            ));
        }
        at_least("ops-per-tx", u64::from(self.ops_per_tx), 1)?;
        probability("remote", self.remote)?;
        if self.remote > 0.0 && self.nodes < 2 {
            return Err("remote is > 0 but nodes is 1; remote accesses need 2 nodes".into());
        }
        positive("batch-interarrival", self.batch_interarrival)?;
        nonneg("hold", self.hold)?;
        positive("net-delay", self.net_delay)?;
        nonneg("work-us", self.work_us)?;
        nonneg("warmup", self.warmup)
    }

    /// Keys each node holds.
    pub fn keys_per_node(&self) -> u64 {
        u64::from(self.partitions_per_node) * u64::from(self.keys_per_partition)
    }

    /// The offered load: transactions per time unit over all nodes.
    pub fn offered_load(&self) -> f64 {
        f64::from(self.nodes) * f64::from(self.batching_factor) / self.batch_interarrival
    }

    /// The access rate per key (every node gets the same share, spread evenly over its keys).
    pub fn access_rate_per_key(&self) -> f64 {
        f64::from(self.batching_factor) * f64::from(self.ops_per_tx)
            / self.batch_interarrival
            / self.keys_per_node() as f64
    }

    fn window(&self) -> f64 {
        self.net_delay.max(10.0 * self.batch_interarrival)
    }

    fn generate(&self, node: &mut Node, until: f64, ctx: &mut Ctx<'_, Self>) {
        let me = ctx.me();
        while node.next_batch < until {
            ctx.send(me, node.next_batch - ctx.now(), StoreEvent::Batch);
            node.next_batch += ctx.rng().exponential_mean(self.batch_interarrival);
        }
    }

    /// Tries access `key` for transaction `owner` at `now`; returns whether it succeeded.
    fn access(&self, node: &mut Node, owner: u64, key: u64, now: f64) -> bool {
        node.accesses += 1;
        match node.leases.get(&key) {
            Some(&(o, until)) if o != owner && until > now => {
                node.conflicts += 1;
                false
            }
            _ => {
                node.leases.insert(key, (owner, now + self.hold));
                true
            }
        }
    }

    fn decide(&self, node: &mut Node, failed: bool, started: f64, now: f64) {
        node.in_flight = node.in_flight.saturating_sub(1);
        node.decided += 1;
        if now >= self.warmup {
            if failed {
                node.aborted += 1;
            } else {
                node.committed += 1;
            }
            node.latency_sum += now - started;
        }
    }
}

/// One transaction of a pending batch.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct TxStatus {
    failed: bool,
    waiting: u32,
}

/// A batch with remote accesses still out.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct PendingBatch {
    started: f64,
    txs: Vec<TxStatus>,
}

/// One node.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Node {
    next_batch: f64,
    batches: u64,
    /// Key → (owning transaction, lease end). Written in key order, so that a node's saved
    /// state is the same bytes whatever the map's hasher (no handler depends on its order:
    /// `retain` drops the same leases in any order).
    #[serde(serialize_with = "sorted")]
    leases: HashMap<u64, (u64, f64)>,
    pending: BTreeMap<u64, PendingBatch>,
    /// Transactions started.
    pub started: u64,
    /// Transactions started and not yet decided.
    pub in_flight: u64,
    /// Transactions decided (committed or aborted), warm-up included.
    pub decided: u64,
    /// Committed after the warm-up.
    pub committed: u64,
    /// Aborted after the warm-up.
    pub aborted: u64,
    latency_sum: f64,
    /// Replies that matched no outstanding access (always 0 in a sequential run).
    pub stray_replies: u64,
    /// Accesses served here.
    pub accesses: u64,
    /// Of those, failed on a lease.
    pub conflicts: u64,
    /// Request meta-data records allocated (one per access of every batch).
    pub metas_allocated: u64,
    last: f64,
}

/// What nodes receive.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum StoreEvent {
    /// Generate the next window of batches.
    Tick,
    /// A batch of transactions arrives.
    Batch,
    /// A request set from `origin`'s batch `batch`: (transaction index, key) in service order.
    Access {
        /// The node running the transactions.
        origin: LpId,
        /// The batch's number at its origin.
        batch: u64,
        /// The requests (in a shared-heap item, so the event may cross processes).
        requests: BPtr<Slice<(u16, u64)>>,
    },
    /// The outcomes of a request set: (transaction index, success), in the same order.
    Reply {
        /// The batch's number at this node.
        batch: u64,
        /// The outcomes (in a shared-heap item).
        results: BPtr<Slice<(u16, bool)>>,
    },
}

// Safety: `Tick` and `Batch` are unit variants; `Access` and `Reply` hold plain data and
// `BPtr`s (visited by `fixup_copy`): no pointer into one process's memory.
unsafe impl ShmSafe for StoreEvent {
    unsafe fn fixup_copy(&mut self) {
        match self {
            StoreEvent::Tick | StoreEvent::Batch => {}
            // Safety: forwarded from the caller.
            StoreEvent::Access { requests, .. } => unsafe { requests.fixup_copy() },
            // Safety: forwarded from the caller.
            StoreEvent::Reply { results, .. } => unsafe { results.fixup_copy() },
        }
    }
}

/// Writes `leases` in key order.
fn sorted<S: serde::Serializer>(
    leases: &HashMap<u64, (u64, f64)>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(leases.iter().collect::<BTreeMap<_, _>>())
}

fn owner(origin: LpId, batch: u64, tx: u16) -> u64 {
    (u64::from(origin) << 48) | ((batch & 0xFFFF_FFFF) << 16) | u64::from(tx)
}

impl Model for DataStore {
    fn lp_count(&self) -> Option<chronon::LpId> {
        Some(self.lps())
    }

    type State = Node;
    type Event = StoreEvent;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Node {
        let mut node = Node {
            next_batch: ctx.rng().exponential_mean(self.batch_interarrival),
            ..Node::default()
        };
        self.generate(&mut node, 2.0 * self.window(), ctx);
        let me = ctx.me();
        ctx.send(me, self.window(), StoreEvent::Tick);
        node
    }

    fn on_event(&self, node: &mut Node, ev: &StoreEvent, ctx: &mut Ctx<'_, Self>) {
        let now = ctx.now();
        let me = ctx.me();
        node.last = now;
        match ev {
            StoreEvent::Tick => {
                self.generate(node, now + 2.0 * self.window(), ctx);
                ctx.send(me, self.window(), StoreEvent::Tick);
                node.leases.retain(|_, &mut (_, until)| until > now);
            }
            StoreEvent::Batch => {
                let batch = node.batches;
                node.batches += 1;
                let b = self.batching_factor as usize;
                node.started += b as u64;
                node.in_flight += b as u64;
                let mut txs = vec![TxStatus::default(); b];
                let mut remote: BTreeMap<LpId, Vec<(u16, u64)>> = BTreeMap::new();
                let ops = b * self.ops_per_tx as usize;
                // The per-transaction work, sliced over the transaction's operations.
                let slice_us = self.work_us / f64::from(self.ops_per_tx);
                let mut metas: Vec<Box<RequestMeta>> = Vec::with_capacity(ops);
                if self.alloc == Alloc::Upfront {
                    for _ in 0..ops {
                        metas.push(Box::default());
                        ctx.preemption_point();
                    }
                }
                // Round-robin: operation r of every transaction, then operation r + 1.
                for round in 0..self.ops_per_tx {
                    for (i, tx) in txs.iter_mut().enumerate() {
                        let k = round as usize * b + i;
                        if self.alloc == Alloc::RoundRobin {
                            metas.push(Box::default());
                            ctx.preemption_point();
                        }
                        let meta = &mut metas[k];
                        meta.tx = i as u16;
                        meta.op = round;
                        meta.key = ctx.rng().below(self.keys_per_node());
                        if self.remote > 0.0 && ctx.rng().bernoulli(self.remote) {
                            let other = ctx.rng().below(u64::from(self.nodes) - 1) as LpId;
                            let dst = if other >= me { other + 1 } else { other };
                            meta.remote = Some(dst);
                            remote.entry(dst).or_default().push((meta.tx, meta.key));
                            tx.waiting += 1;
                        } else if !self.access(node, owner(me, batch, meta.tx), meta.key, now) {
                            tx.failed = true;
                        }
                        spin_for_us_in(slice_us, ctx);
                    }
                }
                node.metas_allocated += metas.len() as u64;
                // The records are the model's working memory: keep the optimizer from eliding
                // their allocation.
                drop(std::hint::black_box(metas));
                for (dst, requests) in remote {
                    let requests = ctx.alloc_slice(&requests);
                    ctx.send(
                        dst,
                        self.net_delay,
                        StoreEvent::Access {
                            origin: me,
                            batch,
                            requests,
                        },
                    );
                }
                for tx in &txs {
                    if tx.waiting == 0 {
                        self.decide(node, tx.failed, now, now);
                    }
                }
                if txs.iter().any(|t| t.waiting > 0) {
                    node.pending
                        .insert(batch, PendingBatch { started: now, txs });
                }
            }
            StoreEvent::Access {
                origin,
                batch,
                requests,
            } => {
                let results: Vec<(u16, bool)> = requests
                    .as_slice()
                    .iter()
                    .map(|&(tx, key)| (tx, self.access(node, owner(*origin, *batch, tx), key, now)))
                    .collect();
                spin_for_us_in(self.work_us * requests.len() as f64, ctx);
                let results = ctx.alloc_slice(&results);
                ctx.send(
                    *origin,
                    self.net_delay,
                    StoreEvent::Reply {
                        batch: *batch,
                        results,
                    },
                );
            }
            StoreEvent::Reply { batch, results } => {
                // Sequentially a reply always finds its batch. An optimistic executor may run
                // a reply whose cause is about to be cancelled; count it instead of failing,
                // the rollback that follows undoes it.
                let Some(mut pb) = node.pending.remove(batch) else {
                    node.stray_replies += 1;
                    return;
                };
                for &(tx, ok) in results.as_slice() {
                    match pb.txs.get_mut(usize::from(tx)) {
                        Some(t) if t.waiting > 0 => {
                            t.failed |= !ok;
                            t.waiting -= 1;
                            if t.waiting == 0 {
                                let failed = t.failed;
                                self.decide(node, failed, pb.started, now);
                            }
                        }
                        _ => node.stray_replies += 1,
                    }
                }
                if pb.txs.iter().any(|t| t.waiting > 0) {
                    node.pending.insert(*batch, pb);
                }
            }
        }
    }

    /// Each node keeps its batches of the next two windows pending, and a batch being decided
    /// holds `batching-factor × ops-per-tx` accesses (requests of 16 bytes, statuses).
    fn size_hint(&self) -> SizeHint {
        let ahead = crate::check::count(2.0 * self.window() / self.batch_interarrival);
        let accesses = u64::from(self.nodes)
            .checked_mul(u64::from(self.batching_factor))
            .and_then(|n| n.checked_mul(u64::from(self.ops_per_tx)));
        SizeHint {
            model_bytes: accesses.and_then(|n| n.checked_mul(24)),
            model_what: "nodes × batching-factor × ops-per-tx accesses of 24 B",
            ..SizeHint::pending(ahead.saturating_add(2))
        }
    }

    fn lookahead(&self) -> f64 {
        self.net_delay
    }

    fn finish(&self, lp: LpId, node: &Node, stats: &mut ModelStats) {
        stats.add("tx_started", node.started as f64);
        stats.add("tx_in_flight", node.in_flight as f64);
        stats.add("tx_decided", node.decided as f64);
        stats.add("request_metas_allocated", node.metas_allocated as f64);
        let undecided: usize = node
            .pending
            .values()
            .map(|b| b.txs.iter().filter(|t| t.waiting > 0).count())
            .sum();
        stats.add("tx_pending_in_batches", undecided as f64);
        stats.add("committed", node.committed as f64);
        stats.add("aborted", node.aborted as f64);
        stats.add("latency_sum", node.latency_sum);
        stats.add("accesses", node.accesses as f64);
        stats.add("access_conflicts", node.conflicts as f64);
        stats.add("stray_replies", node.stray_replies as f64);
        let last = stats.get("last_event_time").unwrap_or(0.0).max(node.last);
        stats.set("last_event_time", last);
        if lp + 1 == self.lps() {
            let get = |s: &ModelStats, n: &str| s.get(n).unwrap_or(0.0);
            let decided = get(stats, "committed") + get(stats, "aborted");
            if decided > 0.0 {
                let a = get(stats, "aborted") / decided;
                let l = get(stats, "latency_sum") / decided;
                stats.set("abort_rate", a);
                stats.set("mean_latency", l);
            }
            let span = last - self.warmup;
            if span > 0.0 {
                let t = get(stats, "committed") / span;
                stats.set("throughput", t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_survives_a_json_round_trip() {
        let m = DataStore::default();
        let mut node = Node {
            next_batch: 3.5,
            batches: 2,
            started: 20,
            in_flight: 4,
            ..Node::default()
        };
        for (owner, key) in [(1, 10), (2, 11), (3, 10), (1, 900), (7, 5), (8, 6), (9, 4)] {
            m.access(&mut node, owner, key, 0.25);
        }
        node.pending.insert(
            1,
            PendingBatch {
                started: 0.25,
                txs: vec![
                    TxStatus {
                        failed: true,
                        waiting: 1,
                    },
                    TxStatus::default(),
                ],
            },
        );
        m.decide(&mut node, false, 0.1, 0.3);
        // Two maps of the same leases iterate in different orders; the JSON is the same.
        let mut back = crate::json_again(&node);
        let go = |n: &mut Node| -> Vec<bool> {
            [(4, 10), (2, 11), (5, 77), (1, 10)]
                .iter()
                .map(|&(owner, key)| m.access(n, owner, key, 0.5))
                .collect()
        };
        assert_eq!(go(&mut back), go(&mut node));
        let json = |n: &Node| serde_json::to_string(n).unwrap();
        assert_eq!(json(&back), json(&node));
    }
}
