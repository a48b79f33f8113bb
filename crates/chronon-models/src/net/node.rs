//! What a node does: the events it receives, its state, and the model's handlers (forwarding
//! with Lindley's recursion, sinks, sources' emission ticks, throughput samples).

use std::collections::VecDeque;

use chronon::{Ctx, GlobalCtx, LpId, Model, ModelStats};

use super::{Body, NetModel, NodeId};

impl NetModel {
    /// Schedules app `k`'s emissions before `until`.
    fn generate(&self, k: usize, st: &mut AppState, until: f64, ctx: &mut Ctx<'_, Self>) {
        let app = &self.apps[ctx.me() as usize][k];
        let me = ctx.me();
        loop {
            // The on-time still owed before the next packet carries over to the next on
            // period, so a source sends exactly one packet per `interval` of on-time.
            while st.next >= st.on_end {
                let owed = st.next - st.on_end;
                let off = ctx.rng().exponential_mean(app.off_mean);
                let on = ctx.rng().exponential_mean(app.on_mean);
                let on_start = st.on_end + off;
                st.next = on_start + owed;
                st.on_end = on_start + on;
            }
            if st.next >= until || st.next >= app.stop {
                break;
            }
            let group = &self.groups[me as usize][k];
            let multicast = !group.is_empty();
            let seq = st.scheduled;
            // Unicast: a body only with `carry_data` (as a packet holds its PDUs); multicast:
            // one body, shared by the copies to every member of the group.
            let data = (multicast || self.data)
                .then(|| Body::new(self.refcount, seq, app.packet_bytes, multicast, ctx));
            let copies = self.emission(me, k, st.next, data);
            st.scheduled += copies.len() as u64;
            for p in copies {
                ctx.send(me, st.next - ctx.now(), NetEvent::Packet(p));
            }
            st.next += app.interval();
        }
        st.done = st.next >= app.stop;
    }

    /// The packets one emission of source `app` of node `src` sends at time `created`: one to
    /// the source's destination, or one to each member of its multicast group, every copy
    /// holding `data` (clones of one body: the copies share it). Empty if there is no such
    /// source.
    pub fn emission(
        &self,
        src: NodeId,
        app: usize,
        created: f64,
        data: Option<Body>,
    ) -> Vec<Packet> {
        let (Some(a), Some(group)) = (
            self.apps.get(src as usize).and_then(|a| a.get(app)),
            self.groups.get(src as usize).and_then(|g| g.get(app)),
        ) else {
            return Vec::new();
        };
        let packet = |dst, data| Packet {
            src,
            dst,
            bytes: a.packet_bytes,
            created,
            hops: 0,
            link: 0,
            data,
        };
        let Some((&last, others)) = group.split_last() else {
            return vec![packet(a.dst, data)];
        };
        let mut out: Vec<Packet> = others.iter().map(|&d| packet(d, data.clone())).collect();
        out.push(packet(last, data));
        out
    }
}

/// A packet.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Packet {
    /// Its source node.
    pub src: NodeId,
    /// Its destination node.
    pub dst: NodeId,
    /// Its size on the wire.
    pub bytes: u32,
    /// When its source emitted it.
    pub created: f64,
    /// Links crossed so far (0: still at its source, not yet sent).
    pub hops: u32,
    /// The interface, at the node it arrives at, of the link it last crossed.
    pub link: u16,
    /// Its body, shared by every event that holds the packet: a multicast emission's copies
    /// share one; `None` for unicast packets without `carry_data`.
    pub data: Option<Body>,
}

chronon::impl_shm_safe!(Packet {
    src,
    dst,
    bytes,
    created,
    hops,
    link,
    data
});

/// What nodes receive.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum NetEvent {
    /// Source `app` of this node generates its next window of packets.
    Tick {
        /// The source's index on this node.
        app: u32,
    },
    /// A packet arriving (or, with `hops == 0`, being emitted by its source).
    Packet(Packet),
}
chronon::impl_shm_safe!(enum NetEvent { Tick { app }, Packet(p) });

/// One interface's transmit queue.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct IfaceState {
    /// Transmission end times of the packets in the queue (the first is being transmitted).
    ends: VecDeque<f64>,
    busy_until: f64,
    /// Packets transmitted on this interface.
    sent: u64,
    /// Packets that arrived over this interface's link.
    arrived: u64,
    dropped: u64,
}

/// One source's generator state.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct AppState {
    next: f64,
    /// The end of the current on period: infinite for a source that is always on.
    #[serde(with = "chronon::measure::serde_f64")]
    on_end: f64,
    scheduled: u64,
    done: bool,
}

