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
            time: rng.exponential(1.0),
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
            rng.exponential(1.0)
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
