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

#[test]
fn recycled_batches_lose_no_event_and_no_batch() {
    use super::{Batch, BatchPool};
    // Bounded preemptions keep the model small enough to finish; 3 covers a give-back racing
    // a take_all and a push racing a take.
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let m = Arc::new(Mailbox::new());
        let pools: Arc<[BatchPool<EventKey>; 2]> = Arc::new([BatchPool::new(), BatchPool::new()]);
        // Producer 0 sends two batches, reusing whatever came back to its pool; producer 1
        // sends one.
        let hs: Vec<_> = (0..2u32)
            .map(|p| {
                let (m, pools) = (m.clone(), pools.clone());
                thread::spawn(move || {
                    let mut spare = Vec::new();
                    let mut allocated = 0;
                    for i in 0..2 - p {
                        pools[p as usize].take_all(&mut spare);
                        let mut b = spare.pop().unwrap_or_else(|| {
                            allocated += 1;
                            Batch::new(p)
                        });
                        assert!(b.is_empty());
                        b.push(key(f64::from(i), p));
                        m.push_batch_node(b);
                    }
                    (allocated, spare.len())
                })
            })
            .collect();
        let mut got = Vec::new();
        let consume = |got: &mut Vec<u32>| {
            m.take_batches(|mut b| {
                b.drain_into(&mut |e| got.push(e.src));
                pools[b.owner().unwrap()].give_back(b);
            })
        };
        consume(&mut got);
        let ends: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        consume(&mut got);
        got.sort();
        assert_eq!(got, vec![0, 0, 1], "every event exactly once");
        // Every batch a producer allocated is in its hands or back in its pool.
        for (p, (allocated, kept)) in ends.into_iter().enumerate() {
            let mut back = Vec::new();
            pools[p].take_all(&mut back);
            assert_eq!(allocated, kept + back.len(), "producer {p} lost a batch");
        }
    });
}
