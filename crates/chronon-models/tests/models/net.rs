use chronon::{Model, QueueKind};
use chronon_models::net::{
    Body, LinkSpec, LocalPayload, NetModel, Network, OnOff, Payload, Refcount,
};
use chronon_models::{Campus, StarClique};

use crate::{check_fingerprints, pending, rel, run, stat};

const LINK: LinkSpec = LinkSpec {
    bandwidth_bps: 1e6,
    delay: 0.01,
    queue_packets: 10,
};

/// A shared-heap body with the local payload's contents.
fn heap_body() -> Body {
    let bytes = chronon::shm::with_thread_heap(|h| h.alloc_bytes_with(500, |b| b.fill(9)))
        .unwrap()
        .unwrap();
    let payload = Payload {
        seq: 9,
        body: bytes,
        multicast: true,
    };
    Body::Heap(chronon::shm::BPtr::new(payload).unwrap())
}

/// Two nodes, one link, one constant-bit-rate source from `start` to `stop`.
fn two_nodes(rate_bps: f64, stop: f64) -> NetModel {
    let mut net = Network::new(2);
    net.link(0, 1, LINK).unwrap();
    net.app(0, OnOff::cbr(1, rate_bps, 1000, 0.0, stop))
        .unwrap();
    net.build().unwrap()
}

/// Below capacity a packet never waits: its latency is transmission time (8000 bits at 1 Mb/s
/// = 8 ms) plus propagation delay (10 ms), and the throughput is the offered rate.
#[test]
fn link_below_capacity_latency_and_throughput() {
    let m = two_nodes(0.5e6, f64::INFINITY);
    let end = 20.0;
    let r = run(m, 2, end, 1, QueueKind::Ladder);
    let latency = stat(&r, "mean_latency");
    let expected = LINK.transmit_time(1000) + LINK.delay;
    assert!((latency - 0.018).abs() < 1e-12 && (expected - 0.018).abs() < 1e-12);
    assert!((latency - expected).abs() < 1e-9, "latency {latency}");
    let throughput = stat(&r, "bytes_received") * 8.0 / end;
    assert!(rel(throughput, 0.5e6) < 0.01, "throughput {throughput}");
    assert_eq!(stat(&r, "packets_dropped"), 0.0);
}

/// Offered twice the bandwidth, the link delivers its bandwidth and drops half. A packet that
/// gets in finds the queue full but for the slot a departure just freed: it waits for the
/// residual transmission and `queue` more, so with arrivals every I its mean latency is
/// (queue + 1) × 8 ms − I / 2 + 10 ms (the residual is uniform over the last I).
#[test]
fn link_above_capacity_saturates() {
    let rate = 1.9e6;
    let m = two_nodes(rate, f64::INFINITY);
    let end = 50.0;
    let r = run(m, 2, end, 1, QueueKind::Ladder);
    let throughput = stat(&r, "bytes_received") * 8.0 / end;
    assert!(rel(throughput, 1e6) < 0.01, "throughput {throughput}");
    let drop_rate = stat(&r, "drop_rate");
    assert!(
        rel(drop_rate, 1.0 - 1e6 / rate) < 0.01,
        "drop rate {drop_rate}"
    );
    let latency = stat(&r, "mean_latency");
    let interval = 8000.0 / rate;
    let full =
        f64::from(LINK.queue_packets + 1) * LINK.transmit_time(1000) - interval / 2.0 + LINK.delay;
    eprintln!("saturated link: latency {latency}, hand computation {full}");
    assert!(rel(latency, full) < 0.01, "latency {latency} vs {full}");
}

/// Conservation: packets sent = received + dropped + in flight, where in flight is counted per
/// link (put on at one end, taken off at the other) and must equal the engine's pending-event
/// count less the model's own pending ticks and emissions. And each
/// on/off source, starting in an on period, sends on average rate × E[on-time in [s, T]], with
/// E[on-time in [0, t]] = duty·t + a/(a+b)²·(1 − e^{−(a+b)t}), a = 1/on, b = 1/off (a
/// two-state Markov chain).
#[test]
fn star_clique_conserves_packets_and_offers_the_load() {
    let m = StarClique {
        stars: 8,
        leaf_bandwidth: 1e6,
        hub_bandwidth: 1e7,
        ..StarClique::default()
    };
    let net = m.build().unwrap();
    let end = 200.0;
    let r = run(net, m.lps(), end, 3, QueueKind::Ladder);
    let sent = stat(&r, "packets_sent");
    let in_flight = stat(&r, "packets_in_flight");
    assert!(sent > 100_000.0);
    assert!(in_flight > 0.0);
    assert_eq!(
        sent,
        stat(&r, "packets_received") + stat(&r, "packets_dropped") + in_flight
    );
    // The links' count of packets in flight is the engine's count of pending packet events.
    assert_eq!(
        in_flight,
        pending(&r) - stat(&r, "sources_active") - stat(&r, "emissions_pending")
    );
    assert_eq!(stat(&r, "packets_unroutable"), 0.0);
    let (a, b) = (1.0 / m.on_mean, 1.0 / m.off_mean);
    let duty = b / (a + b);
    let t = end - m.start_window / 2.0;
    let on_time = duty * t + a / ((a + b) * (a + b)) * (1.0 - (-(a + b) * t).exp());
    let per_source = m.load * m.leaf_bandwidth / duty * on_time / f64::from(m.packet_bytes * 8);
    let sources = f64::from(m.stars * (m.stars - 1));
    let measured = sent / sources;
    eprintln!("star-clique: {measured} packets per source, on/off theory {per_source}");
    assert!(
        rel(measured, per_source) < 0.03,
        "{measured} vs {per_source}"
    );
}

