use std::sync::Arc;

use super::Mailbox;
use crate::event::EventKey;

fn key(time: f64, src: u32, seq: u64) -> EventKey {
    EventKey { time, src, seq }
}

#[test]
fn take_returns_everything_and_resets_the_register() {
    let m = Mailbox::new();
    assert!(m.min_time().is_infinite());
    m.push_batch(vec![key(3.0, 0, 0), key(2.0, 0, 1)]);
    m.push(key(5.0, 1, 0));
    assert_eq!(m.min_time(), 2.0);
    let mut got = Vec::new();
    assert_eq!(m.take(|e| got.push(e)), 3);
    got.sort();
    assert_eq!(got, vec![key(2.0, 0, 1), key(3.0, 0, 0), key(5.0, 1, 0)]);
    assert!(m.min_time().is_infinite());
    assert!(m.is_empty());
}

#[test]
fn threads_lose_nothing_and_drop_frees_the_rest() {
    let m = Arc::new(Mailbox::new());
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let m = m.clone();
            std::thread::spawn(move || {
                for i in 0..2000u64 {
                    m.push(key(i as f64, p, i));
                }
            })
        })
        .collect();
    let mut got = 0;
    while got < 8000 {
        got += m.take(|_| {});
        std::thread::yield_now();
    }
    for p in producers {
        p.join().unwrap();
    }
    assert_eq!(got, 8000);
    // Leftovers are dropped with the mailbox (checked under Miri/ASan; here it must not crash).
    m.push(key(1.0, 0, 0));
}

#[test]
fn batches_return_to_their_owner_and_are_reused() {
    use super::{Batch, BatchPool};
    let m = Mailbox::new();
    let pools: Vec<BatchPool<EventKey>> = (0..2).map(|_| BatchPool::new()).collect();
    let mut spare: Vec<Vec<Batch<EventKey>>> = vec![Vec::new(), Vec::new()];
    let mut allocated = [0; 2];
    let mut got = Vec::new();
    for round in 0..10u64 {
        for owner in 0..2u32 {
            let o = owner as usize;
            pools[o].take_all(&mut spare[o]);
            let mut b = spare[o].pop().unwrap_or_else(|| {
                allocated[o] += 1;
                Batch::new(owner)
            });
            assert!(b.is_empty(), "a batch comes back empty");
            assert_eq!(b.owner(), Some(o));
            b.push(key(round as f64, owner, round));
            b.push(key(round as f64 + 0.5, owner, round));
            m.push_batch_node(b);
        }
        assert_eq!(m.min_time(), round as f64);
        m.take_batches(|mut b| {
            b.drain_into(&mut |e| got.push(e));
            pools[b.owner().expect("owned")].give_back(b);
        });
    }
    assert_eq!(got.len(), 40);
    // Each round reuses the batch that came back: one allocation per owner in the whole run.
    assert_eq!(allocated, [1, 1]);
    for (o, p) in pools.iter().enumerate() {
        p.take_all(&mut spare[o]);
        assert_eq!(spare[o].len(), 1, "owner {o}'s batch is back");
    }
    // A batch from a vector has no owner and is freed once taken.
    m.push_batch(vec![key(1.0, 0, 0)]);
    m.take_batches(|b| assert_eq!(b.owner(), None));
}
