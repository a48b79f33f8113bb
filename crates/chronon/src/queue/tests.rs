//! Both queues against a sorted reference, ties included.

use proptest::prelude::*;

use super::{HeapQueue, LadderQueue, PendingSet};
use crate::event::EventKey;

#[derive(Clone, Debug)]
enum Op {
    Push(f64),
    Pop,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    // Times from a small grid (many exact ties) mixed with arbitrary ones; runs of pushes so the
    // ladder builds rungs, bottoms that spill, and pushes that land below the current bucket.
    let time = prop_oneof![
        (0u32..8).prop_map(|x| f64::from(x) * 0.25),
        0.0f64..1000.0,
        (0u32..4).prop_map(|x| 1e-300 * f64::from(x)),
    ];
    prop::collection::vec(
        prop_oneof![3 => time.prop_map(Op::Push), 2 => Just(Op::Pop)],
        0..3000,
    )
}

fn check<Q: PendingSet<EventKey>>(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut q = Q::new();
    // Keys are unique, so an ordered set is a sorted reference.
    let mut reference = std::collections::BTreeSet::new();
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Push(time) => {
                let k = EventKey {
                    time,
                    src: (i % 3) as u32,
                    seq: i as u64,
                };
                q.push(k);
                reference.insert(k);
            }
            Op::Pop => {
                let want = reference.pop_first();
                prop_assert_eq!(q.peek().copied(), want);
                prop_assert_eq!(q.pop(), want);
            }
        }
        prop_assert_eq!(q.len(), reference.len());
    }
    drains_like(&mut q, reference)
}

/// Pops `q` to the end, checking each pop against `reference` (its sorted contents).
fn drains_like<Q: PendingSet<EventKey>>(
    q: &mut Q,
    mut reference: std::collections::BTreeSet<EventKey>,
) -> Result<(), TestCaseError> {
    while let Some(want) = reference.pop_first() {
        prop_assert_eq!(q.pop(), Some(want));
    }
    prop_assert_eq!(q.pop(), None);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn heap_matches_sorted_reference(ops in ops()) {
        check::<HeapQueue<EventKey>>(&ops)?;
    }

    #[test]
    fn ladder_matches_sorted_reference(ops in ops()) {
        check::<LadderQueue<EventKey>>(&ops)?;
    }
}

/// A hold model (pop one, push one later) as simulations use the queue, with many events.
#[test]
fn ladder_and_heap_agree_on_a_long_hold_run() {
    let mut rng = crate::rng::LpRng::from_seed(5);
    let mut ladder = LadderQueue::new();
    let mut heap = HeapQueue::new();
    let mut seq = 0u64;
    for _ in 0..20_000 {
        let k = EventKey {
            time: rng.exponential_mean(1.0),
            src: rng.below(50) as u32,
            seq,
        };
        seq += 1;
        ladder.push(k);
        heap.push(k);
    }
    for _ in 0..200_000 {
        let a = ladder.pop().unwrap();
        let b = heap.pop().unwrap();
        assert_eq!(a, b);
        // Zero increments create exact ties at the current time.
        let inc = if rng.bernoulli(0.1) {
            0.0
        } else {
            rng.exponential_mean(1.0)
        };
        let k = EventKey {
            time: a.time + inc,
            src: rng.below(50) as u32,
            seq,
        };
        seq += 1;
        ladder.push(k);
        heap.push(k);
    }
    assert_eq!(ladder.len(), heap.len());
}

