//! A small packet network library: nodes, full-duplex point-to-point links with bandwidth,
//! propagation delay and drop-tail queues, static shortest-path routing, UDP on/off sources and
//! sinks. [`star_clique`] and [`campus`] build the seeds' topologies on it.
//!
//! Every node is one LP. A packet crossing a link is one event at the far node, so a link's
//! propagation delay plus its transmission time bounds every cross-LP send from below. Each
//! node declares its links ([`Model::topology`](chronon::Model::topology)): a neighbour per link, with lookahead the
//! link's delay plus the transmission time of the smallest packet any source sends; the
//! network's smallest link delay is the model's (global) lookahead, which self-sends keep.
//!
//! **Interfaces without timers.** Each end of a link is an interface with a FIFO transmit queue
//! that holds at most `queue_packets` packets waiting besides the one being transmitted (drop
//! tail). When a packet reaches an interface at time `t`, the interface computes its transmit
//! start `max(t, end of the previous transmission)` and end `start + 8 · bytes / bandwidth`
//! (Lindley's recursion), keeps the end time to know its queue length later, and sends the
//! packet to the far node to arrive at `end + delay`. No transmit-complete events are needed.
//!
//! **Routing.** Routes are computed once, when the network is built: Dijkstra on link delay
//! (ties broken by hop count, then by node id) from every node that is not a leaf. A leaf (a
//! node with one link) reaches everything through its only link, and is reached through the
//! node at the other end of that link, so the routing table is only (non-leaf nodes)².
//!
//! **Sources.** An [`OnOff`] source alternates exponential on and off periods and sends
//! fixed-size packets at a constant rate while on (off mean 0: always on, a constant-bit-rate
//! source); the first packet goes at its start, and the on-time owed towards the next packet
//! carries over an off period, so the long-run rate is exactly `rate × on / (on + off)`. Its packet emissions are generated one window ahead (at least the lookahead) as
//! events the source node sends itself; a packet counts as sent when its emission event runs.
//! A sink at every node counts what arrives for it.
//!
//! ```
//! use chronon::Simulation;
//! use chronon_models::net::{LinkSpec, Network, OnOff};
//!
//! // Two nodes, a 1 Mb/s link with 10 ms of delay, a 0.5 Mb/s stream of 1000-byte packets.
//! let mut net = Network::new(2);
//! let link = LinkSpec { bandwidth_bps: 1e6, delay: 0.01, queue_packets: 10 };
//! net.link(0, 1, link)?;
//! net.app(0, OnOff::cbr(1, 0.5e6, 1000, 0.0, f64::INFINITY))?;
//! let model = net.build()?;
//! let lps = model.lps();
//! let report = Simulation::new(model).lps(lps).end_time(10.0).run().map_err(|e| e.to_string())?;
//! // No queueing below capacity: 8 ms to transmit, 10 ms to propagate.
//! let latency = report.model_stats.get("mean_latency").unwrap();
//! assert!((latency - 0.018).abs() < 1e-9);
//! # Ok::<(), String>(())
//! ```

mod body;
pub mod campus;
mod node;
pub mod star_clique;

pub use body::{Body, LocalPayload, Payload, Refcount};
pub use node::{NetEvent, NodeState, Packet};

use std::collections::BinaryHeap;

/// Checks the UDP on/off source parameters that every topology on this library shares.
fn check_udp(
    packet_bytes: u32,
    load: f64,
    on_mean: f64,
    off_mean: f64,
    start_window: f64,
) -> Result<(), String> {
    use crate::check::*;
    at_least("packet-bytes", u64::from(packet_bytes), 1)?;
    positive("load", load)?;
    if load > 1.0 {
        return Err(format!("load is {load}; it must be in (0, 1]"));
    }
    positive("on-mean", on_mean)?;
    nonneg("off-mean", off_mean)?;
    nonneg("start-window", start_window)
}

/// A node's index (its LP).
pub type NodeId = u32;

/// The most nodes with more than one link (routers, hubs, switches) a network may have: the
/// routing table holds one entry per pair of them.
pub const MAX_ROUTERS: usize = 8192;

/// A full-duplex point-to-point link's properties (the same in both directions).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct LinkSpec {
    /// Bits per second.
    pub bandwidth_bps: f64,
    /// Propagation delay in seconds.
    pub delay: f64,
    /// Packets that may wait in each direction's queue besides the one being transmitted.
    pub queue_packets: u32,
}

impl LinkSpec {
    /// Seconds to transmit `bytes` on this link.
    pub fn transmit_time(&self, bytes: u32) -> f64 {
        f64::from(bytes) * 8.0 / self.bandwidth_bps
    }
}