/// When the sources stop and the network drains, nothing is in flight: sent = received +
/// dropped exactly, and no event is left.
#[test]
fn drained_network_has_nothing_in_flight() {
    let mut net = Network::new(5);
    let slow = LinkSpec {
        bandwidth_bps: 2e5,
        ..LINK
    };
    // A star of 4 leaves around node 0, with a slow link to node 4 that drops.
    for leaf in 1..5 {
        net.link(0, leaf, if leaf == 4 { slow } else { LINK })
            .unwrap();
    }
    for src in 1..4 {
        let app = OnOff {
            off_mean: 0.2,
            on_mean: 0.2,
            start_jitter: 0.1,
            ..OnOff::cbr(4, 2e5, 500, 0.0, 30.0)
        };
        net.app(src, app).unwrap();
    }
    let m = net.build().unwrap();
    let r = run(m, 5, 100.0, 9, QueueKind::Ladder);
    assert_eq!(pending(&r), 0.0);
    assert_eq!(stat(&r, "packets_in_flight"), 0.0);
    let (sent, rx, dropped) = (
        stat(&r, "packets_sent"),
        stat(&r, "packets_received"),
        stat(&r, "packets_dropped"),
    );
    assert!(dropped > 100.0 && rx > 1000.0, "rx {rx} dropped {dropped}");
    assert_eq!(sent, rx + dropped);
}

#[test]
fn routes_are_shortest() {
    let m = StarClique::default();
    let net = m.build().unwrap();
    // leaf -> its hub -> other hub -> leaf
    assert_eq!(net.path_len(m.hub(0) + 1, m.hub(1) + 1), Some(3));
    assert_eq!(net.path_len(m.hub(0) + 1, m.hub(0) + 2), Some(2));
    assert_eq!(net.path_len(m.hub(2), m.hub(5)), Some(1));
    let c = Campus::default();
    let net = c.build().unwrap();
    let client = c.clients(0)[0];
    // client, switch, N2, R2, B, B', R1', S', server
    assert_eq!(net.path_len(client, c.server(1, 0)), Some(8));
    // Two campuses away takes the ring either way: one more ring hop.
    assert_eq!(net.path_len(client, c.server(2, 0)), Some(9));
    assert_eq!(c.clients(0).len(), 2 * 2 * 42);
}

#[test]
fn campus_ring_delivers_its_load() {
    let c = Campus {
        campuses: 3,
        lans_per_net: 1,
        clients_per_lan: 20,
        load: 0.002,
        ..Campus::default()
    };
    let net = c.build().unwrap();
    let r = run(net, c.lps(), 3.0, 2, QueueKind::Ladder);
    let sent = stat(&r, "packets_sent");
    let in_flight = stat(&r, "packets_in_flight");
    assert!(sent > 5_000.0, "sent {sent}");
    assert_eq!(stat(&r, "packets_dropped"), 0.0);
    assert_eq!(sent, stat(&r, "packets_received") + in_flight);
    assert_eq!(
        in_flight,
        pending(&r) - stat(&r, "sources_active") - stat(&r, "emissions_pending")
    );
    // Lightly loaded, latency is propagation plus transmission along the 8 hops: client,
    // switch, N2, R2, B, B', R1', S', server — 2 LAN links (0.5 ms, 100 Mb/s) and 6 links of
    // 1 Gb/s (5 backbone at 1 ms, the ring at 10 ms).
    let bits = f64::from(c.packet_bytes) * 8.0;
    let hand = 2.0 * (c.lan_delay + bits / c.lan_bandwidth)
        + 5.0 * (c.backbone_delay + bits / c.backbone_bandwidth)
        + c.ring_delay
        + bits / c.ring_bandwidth;
    let latency = stat(&r, "mean_latency");
    eprintln!("campus: mean latency {latency}, hand computation {hand}");
    assert!(
        latency >= hand - 1e-12 && rel(latency, hand) < 0.001,
        "latency {latency}"
    );
}

