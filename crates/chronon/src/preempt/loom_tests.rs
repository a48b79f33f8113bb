//! Loom model of check-and-switch against BH_min: a sender pushes an earlier message and lowers
//! the register while the worker runs an event and checks at its platform-mode returns; once
//! the push has completed (as the worker can know it), a check either fires or the message was
//! already taken by the worker's flush: it is never missed. Run with
//! `RUSTFLAGS="--cfg chronon_loom" CARGO_TARGET_DIR=target/loom cargo test -p chronon --release --lib loom`.

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

use super::{earlier_waits, BhMin};
use crate::comm::Mailbox;
use crate::event::EventKey;

fn key(time: f64, src: u32) -> EventKey {
    EventKey { time, src, seq: 0 }
}

#[test]
fn a_check_after_an_earlier_push_never_misses_it() {
    loom::model(|| {
        let m = Arc::new(Mailbox::new());
        let pushed = Arc::new(AtomicBool::new(false));
        let (m2, p2) = (m.clone(), pushed.clone());
        // Another worker sends a straggler (time 1) and a later event (time 9).
        let sender = thread::spawn(move || {
            m2.push(key(9.0, 1));
            m2.push(key(1.0, 0));
            p2.store(true, SeqCst);
        });
        // The owner runs an event at time 5: check, maybe switch and flush, check again.
        let now = 5.0;
        let mut got = Vec::new();
        for _ in 0..2 {
            let done = pushed.load(SeqCst);
            let fire = earlier_waits(m.bh_min(), now);
            let already = got.iter().any(|t: &f64| *t < now);
            if done && !already {
                assert!(fire, "a completed earlier push was missed by the check");
            }
            if fire {
                // Switch: the platform flushes the bottom half.
                m.take(|e| got.push(e.time));
            }
        }
        sender.join().unwrap();
        m.take(|e| got.push(e.time));
        got.sort_by(f64::total_cmp);
        assert_eq!(got, vec![1.0, 9.0]);
    });
}