/// A top large enough to be split into segments (`segments.rs`; unit tests split tops of 300
/// events or more), then inserts into every segment, into the top, below the segments and
/// into the past, popped against the heap: the segments keep the exact order.
#[test]
fn ladder_with_a_split_top_matches_the_heap() {
    let mut rng = crate::rng::LpRng::from_seed(11);
    let mut ladder = LadderQueue::new();
    let mut heap = HeapQueue::new();
    let mut seq = 0u64;
    let mut push = |t: f64, ladder: &mut LadderQueue<EventKey>, heap: &mut HeapQueue<EventKey>| {
        let k = EventKey {
            time: t,
            src: 0,
            seq,
        };
        seq += 1;
        ladder.push(k);
        heap.push(k);
    };
    let mut most = 0;
    for round in 0..6 {
        // A fresh large top: uniform times, a block of ties and a far tail.
        let base = heap.peek().map_or(0.0, |k: &EventKey| k.time);
        for i in 0..4000 {
            let t = match i % 10 {
                0 => base + 50.0,
                1 => base + 1000.0 * rng.uniform(),
                _ => base + 100.0 * rng.uniform(),
            };
            push(t, &mut ladder, &mut heap);
        }
        for _ in 0..3000 + round * 500 {
            let a = ladder.pop().unwrap();
            assert_eq!(Some(a), heap.pop());
            most = most.max(ladder.segments());
            let t = match rng.below(5) {
                0 => a.time,
                1 => a.time + 100.0 * rng.uniform(),
                2 => a.time + 2000.0 * rng.uniform(),
                3 => (a.time - rng.uniform()).max(0.0),
                _ => a.time + rng.exponential_mean(1.0),
            };
            push(t, &mut ladder, &mut heap);
        }
    }
    while let Some(a) = ladder.pop() {
        assert_eq!(Some(a), heap.pop());
    }
    assert!(heap.pop().is_none());
    assert!(
        most >= 2,
        "the top was never split (at most {most} segments)"
    );
}

/// Operations that hit the ladder's worst cases: equal times, keys below the last popped one
/// (Time Warp rollbacks), time bands nested deeper than the rungs, bursts that fill the bottom.
#[derive(Clone, Debug)]
enum Adv {
    /// Push at an absolute time.
    Push(f64),
    /// Push at the last popped time plus this (negative: into the past).
    PushRel(f64),
    /// Push this many events at one absolute time.
    Burst(u16, f64),
    /// Push events at `base + 2^-k` for `k` in `0..n`: more nested bands than rungs.
    Bands(u8, f64),
    /// Pop this many.
    Pop(u16),
    /// Re-insert the last this many popped keys, as a rollback does.
    Rollback(u16),
}

fn adversarial_ops() -> impl Strategy<Value = Vec<Adv>> {
    let time = prop_oneof![
        3 => Just(1.0),
        1 => (0u32..4).prop_map(f64::from),
        1 => 0.0f64..8.0,
    ];
    let rel = prop_oneof![
        Just(0.0),
        -2.0f64..2.0,
        (0i32..60).prop_map(|k| -(2f64.powi(-k))),
    ];
    prop::collection::vec(
        prop_oneof![
            4 => time.clone().prop_map(Adv::Push),
            4 => rel.prop_map(Adv::PushRel),
            1 => (1u16..700, time.clone()).prop_map(|(n, t)| Adv::Burst(n, t)),
            1 => (1u8..64, time).prop_map(|(n, t)| Adv::Bands(n, t)),
            5 => (1u16..40).prop_map(Adv::Pop),
            2 => (1u16..60).prop_map(Adv::Rollback),
        ],
        0..400,
    )
}

