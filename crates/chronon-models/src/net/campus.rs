//! A ring of campus networks, after the DARPA NMS campus model used by seed 001 (§1.3).
//!
//! `campuses` campuses are joined in a ring by their border routers. Each campus has four
//! subnetworks:
//!
//! - **Net0**, the backbone: the border router `B` and two routers `R1`, `R2`, in a triangle;
//! - **Net1**, the servers: a router `S` on `R1` with `servers` servers;
//! - **Net2** and **Net3**, the clients: a router each (`N2` on `R2`; `N3` on both `R1` and
//!   `R2`), each with `lans_per_net` LANs of `clients_per_lan` (42) clients. A LAN is a switch
//!   node with one point-to-point link per client (the seed's LANs are shared media; a switched
//!   LAN keeps every link point-to-point).
//!
//! Every client runs a UDP on/off source towards a server of the next campus on the ring
//! (client `k` of a campus to server `k mod servers`; with one campus, its own servers), each
//! averaging `load` of its LAN link's bandwidth. Routes are shortest by delay.
//!
//! Node numbering, per campus (each campus is a consecutive block, so a block partition keeps
//! campuses together): `B, R1, R2, S, servers…, N2, N3`, then for Net2 and then Net3 each LAN's
//! switch followed by its clients.

use super::{LinkSpec, NetModel, Network, NodeId, OnOff, Refcount};

/// The campus ring's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Campus {
    /// Campuses on the ring.
    pub campuses: u32,
    /// Servers per campus (Net1).
    pub servers: u32,
    /// LANs in each client subnetwork (Net2 and Net3).
    pub lans_per_net: u32,
    /// Clients per LAN.
    pub clients_per_lan: u32,
    /// Client and server access links: bandwidth, bits per second.
    pub lan_bandwidth: f64,
    /// Client and server access links: delay, seconds.
    pub lan_delay: f64,
    /// Links between routers and switches inside a campus: bandwidth.
    pub backbone_bandwidth: f64,
    /// Links between routers and switches inside a campus: delay.
    pub backbone_delay: f64,
    /// Ring links between campuses: bandwidth.
    pub ring_bandwidth: f64,
    /// Ring links between campuses: delay.
    pub ring_delay: f64,
    /// Packets each link direction may queue.
    pub queue_packets: u32,
    /// Bytes per UDP packet.
    pub packet_bytes: u32,
    /// Each client's mean rate as a fraction of its LAN link's bandwidth.
    pub load: f64,
    /// Mean on period, seconds.
    pub on_mean: f64,
    /// Mean off period, seconds.
    pub off_mean: f64,
    /// Sources start uniformly in `[0, start_window)`.
    pub start_window: f64,
    /// Seconds between throughput samples (a global event; the report's `model_series`);
    /// 0: none.
    pub sample_period: f64,
    /// Packets carry `packet_bytes` of data in a body that the events of every hop share, as
    /// ns-3's packets are shared by the events that carry them ([`Network::carry_data`]).
    pub data: bool,
    /// How the bodies are counted ([`Network::refcount`]; seed 001 §3.3).
    pub refcount: Refcount,
}

impl Default for Campus {
    fn default() -> Self {
        Campus {
            campuses: 4,
            servers: 4,
            lans_per_net: 2,
            clients_per_lan: 42,
            lan_bandwidth: 100e6,
            lan_delay: 0.5e-3,
            backbone_bandwidth: 1e9,
            backbone_delay: 1e-3,
            ring_bandwidth: 1e9,
            ring_delay: 10e-3,
            queue_packets: 100,
            packet_bytes: 512,
            load: 0.01,
            on_mean: 0.5,
            off_mean: 0.5,
            start_window: 0.5,
            sample_period: 0.0,
            data: false,
            refcount: Refcount::Heap,
        }
    }
}

impl Campus {
    /// Nodes in one campus.
    pub fn nodes_per_campus(&self) -> u64 {
        6 + u64::from(self.servers)
            + 2 * u64::from(self.lans_per_net) * (1 + u64::from(self.clients_per_lan))
    }

    /// The number of LPs: one per node.
    pub fn lps(&self) -> u32 {
        (u64::from(self.campuses) * self.nodes_per_campus()).min(u64::from(u32::MAX)) as u32
    }

