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

/// The termination test of a worker with nothing left before `END` (null messages): receive
/// what is in the mailbox (each received event is executed at once, sending nothing), then
/// publish "idle" and snapshot; stop once the snapshot shows nothing before `END`. Returns how
/// many events the worker received.
fn idle_until_quiescent(gsu: &Gsu, mail: &[Mailbox<EventKey>; 2], me: usize) -> usize {
    const END: f64 = 10.0;
    let mut received = 0;
    let mut s = Snapshot::default();
    loop {
        gsu.receive(
            me,
            &mail[me],
            &mut received,
            |n, _| *n += 1,
            |_| at(f64::INFINITY),
        );
        if gsu.publish_and_snapshot(me, &at(f64::INFINITY), |w| mail[w].min_time(), &mut s) >= END {
            return received;
        }
        thread::yield_now();
    }
}

#[test]
fn a_worker_that_starts_idle_waits_for_the_others_first_events() {
    bounded(|| {
        // Worker 0 starts with an event at 1.0 in its queue (put there before the threads
        // start); worker 1 starts with nothing. Worker 0's event sends one at 2.0 to worker 1.
        let gsu = Arc::new(Gsu::seeded(&[key(1.0), Published::IDLE.moe]));
        let mail = Arc::new([Mailbox::new(), Mailbox::new()]);
        let (g, m) = (gsu.clone(), mail.clone());
        let w0 = thread::spawn(move || {
            g.send(1, &m[1], vec![key(2.0)]);
            g.publish(0, &at(f64::INFINITY));
        });
        // Worker 1 may only conclude "quiescent" after it has received worker 0's message.
        assert_eq!(idle_until_quiescent(&gsu, &mail, 1), 1);
        w0.join().unwrap();
    });
}

#[test]
fn a_worker_that_becomes_idle_with_a_message_to_it_in_flight_does_not_stop() {
    bounded(|| {
        // Worker 0 is executing an event at 0.5 that sends one at 1.0 to worker 1, then has
        // nothing left; worker 1 has just executed its last event at 0.7 and is going idle.
        let gsu = Arc::new(Gsu::seeded(&[key(0.5), key(0.7)]));
        let mail = Arc::new([Mailbox::new(), Mailbox::new()]);
        let (g, m) = (gsu.clone(), mail.clone());
        let w0 = thread::spawn(move || {
            g.send(1, &m[1], vec![key(1.0)]);
            // Worker 0 goes idle too and runs the same termination test.
            idle_until_quiescent(&g, &m, 0)
        });
        assert_eq!(idle_until_quiescent(&gsu, &mail, 1), 1);
        assert_eq!(w0.join().unwrap(), 0);
    });
}