/// Runs `ops` on `Q` and on a sorted reference, comparing every pop and peek.
fn check_adversarial<Q: PendingSet<EventKey>>(ops: &[Adv]) -> Result<(), TestCaseError> {
    let mut q = Q::new();
    let mut reference = std::collections::BTreeSet::new();
    let mut popped: Vec<EventKey> = Vec::new();
    let mut seq = 0u64;
    let mut push = |q: &mut Q, reference: &mut std::collections::BTreeSet<EventKey>, t: f64| {
        // Times are non-negative and never -0.0 (EventKey's contract).
        let time = if t > 0.0 { t } else { 0.0 };
        let k = EventKey {
            time,
            src: (seq % 3) as u32,
            seq,
        };
        seq += 1;
        q.push(k);
        reference.insert(k);
    };
    for op in ops {
        let now = popped.last().map_or(0.0, |k| k.time);
        match *op {
            Adv::Push(t) => push(&mut q, &mut reference, t),
            Adv::PushRel(d) => push(&mut q, &mut reference, now + d),
            Adv::Burst(n, t) => (0..n).for_each(|_| push(&mut q, &mut reference, t)),
            Adv::Bands(n, t) => {
                (0..n).for_each(|k| push(&mut q, &mut reference, t + 2f64.powi(-i32::from(k))))
            }
            Adv::Pop(n) => {
                for _ in 0..n {
                    let want = reference.pop_first();
                    prop_assert_eq!(q.peek().copied(), want);
                    prop_assert_eq!(q.pop(), want);
                    popped.extend(want);
                }
            }
            Adv::Rollback(n) => {
                for _ in 0..n {
                    let Some(k) = popped.pop() else { break };
                    q.push(k);
                    reference.insert(k);
                }
            }
        }
        prop_assert_eq!(q.len(), reference.len());
    }
    drains_like(&mut q, reference)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn heap_matches_reference_on_adversarial_patterns(ops in adversarial_ops()) {
        check_adversarial::<HeapQueue<EventKey>>(&ops)?;
    }

    #[test]
    fn ladder_matches_reference_on_adversarial_patterns(ops in adversarial_ops()) {
        check_adversarial::<LadderQueue<EventKey>>(&ops)?;
    }
}

/// Drives `ops` steps of a hold model on a ladder and a heap whose pending set starts with
/// `initial` events at `first(i)`; each step pops one event and pushes `next(popped, step)`, and
/// every `rollback_every` steps (if non-zero) the last 64 popped events are pushed back, as a
/// Time Warp rollback does. Returns the ladder's work counter divided by the number of
/// operations, after checking that both queues pop the same sequence.
fn work_per_op(
    initial: usize,
    first: impl Fn(usize) -> f64,
    mut next: impl FnMut(EventKey, usize) -> f64,
    steps: usize,
    rollback_every: usize,
) -> u64 {
    let mut ladder = LadderQueue::new();
    let mut heap = HeapQueue::new();
    let mut seq = 0u64;
    let mut operations = 0u64;
    let mut key = |time: f64| {
        seq += 1;
        EventKey {
            time,
            src: (seq % 7) as u32,
            seq,
        }
    };
    for i in 0..initial {
        let k = key(first(i));
        ladder.push(k);
        heap.push(k);
        operations += 1;
    }
    let mut popped = Vec::new();
    for step in 0..steps {
        let a = ladder.pop().expect("an event");
        assert_eq!(Some(a), heap.pop());
        popped.push(a);
        let k = key(next(a, step));
        ladder.push(k);
        heap.push(k);
        operations += 2;
        if rollback_every > 0 && step % rollback_every == rollback_every - 1 {
            for _ in 0..64 {
                let Some(k) = popped.pop() else { break };
                ladder.push(k);
                heap.push(k);
                operations += 1;
            }
        }
    }
    while let Some(a) = ladder.pop() {
        assert_eq!(Some(a), heap.pop());
        operations += 1;
    }
    assert_eq!(heap.pop(), None);
    ladder.work / operations
}

/// A quadratic bottom shifts or rescans about half the pending events per insert (tens of
/// thousands here); the bound is one bottom's worth.
const WORK_PER_OP_MAX: u64 = super::ladder::BOTTOM_SPILL as u64;

#[test]
fn ladder_work_stays_bounded_with_all_equal_times() {
    // 100k events at one time, then 100k hold steps at that same time.
    let w = work_per_op(100_000, |_| 1.0, |a, _| a.time, 100_000, 0);
    assert!(w <= WORK_PER_OP_MAX, "{w} shifts or scans per operation");
}