/// A node declares one link per neighbour, with lookahead = propagation delay + transmission
/// time of the smallest packet any source sends (here 500 bytes at 1 Mb/s: 4 ms).
#[test]
fn nodes_declare_their_links_with_delay_plus_smallest_transmission() {
    let mut net = Network::new(3);
    net.link(0, 1, LINK).unwrap();
    let slow = LinkSpec {
        bandwidth_bps: 0.5e6,
        delay: 0.02,
        queue_packets: 4,
    };
    net.link(1, 2, slow).unwrap();
    // On/off sources, so that the seed changes the history.
    let onoff = |dst, bytes| OnOff {
        on_mean: 0.1,
        off_mean: 0.1,
        ..OnOff::cbr(dst, 1e5, bytes, 0.0, 10.0)
    };
    net.app(0, onoff(2, 1000)).unwrap();
    net.app(2, onoff(0, 500)).unwrap();
    let m = net.build().unwrap();
    assert_eq!(m.topology(0), Some(vec![(1, 0.01 + 0.004)]));
    assert_eq!(
        m.topology(1),
        Some(vec![(0, 0.01 + 0.004), (2, 0.02 + 0.008)])
    );
    assert_eq!(m.topology(2), Some(vec![(1, 0.02 + 0.008)]));
    // Every executor keeps to them (a send below a link's lookahead would fail the run).
    check_fingerprints(|| m.clone(), 3, 10.0);
}

#[test]
fn fingerprints() {
    let m = StarClique {
        stars: 4,
        leaf_bandwidth: 1e6,
        ..StarClique::default()
    };
    let built = m.build().unwrap();
    assert!(crate::declares_topology(&built, m.lps()));
    check_fingerprints(|| m.build().unwrap(), m.lps(), 3.0);
}

#[test]
fn campus_fingerprints() {
    let c = Campus {
        campuses: 3,
        lans_per_net: 1,
        clients_per_lan: 3,
        load: 0.001,
        ..Campus::default()
    };
    assert!(crate::declares_topology(&c.build().unwrap(), c.lps()));
    check_fingerprints(|| c.build().unwrap(), c.lps(), 0.5);
}

/// Campus packets with bodies (`data`), under every scheme: the events of a packet's hops
/// share its body. Every body arrives intact, and the history is the one without bodies, under
/// the sequential, window, null-message, Time Warp and preemptive Time Warp executors.
#[test]
fn campus_bodies_arrive_intact_and_leave_the_history_alone_under_every_scheme() {
    use chronon::{ConservativeConfig, Executor, Simulation, TimeWarpConfig};
    let campus = |data, refcount| Campus {
        campuses: 2,
        lans_per_net: 1,
        clients_per_lan: 3,
        load: 0.01,
        data,
        refcount,
        ..Campus::default()
    };
    let bare = campus(false, Refcount::Heap);
    let lps = bare.lps();
    let base = run(bare.build().unwrap(), lps, 0.3, 4, QueueKind::Ladder);
    let received = stat(&base, "packets_received");
    assert!(received > 100.0, "received {received}");
    for scheme in Refcount::ALL {
        let executors = [
            Executor::Sequential,
            Executor::Window(ConservativeConfig::new(2)),
            Executor::NullMessage(ConservativeConfig::new(3)),
            Executor::TimeWarp(TimeWarpConfig::new(3)),
            Executor::TimeWarp(TimeWarpConfig::new(2).preempt(true)),
        ];
        for exec in executors {
            let name = format!("{scheme:?} {exec:?}");
            let r = Simulation::new(campus(true, scheme).build().unwrap())
                .lps(lps)
                .end_time(0.3)
                .seed(4)
                .executor(exec)
                .run()
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(r.fingerprint, base.fingerprint, "{name}");
            assert_eq!(stat(&r, "packets_received"), received, "{name}");
            assert_eq!(stat(&r, "data_received"), received, "{name}");
            assert_eq!(stat(&r, "data_corrupt"), 0.0, "{name}");
        }
    }
}

#[test]
fn bad_parameters_are_named() {
    let e = StarClique {
        stars: 1,
        ..StarClique::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("stars"), "{e}");
    let e = Campus {
        ring_delay: 0.0,
        ..Campus::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("ring-delay"), "{e}");
    let mut net = Network::new(2);
    assert!(net.link(0, 0, LINK).is_err());
    assert!(net.link(0, 1, LinkSpec { delay: 0.0, ..LINK }).is_err());
    let mut net = Network::new(3);
    net.link(0, 1, LINK).unwrap();
    net.app(0, OnOff::cbr(2, 1e6, 100, 0.0, 1.0)).unwrap();
    let e = net.build().unwrap_err();
    assert!(e.contains("cannot reach"), "{e}");
}

