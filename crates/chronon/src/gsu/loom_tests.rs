//! Loom models of the GSU: no snapshot misses a message in flight, whether it is being sent
//! (the sender raises its MOE right after) or received (the receiver takes it out of MOM).

use loom::sync::Arc;
use loom::thread;

const PREEMPTIONS: usize = 2;

use super::{Gsu, Published, Snapshot};
use crate::comm::Mailbox;
use crate::event::EventKey;

fn at(t: f64) -> Published {
    Published {
        moe: EventKey {
            time: t,
            src: 0,
            seq: 0,
        },
        bound: t,
        flags: 0,
        aux: f64::INFINITY,
    }
}

fn key(time: f64) -> EventKey {
    EventKey {
        time,
        src: 0,
        seq: 0,
    }
}

#[test]
fn a_message_being_sent_is_never_missed() {
    bounded(|| {
        let gsu = Arc::new(Gsu::new(2));
        let mail = Arc::new([Mailbox::new(), Mailbox::new()]);
        // Worker 0 is executing an event at 0.5 that sends one at 1.0 to worker 1.
        gsu.publish(0, &at(0.5));
        let (g, m) = (gsu.clone(), mail.clone());
        let sender = thread::spawn(move || {
            g.send(1, &m[1], vec![key(1.0)]);
            g.publish(0, &at(f64::INFINITY));
        });
        let mut s = Snapshot::default();
        gsu.snapshot(|w| mail[w].min_time(), &mut s);
        assert!(s.lbts() <= 1.0, "lbts {} misses the message", s.lbts());
        sender.join().unwrap();
    });
}

#[test]
fn a_message_being_received_is_never_missed() {
    bounded(|| {
        let gsu = Arc::new(Gsu::new(2));
        let mail = Arc::new([Mailbox::new(), Mailbox::new()]);
        gsu.send(1, &mail[1], vec![key(1.0)]);
        let (g, m) = (gsu.clone(), mail.clone());
        let receiver = thread::spawn(move || {
            let mut min = f64::INFINITY;
            g.receive(1, &m[1], &mut min, |m, e| *m = m.min(e.time), |_| at(1.0));
            assert_eq!(min, 1.0);
        });
        let mut s = Snapshot::default();
        gsu.snapshot(|w| mail[w].min_time(), &mut s);
        assert!(s.lbts() <= 1.0, "lbts {} misses the message", s.lbts());
        receiver.join().unwrap();
        gsu.snapshot(|w| mail[w].min_time(), &mut s);
        assert_eq!(s.in_transit(), 0);
    });
}

/// Loom with a preemption bound (the spin loops make the full state space explode; bounded
/// preemption still covers every interleaving with a few context switches).
fn bounded(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(PREEMPTIONS);
    b.max_branches = 100_000;
    b.check(f);
}
