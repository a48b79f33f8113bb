//! Loom models of the shared-memory protocols (README.md): the ring (conservation and order,
//! the register bound, no lost wake-up of a waiting sender) and the heap's free path (the
//! return stack and the last-reference decision). Threads stand in for processes: the
//! protocols use nothing process-specific but the memory they share.

use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::retstack;
use super::ring::local_ring;

/// Every record pushed is drained exactly once and in order, through a ring smaller than the
/// number of records (so the producer also meets a full ring).
#[test]
fn ring_delivers_every_record_once_in_order() {
    loom::model(|| {
        let (mut p, mut c) = local_ring::<u32>(2);
        let producer = thread::spawn(move || {
            let mut batch = vec![1, 2, 3];
            while !batch.is_empty() {
                if p.try_push_batch(&mut batch, |&v| f64::from(v)) == 0 {
                    thread::yield_now();
                }
            }
        });
        let mut got = Vec::new();
        while got.len() < 3 {
            if c.drain(|v| got.push(v)) == 0 {
                thread::yield_now();
            }
        }
        producer.join().unwrap();
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(c.drain(|_| {}), 0);
    });
}

/// A record that was published and not drained is never below the register (R2).
#[test]
fn ring_register_never_exceeds_a_waiting_record() {
    loom::model(|| {
        let (mut p, mut c) = local_ring::<u32>(2);
        let sent = Arc::new(AtomicBool::new(false));
        let sent2 = sent.clone();
        let producer = thread::spawn(move || {
            p.try_push_batch(&mut vec![5], |_| 1.0);
            sent2.store(true, Ordering::SeqCst);
        });
        let mut taken = c.drain(|_| {});
        if sent.load(Ordering::SeqCst) && taken == 0 {
            assert!(c.min_time() <= 1.0, "the register hides a waiting record");
        }
        producer.join().unwrap();
        taken += c.drain(|_| {});
        assert_eq!(taken, 1);
    });
}

/// Check-and-switch across processes (executor/time_warp/README.md, "BH_min across
/// processes"): a worker's BH_min is the minimum of its incoming rings' registers and of its
/// private stash. One ring already holds a later record (9); another worker pushes an earlier
/// one (1) into the second ring while the owner, running an event at 5, checks, flushes when the
/// check fires, and in between absorbs its rings into the stash (as a sender facing a full
/// ring does). A check after the push completed fires unless the record was already taken.
#[test]
fn bh_min_over_rings_and_stash_never_misses_a_completed_push() {
    loom::model(|| {
        let (mut pa, mut ca) = local_ring::<u32>(2);
        let (mut pb, mut cb) = local_ring::<u32>(2);
        pa.try_push_batch(&mut vec![9], |&v| f64::from(v));
        let pushed = Arc::new(AtomicBool::new(false));
        let pushed2 = pushed.clone();
        let sender = thread::spawn(move || {
            pb.try_push_batch(&mut vec![1], |&v| f64::from(v));
            pushed2.store(true, Ordering::SeqCst);
        });
        let now = 5.0;
        let (mut stash, mut got) = (Vec::<f64>::new(), Vec::<f64>::new());
        for round in 0..2 {
            let done = pushed.load(Ordering::SeqCst);
            let bh_min = stash
                .iter()
                .copied()
                .fold(ca.min_time().min(cb.min_time()), f64::min);
            let fire = bh_min < now;
            if done && !got.iter().any(|&t| t < now) {
                assert!(fire, "a completed earlier push was missed by the check");
            }
            if fire {
                // Switch: the platform takes the stash, then the rings.
                got.append(&mut stash);
                ca.drain(|v| got.push(f64::from(v)));
                cb.drain(|v| got.push(f64::from(v)));
            }
            if round == 0 {
                // The worker absorbs its rings into its stash (a full outgoing ring).
                ca.drain(|v| stash.push(f64::from(v)));
                cb.drain(|v| stash.push(f64::from(v)));
            }
        }
        sender.join().unwrap();
        got.append(&mut stash);
        ca.drain(|v| got.push(f64::from(v)));
        cb.drain(|v| got.push(f64::from(v)));
        got.sort_by(f64::total_cmp);
        assert_eq!(got, [1.0, 9.0]);
    });
}

/// A sender that finds the ring full and decides to sleep on the space word with the value it
/// saw is always woken: by the time the consumer's drain is over, the word has changed (R3).
#[test]
fn ring_waiting_sender_is_never_left_asleep() {
    loom::model(|| {
        let (mut p, mut c) = local_ring::<u32>(2);
        p.try_push_batch(&mut vec![1, 2], |_| 0.0); // full
        let producer = thread::spawn(move || {
            let decision = p.prepare_wait();
            (decision, p)
        });
        c.drain(|_| {});
        let (decision, p) = producer.join().unwrap();
        if let Some(seen) = decision {
            assert_ne!(
                p.space_word(),
                seen,
                "a sleeping sender would miss the wake-up"
            );
        }
    });
}

/// Two processes drop the last two references of an item while the owner collects: exactly one
/// of them returns it, the owner takes it exactly once, and it sees the time-to-zero written
/// by whoever returned it (H1–H3). Item offsets are 1..=2; index 0 is unused.
#[test]
fn free_path_returns_each_item_exactly_once() {
    loom::model(|| {
        let head = Arc::new(AtomicU32::new(0));
        let refs = Arc::new([AtomicU32::new(0), AtomicU32::new(2), AtomicU32::new(1)]);
        let next = Arc::new([AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)]);
        let ttz = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
        // Thread t drops one reference to item 1 and, for t = 1, the only one to item 2.
        let droppers: Vec<_> = (0..2u32)
            .map(|t| {
                let (head, refs, next, ttz) =
                    (head.clone(), refs.clone(), next.clone(), ttz.clone());
                thread::spawn(move || {
                    let items: &[usize] = if t == 0 { &[1] } else { &[1, 2] };
                    for &i in items {
                        if refs[i].fetch_sub(1, Ordering::Release) == 1 {
                            fence(Ordering::Acquire);
                            ttz[i].store(10 + u64::from(t), Ordering::Relaxed);
                            retstack::push(&head, i as u32, &next[i]);
                        }
                    }
                })
            })
            .collect();
        let mut taken = Vec::new();
        let collect = |taken: &mut Vec<(u32, u64)>| {
            let mut off = retstack::take_all(&head);
            while off != 0 {
                let t = ttz[off as usize].load(Ordering::Relaxed);
                assert!(t == 10 || t == 11, "time-to-zero not visible: {t}");
                taken.push((off, t));
                off = retstack::next_of(&next[off as usize]);
            }
        };
        collect(&mut taken);
        for d in droppers {
            d.join().unwrap();
        }
        collect(&mut taken);
        let mut offs: Vec<u32> = taken.iter().map(|&(o, _)| o).collect();
        offs.sort();
        assert_eq!(offs, [1, 2]);
        assert!(taken.contains(&(2, 11)));
    });
}
