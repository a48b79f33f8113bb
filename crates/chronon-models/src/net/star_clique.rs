//! The star-of-stars UDP network of seed 000, §4.2 (run there on GTNetS).
//!
//! `stars` stars (one per partition in the seed: set it to the number of workers), each a hub
//! with `stars − 1` leaves; the hubs form a clique. Leaf `j` (1 ≤ j < stars) of star `s` runs a
//! UDP on/off source towards leaf `j` of star `(s + j) mod stars`, so every star sends to every
//! other star through one of its leaves and every leaf also sinks exactly one flow. Packets are
//! `packet_bytes` (1024) bytes; each source averages `load` (20 %) of its access link's
//! bandwidth, with exponential on and off periods; sources start at a uniform time in the first
//! `start_window` (0.5) seconds.
//!
//! Node `s · stars` is hub `s`, nodes `s · stars + j` its leaves, so a block partition of the
//! LPs puts one star on each worker, as in the seed.

use super::{LinkSpec, NetModel, Network, OnOff, Refcount};

/// The star-clique network's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StarClique {
    /// Stars (the seed's number of LPs / partitions); at least 2.
    pub stars: u32,
    /// Leaf–hub link bandwidth, bits per second.
    pub leaf_bandwidth: f64,
    /// Leaf–hub link delay, seconds.
    pub leaf_delay: f64,
    /// Hub–hub link bandwidth, bits per second.
    pub hub_bandwidth: f64,
    /// Hub–hub link delay, seconds.
    pub hub_delay: f64,
    /// Packets each link direction may queue.
    pub queue_packets: u32,
    /// Bytes per UDP packet.
    pub packet_bytes: u32,
    /// Mean sending rate as a fraction of the leaf link's bandwidth.
    pub load: f64,
    /// Mean on period, seconds.
    pub on_mean: f64,
    /// Mean off period, seconds.
    pub off_mean: f64,
    /// Sources start uniformly in `[0, start_window)`.
    pub start_window: f64,
    /// Packets carry `packet_bytes` of data in shared-heap items (`BPtr`s), as GTNetS packets
    /// carry their PDUs; what the copy transport copies ([`Network::carry_data`]).
    pub data: bool,
    /// How the packets' bodies are counted ([`Network::refcount`]; seed 001 §3.3).
    pub refcount: Refcount,
}

impl Default for StarClique {
    fn default() -> Self {
        StarClique {
            stars: 8,
            leaf_bandwidth: 10e6,
            leaf_delay: 1e-3,
            hub_bandwidth: 100e6,
            hub_delay: 10e-3,
            queue_packets: 100,
            packet_bytes: 1024,
            load: 0.2,
            on_mean: 0.5,
            off_mean: 0.5,
            start_window: 0.5,
            data: true,
            refcount: Refcount::Heap,
        }
    }
}

impl StarClique {
    /// The number of LPs: `stars²` nodes.
    pub fn lps(&self) -> u32 {
        self.stars.saturating_mul(self.stars)
    }

    /// Checks the parameters; the error names the parameter and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        use crate::check::*;
        at_least("stars", u64::from(self.stars), 2)?;
        if self.stars > 256 {
            return Err(format!(
                "stars is {}; it must be at most 256 (the hubs form a clique)",
                self.stars
            ));
        }
        positive("leaf-bandwidth", self.leaf_bandwidth)?;
        positive("leaf-delay", self.leaf_delay)?;
        positive("hub-bandwidth", self.hub_bandwidth)?;
        positive("hub-delay", self.hub_delay)?;
        super::check_udp(
            self.packet_bytes,
            self.load,
            self.on_mean,
            self.off_mean,
            self.start_window,
        )
    }

    /// The hub of star `s`.
    pub fn hub(&self, s: u32) -> u32 {
        s * self.stars
    }

    /// Builds the network.
    pub fn build(&self) -> Result<NetModel, String> {
        self.validate()?;
        let n = self.stars;
        let mut net = Network::new(self.lps());
        net.carry_data(self.data);
        net.refcount(self.refcount);
        let leaf = LinkSpec {
            bandwidth_bps: self.leaf_bandwidth,
            delay: self.leaf_delay,
            queue_packets: self.queue_packets,
        };
        let hub = LinkSpec {
            bandwidth_bps: self.hub_bandwidth,
            delay: self.hub_delay,
            queue_packets: self.queue_packets,
        };
        for s in 0..n {
            for j in 1..n {
                net.link(self.hub(s), self.hub(s) + j, leaf)?;
            }
            for t in s + 1..n {
                net.link(self.hub(s), self.hub(t), hub)?;
            }
        }
        // While on, send at load × bandwidth × (on + off) / on, so the mean is load × bandwidth.
        let duty = if self.off_mean == 0.0 {
            1.0
        } else {
            self.on_mean / (self.on_mean + self.off_mean)
        };
        for s in 0..n {
            for j in 1..n {
                let t = (s + j) % n;
                net.app(
                    self.hub(s) + j,
                    OnOff {
                        dst: self.hub(t) + j,
                        rate_bps: self.load * self.leaf_bandwidth / duty,
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
        net.build()
    }
}