    /// Checks the parameters; the error names the parameter and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        use crate::check::*;
        at_least("campuses", u64::from(self.campuses), 1)?;
        at_least("servers", u64::from(self.servers), 1)?;
        at_least("lans-per-net", u64::from(self.lans_per_net), 1)?;
        at_least("clients-per-lan", u64::from(self.clients_per_lan), 1)?;
        let total = u64::from(self.campuses) * self.nodes_per_campus();
        if total > 1 << 24 {
            return Err(format!(
                "the campuses have {total} nodes in all; at most 2^24 are allowed"
            ));
        }
        let routers = u64::from(self.campuses) * (6 + 2 * u64::from(self.lans_per_net));
        if routers > super::MAX_ROUTERS as u64 {
            return Err(format!(
                "campuses × (6 + 2 × lans-per-net) is {routers} routers and switches; at most {} \
                 are allowed",
                super::MAX_ROUTERS
            ));
        }
        nonneg("sample-period", self.sample_period)?;
        positive("lan-bandwidth", self.lan_bandwidth)?;
        positive("lan-delay", self.lan_delay)?;
        positive("backbone-bandwidth", self.backbone_bandwidth)?;
        positive("backbone-delay", self.backbone_delay)?;
        positive("ring-bandwidth", self.ring_bandwidth)?;
        positive("ring-delay", self.ring_delay)?;
        super::check_udp(
            self.packet_bytes,
            self.load,
            self.on_mean,
            self.off_mean,
            self.start_window,
        )
    }

    fn base(&self, c: u32) -> NodeId {
        (u64::from(c) * self.nodes_per_campus()) as NodeId
    }

    /// Server `k` of campus `c`.
    pub fn server(&self, c: u32, k: u32) -> NodeId {
        self.base(c) + 4 + k
    }

    /// The clients of campus `c`, in order.
    pub fn clients(&self, c: u32) -> Vec<NodeId> {
        let mut out = Vec::new();
        let mut at = self.base(c) + 6 + self.servers;
        for _ in 0..2 * self.lans_per_net {
            at += 1; // the switch
            out.extend(at..at + self.clients_per_lan);
            at += self.clients_per_lan;
        }
        out
    }

    /// Builds the network.
    pub fn build(&self) -> Result<NetModel, String> {
        self.validate()?;
        let spec = |bandwidth_bps, delay| LinkSpec {
            bandwidth_bps,
            delay,
            queue_packets: self.queue_packets,
        };
        let lan = spec(self.lan_bandwidth, self.lan_delay);
        let backbone = spec(self.backbone_bandwidth, self.backbone_delay);
        let ring = spec(self.ring_bandwidth, self.ring_delay);
        let mut net = Network::new(self.lps());
        net.carry_data(self.data);
        net.refcount(self.refcount);
        for c in 0..self.campuses {
            let b = self.base(c);
            let (border, r1, r2, s) = (b, b + 1, b + 2, b + 3);
            let (n2, n3) = (b + 4 + self.servers, b + 5 + self.servers);
            net.link(border, r1, backbone)?;
            net.link(border, r2, backbone)?;
            net.link(r1, r2, backbone)?;
            net.link(r1, s, backbone)?;
            for k in 0..self.servers {
                net.link(s, self.server(c, k), lan)?;
            }
            net.link(r2, n2, backbone)?;
            net.link(r2, n3, backbone)?;
            net.link(r1, n3, backbone)?;
            let mut at = n3 + 1;
            for router in [n2, n3] {
                for _ in 0..self.lans_per_net {
                    let switch = at;
                    net.link(router, switch, backbone)?;
                    for k in 1..=self.clients_per_lan {
                        net.link(switch, switch + k, lan)?;
                    }
                    at += 1 + self.clients_per_lan;
                }
            }
        }
        // The ring (one link when there are two campuses).
        if self.campuses >= 2 {
            let links = if self.campuses == 2 { 1 } else { self.campuses };
            for c in 0..links {
                net.link(self.base(c), self.base((c + 1) % self.campuses), ring)?;
            }
        }
        let duty = if self.off_mean == 0.0 {
            1.0
        } else {
            self.on_mean / (self.on_mean + self.off_mean)
        };
        for c in 0..self.campuses {
            let target = (c + 1) % self.campuses;
            for (k, client) in self.clients(c).into_iter().enumerate() {
                net.app(
                    client,
                    OnOff {
                        dst: self.server(target, k as u32 % self.servers),
                        rate_bps: self.load * self.lan_bandwidth / duty,
                        packet_bytes: self.packet_bytes,
                        on_mean: self.on_mean,
                        off_mean: self.off_mean,
                        start: 0.0,
                        start_jitter: self.start_window,
                        stop: f64::INFINITY,
                    },
                )?;
            }
        }
        net.sample_every(self.sample_period)?;
        net.build()
    }
}