/// One node's state.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct NodeState {
    ifaces: Vec<IfaceState>,
    apps: Vec<AppState>,
    /// Packets its sources emitted.
    pub sent: u64,
    /// Packets delivered to it.
    pub received: u64,
    /// Bytes delivered to it.
    pub bytes_received: u64,
    /// Summed end-to-end latency of the delivered packets.
    pub latency_sum: f64,
    /// Packets it dropped (full queue).
    pub dropped: u64,
    /// Packets it forwarded (not its own).
    pub forwarded: u64,
    /// Packets that had no route (always 0 for a built network).
    pub unroutable: u64,
    /// Multicast packets delivered to it.
    pub multicast_received: u64,
    /// Multicast packets delivered to it whose shared body was damaged (always 0).
    pub multicast_corrupt: u64,
    /// Unicast packets with a body (`carry_data`) delivered to it.
    pub data_received: u64,
    /// Of those, bodies that were damaged (always 0).
    pub data_corrupt: u64,
}

impl Model for NetModel {
    fn lp_count(&self) -> Option<chronon::LpId> {
        Some(self.lps())
    }

    type State = NodeState;
    type Event = NetEvent;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> NodeState {
        let me = ctx.me();
        let mut st = NodeState {
            ifaces: vec![IfaceState::default(); self.ifaces[me as usize].len()],
            ..NodeState::default()
        };
        for (k, app) in self.apps[me as usize].iter().enumerate() {
            let start = app.start + ctx.rng().uniform() * app.start_jitter;
            let on_end = if app.off_mean == 0.0 {
                f64::INFINITY
            } else {
                start + ctx.rng().exponential_mean(app.on_mean)
            };
            let mut a = AppState {
                next: start,
                on_end,
                ..AppState::default()
            };
            // Everything before start + 2 windows now; then a tick every window.
            let w = self.window(app);
            self.generate(k, &mut a, start + 2.0 * w, ctx);
            if !a.done {
                ctx.send(me, start + w, NetEvent::Tick { app: k as u32 });
            }
            st.apps.push(a);
        }
        // The thread that builds the first events may idle for the rest of the run: it must
        // not hold back the buffered schemes' frees.
        self.refcount.leave();
        st
    }

    fn on_event(&self, st: &mut NodeState, ev: &NetEvent, ctx: &mut Ctx<'_, Self>) {
        let now = ctx.now();
        let me = ctx.me();
        let mut p = match *ev {
            NetEvent::Tick { app } => {
                let k = app as usize;
                let w = self.window(&self.apps[me as usize][k]);
                let mut a = st.apps[k];
                self.generate(k, &mut a, now + 2.0 * w, ctx);
                if !a.done {
                    ctx.send(me, w, NetEvent::Tick { app });
                }
                st.apps[k] = a;
                return;
            }
            NetEvent::Packet(ref p) => p.clone(),
        };
        if p.hops == 0 {
            st.sent += 1;
        } else {
            st.ifaces[usize::from(p.link)].arrived += 1;
            if p.dst == me {
                if let Some(data) = &p.data {
                    let (seq, body, multicast) = data.view();
                    let intact = body.len() == p.bytes as usize
                        && body.iter().all(|&b| b == (seq & 0xff) as u8);
                    if multicast {
                        st.multicast_received += 1;
                        st.multicast_corrupt += u64::from(!intact);
                    } else {
                        st.data_received += 1;
                        st.data_corrupt += u64::from(!intact);
                    }
                }
                st.received += 1;
                st.bytes_received += u64::from(p.bytes);
                st.latency_sum += now - p.created;
                return;
            }
            st.forwarded += 1;
        }
        let Some(i) = self.route(me, p.dst) else {
            st.unroutable += 1;
            return;
        };
        let iface = &self.ifaces[me as usize][i];
        let q = &mut st.ifaces[i];
        while q.ends.front().is_some_and(|&e| e <= now) {
            q.ends.pop_front();
        }
        if q.ends.len() > iface.spec.queue_packets as usize {
            q.dropped += 1;
            st.dropped += 1;
            return;
        }
        let start = now.max(q.busy_until);
        let end = start + iface.spec.transmit_time(p.bytes);
        q.busy_until = end;
        q.ends.push_back(end);
        q.sent += 1;
        p.hops += 1;
        p.link = iface.back;
        p.data = p.data.map(|d| d.for_process_of(iface.peer, ctx));
        // `max`: `end - now` may round an ulp below the transmission time, and the delay must
        // not fall below the link's declared lookahead (delay + smallest transmission).
        let transmit = (end - now).max(iface.spec.transmit_time(p.bytes));
        ctx.send(iface.peer, transmit + iface.spec.delay, NetEvent::Packet(p));
    }