/// A multicast source sends every packet to three nodes; the copies share one payload (a
/// `chronon::refcount::Shared` with the network's scheme, or a shared-heap `BPtr`): the three
/// packets of an emission hold one body. Every member receives every packet the source emitted
/// that arrived before the end, each body intact, and every executor, under every scheme,
/// commits the same history.
#[test]
fn multicast_copies_share_one_payload_under_every_executor() {
    let make = |scheme: Refcount| {
        let mut net = Network::new(5);
        for leaf in 1..5 {
            net.link(0, leaf, LINK).unwrap();
        }
        net.multicast(1, &[2, 3, 4], OnOff::cbr(0, 0.2e6, 500, 0.0, 4.0))
            .unwrap();
        net.refcount(scheme);
        net.build().unwrap()
    };
    let seq = run(make(Refcount::Heap), 5, 5.0, 1, QueueKind::Ladder);
    let emitted = stat(&seq, "packets_sent");
    // 0.2 Mb/s of 500-byte packets for 4 s: 200 emissions, each copied to 3 members.
    assert_eq!(emitted, 600.0);
    assert_eq!(stat(&seq, "multicast_received"), emitted);
    assert_eq!(stat(&seq, "packets_received"), emitted);
    assert_eq!(stat(&seq, "multicast_corrupt"), 0.0);
    for scheme in Refcount::ALL {
        let model = make(scheme);
        assert_eq!(model.refcount(), scheme);
        let payload = LocalPayload {
            seq: 9,
            bytes: vec![9u8; 500].into_boxed_slice(),
            multicast: true,
        };
        let body = Body::local(scheme, payload).unwrap_or_else(heap_body);
        let copies = model.emission(1, 0, 0.5, Some(body.clone()));
        let to: Vec<u32> = copies.iter().map(|p| p.dst).collect();
        assert_eq!(to, [2, 3, 4], "{scheme:?}");
        for p in &copies {
            let data = p.data.as_ref().expect("a multicast copy carries the body");
            assert!(
                Body::ptr_eq(data, &body),
                "{scheme:?}: a copy has a body of its own"
            );
            assert_eq!(data.scheme(), scheme);
        }
        for exec in crate::parallel_executors() {
            let name = format!("{scheme:?} {exec:?}");
            let r = chronon::Simulation::new(make(scheme))
                .lps(5)
                .end_time(5.0)
                .seed(1)
                .executor(exec)
                .run()
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(r.fingerprint, seq.fingerprint, "{name}");
            assert_eq!(r.model_stats, seq.model_stats, "{name}");
        }
    }
    let mut net = Network::new(3);
    net.link(0, 1, LINK).unwrap();
    net.link(1, 2, LINK).unwrap();
    let cbr = OnOff::cbr(0, 1e5, 500, 0.0, 1.0);
    assert!(net.multicast(0, &[], cbr).unwrap_err().contains("empty"));
    assert!(net
        .multicast(0, &[1, 1], cbr)
        .unwrap_err()
        .contains("listed once"));
    assert!(net
        .multicast(0, &[0], cbr)
        .unwrap_err()
        .contains("not the source"));
    assert!(net.multicast(0, &[7], cbr).unwrap_err().contains("below 3"));
}

/// `Campus::sample_period`: throughput samples in `model_series`, identical under every
/// executor; the cumulative bytes match the final `bytes_received` figure at the last sample's
/// time or below it.
#[test]
fn campus_throughput_series_is_the_same_under_every_executor() {
    use chronon::{Executor, Simulation};
    let c = Campus {
        campuses: 2,
        clients_per_lan: 3,
        sample_period: 0.05,
        ..Campus::default()
    };
    let go = |exec: Executor| {
        let m = c.build().unwrap();
        let lps = m.lps();
        Simulation::new(m)
            .lps(lps)
            .end_time(0.5)
            .seed(5)
            .executor(exec)
            .run()
            .expect("the run succeeds")
    };
    let seq = go(Executor::Sequential);
    let bps = &seq.model_series["throughput_bps"];
    let bytes = &seq.model_series["bytes_received"];
    assert_eq!(bps.len(), bytes.len());
    assert!(bps.len() >= 9, "{bps:?}");
    assert!(bps.iter().skip(2).all(|&(_, v)| v > 0.0), "{bps:?}");
    assert!(bytes.last().unwrap().1 <= stat(&seq, "bytes_received"));
    for exec in crate::parallel_executors() {
        let name = format!("{exec:?}");
        let r = go(exec);
        assert_eq!(r.model_series, seq.model_series, "{name}");
    }
}
