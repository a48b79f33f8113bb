//! Loom models of the mailbox: conservation (every event taken exactly once) and the register
//! invariant (an event pushed and not yet taken is never below the register).

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

use super::Mailbox;
use crate::event::EventKey;

fn key(time: f64, src: u32) -> EventKey {
    EventKey { time, src, seq: 0 }
}

#[test]
fn every_event_is_taken_exactly_once() {
    loom::model(|| {
        let m = Arc::new(Mailbox::new());
        let hs: Vec<_> = (0..2)
            .map(|p| {
                let m = m.clone();
                thread::spawn(move || m.push(key(f64::from(p), p)))
            })
            .collect();
        let mut got = Vec::new();
        m.take(|e| got.push(e.src));
        for h in hs {
            h.join().unwrap();
        }
        m.take(|e| got.push(e.src));
        got.sort();
        assert_eq!(got, vec![0, 1]);
    });
}

#[test]
fn register_never_exceeds_a_waiting_event() {
    loom::model(|| {
        let m = Arc::new(Mailbox::new());
        let sent = Arc::new(AtomicBool::new(false));
        let (m2, sent2) = (m.clone(), sent.clone());
        let producer = thread::spawn(move || {
            m2.push(key(1.0, 0));
            sent2.store(true, SeqCst);
        });
        let mut taken = m.take(|_| {});
        if sent.load(SeqCst) && taken == 0 {
            // The event is in the mailbox: the register must not hide it.
            assert!(m.min_time() <= 1.0);
        }
        producer.join().unwrap();
        taken += m.take(|_| {});
        assert_eq!(taken, 1);
    });
}