    fn lookahead(&self) -> f64 {
        self.lookahead
    }

    fn global_events(&self) -> Vec<f64> {
        crate::check::sampling(self.sample_period)
    }

    /// A throughput sample: bytes delivered in the whole network since the last sample.
    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        let total: u64 = (0..ctx.lps()).map(|n| ctx.state(n).bytes_received).sum();
        let (since, before) = ctx.last("bytes_received").unwrap_or((0.0, 0.0));
        let now = ctx.now();
        ctx.record(
            "throughput_bps",
            (total as f64 - before) * 8.0 / (now - since),
        );
        ctx.record("bytes_received", total as f64);
        ctx.schedule(self.sample_period);
    }

    /// A node sends only to its neighbours, each link with its own lookahead
    /// ([`NetModel::link_lookahead`]).
    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
        Some(
            self.ifaces[lp as usize]
                .iter()
                .enumerate()
                .map(|(i, f)| (f.peer, self.link_lookahead(lp, i)))
                .collect(),
        )
    }

    fn finish(&self, lp: LpId, st: &NodeState, stats: &mut ModelStats) {
        stats.add("packets_sent", st.sent as f64);
        stats.add("packets_received", st.received as f64);
        stats.add("packets_dropped", st.dropped as f64);
        stats.add("packets_forwarded", st.forwarded as f64);
        stats.add("packets_unroutable", st.unroutable as f64);
        if self.multicast {
            stats.add("multicast_received", st.multicast_received as f64);
            stats.add("multicast_corrupt", st.multicast_corrupt as f64);
        }
        if self.data {
            stats.add("data_received", st.data_received as f64);
            stats.add("data_corrupt", st.data_corrupt as f64);
        }
        stats.add("bytes_received", st.bytes_received as f64);
        stats.add("latency_sum", st.latency_sum);
        // Packets put on a link minus packets that came off it, counted at each end.
        stats.add(
            "link_transmissions",
            st.ifaces.iter().map(|q| q.sent).sum::<u64>() as f64,
        );
        stats.add(
            "link_arrivals",
            st.ifaces.iter().map(|q| q.arrived).sum::<u64>() as f64,
        );
        let scheduled: u64 = st.apps.iter().map(|a| a.scheduled).sum();
        // Emissions scheduled but not yet run; sources still ticking.
        stats.add("emissions_pending", (scheduled - st.sent) as f64);
        stats.add(
            "sources_active",
            st.apps.iter().filter(|a| !a.done).count() as f64,
        );
        if lp + 1 == self.lps() {
            let get = |s: &ModelStats, n: &str| s.get(n).unwrap_or(0.0);
            let rx = get(stats, "packets_received");
            if rx > 0.0 {
                let l = get(stats, "latency_sum") / rx;
                stats.set("mean_latency", l);
            }
            let on_links = get(stats, "link_transmissions") - get(stats, "link_arrivals");
            stats.set("packets_in_flight", on_links);
            let sent = get(stats, "packets_sent");
            if sent > 0.0 {
                let d = get(stats, "packets_dropped") / sent;
                stats.set("drop_rate", d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_state_survives_a_json_round_trip() {
        let st = NodeState {
            ifaces: vec![
                IfaceState {
                    ends: VecDeque::from([0.5, 0.1 + 0.2 + 0.5]),
                    busy_until: 0.8,
                    sent: 4,
                    arrived: 3,
                    dropped: 1,
                },
                IfaceState::default(),
            ],
            apps: vec![
                // Always on: the on period never ends.
                AppState {
                    next: 1.0 / 3.0,
                    on_end: f64::INFINITY,
                    scheduled: 5,
                    done: false,
                },
                AppState {
                    next: 2.5,
                    on_end: 2.75,
                    scheduled: 1,
                    done: true,
                },
            ],
            sent: 6,
            received: 2,
            bytes_received: 2000,
            latency_sum: 0.036,
            dropped: 1,
            ..NodeState::default()
        };
        let back = crate::json_again(&st);
        assert_eq!(back.apps[0].on_end, f64::INFINITY);
        assert_eq!(back.ifaces[0].ends, st.ifaces[0].ends);
    }
}