#[test]
fn ladder_work_stays_bounded_under_rollbacks() {
    // Hold steps with many zero increments; every 50 steps the last 64 events come back.
    let mut rng = crate::rng::LpRng::from_seed(11);
    let w = work_per_op(
        50_000,
        |i| (i % 100) as f64 * 0.01,
        |a, _| {
            if rng.bernoulli(0.5) {
                a.time
            } else {
                a.time + rng.exponential_mean(0.01)
            }
        },
        150_000,
        50,
    );
    assert!(w <= WORK_PER_OP_MAX, "{w} shifts or scans per operation");
}

/// `2^-k` exactly, for `k` in `0..=1074` (subnormals included).
fn pow2_neg(k: u64) -> f64 {
    if k <= 1022 {
        f64::from_bits((1023 - k) << 52)
    } else {
        f64::from_bits(1 << (1074 - k))
    }
}

#[test]
fn ladder_work_stays_bounded_with_more_bands_than_rungs() {
    // Times 2^-k for every k: each rung's first bucket holds all the smaller bands, so a split
    // peels off only ~14 bands and the rungs run out with most events left in one bucket, which
    // becomes the bottom. Pushes then land anywhere inside it.
    let mut rng = crate::rng::LpRng::from_seed(12);
    let w = work_per_op(
        60_000,
        |i| pow2_neg(i as u64 % 1075),
        |a, _| a.time + pow2_neg(rng.below(1075)),
        100_000,
        0,
    );
    assert!(w <= WORK_PER_OP_MAX, "{w} shifts or scans per operation");
}

/// An event that owns heap memory, to check that the ladder's chunks move every payload intact
/// (a slot read twice or never would show as a wrong or missing payload, or a double free) and
/// that a dropped ladder drops the events still in its buckets.
struct Owned {
    key: EventKey,
    payload: std::sync::Arc<u64>,
}

impl crate::event::Keyed for Owned {
    fn key(&self) -> EventKey {
        self.key
    }
}

#[test]
fn ladder_moves_owned_payloads_intact_and_drops_the_rest() {
    let witness = std::sync::Arc::new(0u64);
    let mut q = LadderQueue::<Owned>::new();
    let mut reference = std::collections::BTreeSet::new();
    let mut rng = crate::rng::LpRng::from_seed(7);
    for i in 0..20_000u64 {
        let time = (rng.next_u64() % 100_000) as f64 * 0.01 + (i / 4) as f64 * 0.001;
        let key = EventKey {
            time,
            seq: i,
            src: (i % 5) as u32,
        };
        reference.insert(key);
        q.push(Owned {
            key,
            payload: std::sync::Arc::new(i),
        });
        if i % 3 == 0 {
            let want = reference.pop_first().unwrap();
            let got = q.pop().unwrap();
            assert_eq!(got.key, want);
            assert_eq!(*got.payload, want.seq);
        }
    }
    // Events left in buckets, in the bottom and in the top, each holding the witness.
    for _ in 0..10 {
        let got = q.pop().unwrap();
        assert_eq!(got.key, reference.pop_first().unwrap());
        assert_eq!(*got.payload, got.key.seq);
    }
    let left = q.len();
    assert!(left > 10_000);
    let witness_of = |_: &Owned| std::sync::Arc::clone(&witness);
    // Swap every payload for the witness: the queue then holds `left` counts of it.
    let mut all = Vec::new();
    while let Some(e) = q.pop() {
        all.push(e);
    }
    for e in all.iter_mut() {
        e.payload = witness_of(e);
    }
    for e in all {
        q.push(e);
    }
    for _ in 0..100 {
        q.pop();
    }
    assert_eq!(std::sync::Arc::strong_count(&witness), 1 + left - 100);
    drop(q);
    assert_eq!(std::sync::Arc::strong_count(&witness), 1);
}