/// A UDP on/off source: constant rate while on, silent while off.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct OnOff {
    /// Where its packets go.
    pub dst: NodeId,
    /// Sending rate while on, bits per second.
    pub rate_bps: f64,
    /// Bytes per packet.
    pub packet_bytes: u32,
    /// Mean on period (seconds); exponential.
    pub on_mean: f64,
    /// Mean off period (seconds); exponential; 0: always on.
    pub off_mean: f64,
    /// The source starts at `start + U(0, start_jitter)`, in an on period.
    pub start: f64,
    /// See `start`.
    pub start_jitter: f64,
    /// No packet is emitted at or after this time.
    pub stop: f64,
}

impl OnOff {
    /// A constant-bit-rate source from `start` to `stop`.
    pub fn cbr(dst: NodeId, rate_bps: f64, packet_bytes: u32, start: f64, stop: f64) -> Self {
        OnOff {
            dst,
            rate_bps,
            packet_bytes,
            on_mean: 1.0,
            off_mean: 0.0,
            start,
            start_jitter: 0.0,
            stop,
        }
    }

    /// Seconds between two packets while on.
    pub fn interval(&self) -> f64 {
        f64::from(self.packet_bytes) * 8.0 / self.rate_bps
    }

    /// The long-run mean rate in bits per second.
    pub fn mean_rate_bps(&self) -> f64 {
        if self.off_mean == 0.0 {
            self.rate_bps
        } else {
            self.rate_bps * self.on_mean / (self.on_mean + self.off_mean)
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Iface {
    peer: NodeId,
    /// This link's interface index at `peer`.
    back: u16,
    spec: LinkSpec,
}

/// A network under construction.
#[derive(Clone, Debug, Default)]
pub struct Network {
    ifaces: Vec<Vec<Iface>>,
    apps: Vec<Vec<OnOff>>,
    /// Per source: the nodes every packet goes to (empty: the source's `dst` alone).
    groups: Vec<Vec<Vec<NodeId>>>,
    /// Seconds between throughput samples (0: none).
    sample_period: f64,
    data: bool,
    refcount: Refcount,
}

impl Network {
    /// A network of `nodes` unconnected nodes.
    pub fn new(nodes: u32) -> Self {
        Network {
            ifaces: vec![Vec::new(); nodes as usize],
            apps: vec![Vec::new(); nodes as usize],
            groups: vec![Vec::new(); nodes as usize],
            sample_period: 0.0,
            data: false,
            refcount: Refcount::Heap,
        }
    }

    /// How the packets' bodies (multicast copies, `carry_data`) are counted: in the engine's
    /// shared heap (the default) or by one of `chronon::refcount`'s schemes in this process's
    /// memory (see [`Body`]).
    pub fn refcount(&mut self, scheme: Refcount) {
        self.refcount = scheme;
    }

    /// Unicast packets carry `packet_bytes` bytes of application data in a body shared by the
    /// events that carry the packet hop by hop ([`Body`], counted by [`Network::refcount`]'s
    /// scheme), checked at the destination; off (the default): a unicast packet's size is only
    /// a number.
    pub fn carry_data(&mut self, on: bool) {
        self.data = on;
    }

    /// Samples the network's throughput every `period` seconds (0: never): a global event
    /// that reads every node and records `model_series["throughput_bps"]` (bits delivered per
    /// second over the last interval) and `model_series["bytes_received"]` (cumulative).
    pub fn sample_every(&mut self, period: f64) -> Result<(), String> {
        if !(period >= 0.0 && period.is_finite()) {
            return Err(format!("sample period {period} must be finite and >= 0"));
        }
        self.sample_period = period;
        Ok(())
    }

    /// The number of nodes.
    pub fn nodes(&self) -> u32 {
        self.ifaces.len() as u32
    }

    /// Joins `a` and `b` with a full-duplex link.
    pub fn link(&mut self, a: NodeId, b: NodeId, spec: LinkSpec) -> Result<(), String> {
        let n = self.nodes();
        if a >= n || b >= n || a == b {
            return Err(format!(
                "link {a} - {b}: both ends must be distinct nodes below {n}"
            ));
        }
        if !(spec.bandwidth_bps > 0.0 && spec.bandwidth_bps.is_finite()) {
            return Err(format!(
                "link {a} - {b}: bandwidth {} must be finite and > 0",
                spec.bandwidth_bps
            ));
        }
        if !(spec.delay > 0.0 && spec.delay.is_finite()) {
            return Err(format!(
                "link {a} - {b}: delay {} must be finite and > 0 (it is the lookahead)",
                spec.delay
            ));
        }
        if self.ifaces[a as usize].iter().any(|i| i.peer == b) {
            return Err(format!("link {a} - {b} already exists"));
        }
        let (ia, ib) = (self.ifaces[a as usize].len(), self.ifaces[b as usize].len());
        if ia.max(ib) >= usize::from(u16::MAX) {
            return Err(format!(
                "link {a} - {b}: a node may have at most 65534 links"
            ));
        }
        self.ifaces[a as usize].push(Iface {
            peer: b,
            back: ib as u16,
            spec,
        });
        self.ifaces[b as usize].push(Iface {
            peer: a,
            back: ia as u16,
            spec,
        });
        Ok(())
    }

    /// Runs `app` on node `src`.
    pub fn app(&mut self, src: NodeId, app: OnOff) -> Result<(), String> {
        let n = self.nodes();
        if src >= n || app.dst >= n || src == app.dst {
            return Err(format!(
                "source {src} -> {}: both must be distinct nodes below {n}",
                app.dst
            ));
        }
        if !(app.rate_bps > 0.0 && app.rate_bps.is_finite()) || app.packet_bytes == 0 {
            return Err(format!(
                "source {src}: rate {} and packet size {} must be > 0",
                app.rate_bps, app.packet_bytes
            ));
        }
        let ok = |x: f64| x >= 0.0 && x.is_finite();
        let timing = [app.on_mean, app.off_mean, app.start, app.start_jitter];
        if !(app.on_mean > 0.0 && timing.into_iter().all(ok) && app.stop >= 0.0) {
            return Err(format!(
                "source {src}: on mean must be > 0, off mean, start and jitter >= 0"
            ));
        }
        self.apps[src as usize].push(app);
        self.groups[src as usize].push(Vec::new());
        Ok(())
    }

    /// Adds a multicast source at `src`: every packet it emits goes to each node of `group`
    /// (`app.dst` is ignored). The copies share one body ([`Body`], counted by
    /// [`Network::refcount`]'s scheme, seed 001 §3.3): allocated once per emission, its
    /// `app.packet_bytes` bytes are checked by every receiver and freed by the last copy to go.
    pub fn multicast(&mut self, src: NodeId, group: &[NodeId], app: OnOff) -> Result<(), String> {
        let n = self.nodes();
        let Some(&first) = group.first() else {
            return Err(format!("multicast source {src}: the group is empty"));
        };
        for (i, &d) in group.iter().enumerate() {
            if d >= n || d == src || group[..i].contains(&d) {
                return Err(format!(
                    "multicast source {src}: group member {d} must be a node below {n}, not the source, and listed once"
                ));
            }
        }
        self.app(src, OnOff { dst: first, ..app })?;
        *self.groups[src as usize]
            .last_mut()
            .expect("app pushed a group") = group.to_vec();
        Ok(())
    }

    /// Computes the routes and returns the runnable model. Fails when a source cannot reach
    /// its destination.
    pub fn build(self) -> Result<NetModel, String> {
        let n = self.ifaces.len();
        let is_leaf = |u: usize| self.ifaces[u].len() == 1;
        let core: Vec<NodeId> = (0..n as NodeId).filter(|&u| !is_leaf(u as usize)).collect();
        let mut core_index = vec![u32::MAX; n];
        for (i, &u) in core.iter().enumerate() {
            core_index[u as usize] = i as u32;
        }
        // next[d * core + u]: the interface at core node u towards core node d.
        let c = core.len();
        if c > MAX_ROUTERS {
            return Err(format!(
                "the network has {c} nodes with more than one link; at most {MAX_ROUTERS} are \
                 allowed (the routing table is their square)"
            ));
        }
        let mut next = vec![u16::MAX; c * c];
        for (di, &d) in core.iter().enumerate() {
            // Dijkstra from d over core nodes, on (delay, hops, node) — then each node's first
            // hop towards d is the interface to its predecessor in the tree.
            let mut dist = vec![(f64::INFINITY, u32::MAX); n];
            dist[d as usize] = (0.0, 0);
            let mut heap = BinaryHeap::new();
            heap.push(DijkstraItem {
                delay: 0.0,
                hops: 0,
                node: d,
            });
            while let Some(DijkstraItem { delay, hops, node }) = heap.pop() {
                if (delay, hops) > dist[node as usize] {
                    continue;
                }
                for iface in &self.ifaces[node as usize] {
                    let v = iface.peer;
                    if is_leaf(v as usize) {
                        continue;
                    }
                    let cand = (delay + iface.spec.delay, hops + 1);
                    if cand < dist[v as usize] {
                        dist[v as usize] = cand;
                        // v reaches d through node, over this link's interface at v.
                        next[di * c + core_index[v as usize] as usize] = iface.back;
                        heap.push(DijkstraItem {
                            delay: cand.0,
                            hops: cand.1,
                            node: v,
                        });
                    }
                }
            }
        }
        let model = NetModel {
            ifaces: self.ifaces,
            apps: self.apps,
            multicast: self.groups.iter().flatten().any(|g| !g.is_empty()),
            groups: self.groups,
            sample_period: self.sample_period,
            data: self.data,
            refcount: self.refcount,
            core_index,
            core: c,
            next,
            lookahead: 0.0,
            min_bytes: 0,
        };
        let lookahead = model
            .ifaces
            .iter()
            .flatten()
            .map(|i| i.spec.delay)
            .fold(f64::INFINITY, f64::min);
        let min_bytes = model
            .apps
            .iter()
            .flatten()
            .map(|a| a.packet_bytes)
            .min()
            .unwrap_or(0);
        let model = NetModel {
            lookahead: if lookahead.is_finite() {
                lookahead
            } else {
                1.0
            },
            min_bytes,
            ..model
        };
        for (src, apps) in model.apps.iter().enumerate() {
            for (app, group) in apps.iter().zip(&model.groups[src]) {
                for &dst in group.iter().chain(std::iter::once(&app.dst)) {
                    if model.path_len(src as NodeId, dst).is_none() {
                        return Err(format!("source {src} cannot reach its destination {dst}"));
                    }
                }
            }
        }
        Ok(model)
    }
}

#[derive(Debug, PartialEq)]
struct DijkstraItem {
    delay: f64,
    hops: u32,
    node: NodeId,
}

impl Eq for DijkstraItem {}

impl Ord for DijkstraItem {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // A min-heap on (delay, hops, node); delays are finite.
        other
            .delay
            .total_cmp(&self.delay)
            .then(other.hops.cmp(&self.hops))
            .then(other.node.cmp(&self.node))
    }
}

impl PartialOrd for DijkstraItem {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A built network: the model to run, one LP per node.
#[derive(Clone, Debug)]
pub struct NetModel {
    ifaces: Vec<Vec<Iface>>,
    apps: Vec<Vec<OnOff>>,
    /// Per source: its multicast group (empty: unicast to the source's `dst`).
    groups: Vec<Vec<Vec<NodeId>>>,
    /// Whether any source multicasts (its receivers' figures go in the report).
    multicast: bool,
    /// Seconds between throughput samples (0: none).
    sample_period: f64,
    /// Unicast packets carry their data ([`Network::carry_data`]).
    pub(super) data: bool,
    /// How packet bodies are counted ([`Network::refcount`]).
    refcount: Refcount,
    core_index: Vec<u32>,
    core: usize,
    next: Vec<u16>,
    lookahead: f64,
    /// The smallest packet any source sends (bytes; 0 without sources): every packet a link
    /// carries takes at least its transmission time.
    min_bytes: u32,
}

impl NetModel {
    /// The lookahead of the link from `node` through interface `i`: its propagation delay
    /// plus the transmission time of the smallest packet any source sends.
    pub fn link_lookahead(&self, node: NodeId, i: usize) -> f64 {
        let spec = self.ifaces[node as usize][i].spec;
        spec.delay + spec.transmit_time(self.min_bytes)
    }

    /// The number of LPs: one per node.
    pub fn lps(&self) -> u32 {
        self.ifaces.len() as u32
    }

    /// The interface node `at` forwards a packet for `dst` on (`None`: no route).
    pub fn route(&self, at: NodeId, dst: NodeId) -> Option<usize> {
        let here = &self.ifaces[at as usize];
        if here.len() == 1 {
            return Some(0);
        }
        // A leaf destination is reached through its only neighbour.
        let target = match self.ifaces[dst as usize].as_slice() {
            [only] => {
                if only.peer == at {
                    return here.iter().position(|i| i.peer == dst);
                }
                only.peer
            }
            _ => dst,
        };
        let (u, d) = (
            self.core_index[at as usize],
            self.core_index[target as usize],
        );
        if u == u32::MAX || d == u32::MAX {
            return None;
        }
        let i = self.next[d as usize * self.core + u as usize];
        (i != u16::MAX).then_some(usize::from(i))
    }

    /// The number of hops from `src` to `dst` along the routes (`None`: unreachable).
    pub fn path_len(&self, src: NodeId, dst: NodeId) -> Option<u32> {
        let mut at = src;
        let mut hops = 0;
        while at != dst {
            let i = self.route(at, dst)?;
            at = self.ifaces[at as usize][i].peer;
            hops += 1;
            if hops > self.lps() {
                return None;
            }
        }
        Some(hops)
    }

    /// The neighbours of `node`, in interface order.
    pub fn neighbours(&self, node: NodeId) -> Vec<NodeId> {
        self.ifaces[node as usize].iter().map(|i| i.peer).collect()
    }

    fn window(&self, app: &OnOff) -> f64 {
        self.lookahead.max(10.0 * app.interval())
    }
}
