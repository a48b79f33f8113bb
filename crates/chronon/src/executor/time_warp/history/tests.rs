//! The arena against a reference model: per LP, a plain vector of records.
//!
//! Random sequences of process (append a record to an LP, in its time order and not before
//! GVT), roll back (undo an LP's newest uncommitted records through the chain links) and commit
//! (raise GVT, commit what is older, free the front) and, under reverse computation, commit one
//! LP's records early (a safe event's LP, safe.rs) are applied to both; after every step the
//! committed sequence per LP, the events rolled back, every LP's chain, and the extras read back
//! must agree, and once everything is committed the arena must be empty.

use proptest::prelude::*;

use super::*;
use crate::event::{Event, EventKey};

#[derive(Clone, Debug)]
enum Op {
    Process { lp: usize, dt: u8, sends: u8 },
    Rollback { lp: usize, k: u8 },
    Commit { dg: u8 },
    CommitLp { lp: usize },
}

fn op(lps: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..lps, 0..4u8, 0..3u8).prop_map(|(lp, dt, sends)| Op::Process { lp, dt, sends }),
        1 => (0..lps, 1..4u8).prop_map(|(lp, k)| Op::Rollback { lp, k }),
        1 => (0..3u8).prop_map(|dg| Op::Commit { dg }),
        1 => (0..lps).prop_map(|lp| Op::CommitLp { lp }),
    ]
}

/// A reference record: its id, time, and the ids its sends carried.
#[derive(Clone, Debug, PartialEq)]
struct RefRec {
    id: u64,
    time: f64,
    sends: Vec<u64>,
}

fn record(lp: u32, time: f64, id: u64, prev: u64, log_at: u64, sent: u32) -> Rec<u32> {
    Rec {
        ev: TwEvent::plain(
            Event::new(
                EventKey {
                    time,
                    src: 0,
                    seq: id,
                },
                lp,
                0,
            ),
            id,
        ),
        meta: LpMeta::new(1, lp),
        prev,
        log_at,
        info: Info::new(sent, 1, false),
    }
}

/// The LP's chain from `last`, newest first, stopping at a freed or committed record.
fn chain(h: &History<u32>, mut seq: u64) -> Vec<u64> {
    let mut ids = Vec::new();
    while let Some(r) = h.get(seq) {
        if r.info.committed() {
            break;
        }
        ids.push(r.ev.id);
        seq = r.prev;
    }
    ids
}

fn run(ops: Vec<Op>, lps: usize, drop_at_commit: bool) -> Result<(), TestCaseError> {
    let mut h: History<u32> = History::default();
    let mut last = vec![NONE; lps];
    // Reference: per LP, uncommitted records in order; committed ids in commit order.
    let mut pending: Vec<Vec<RefRec>> = vec![Vec::new(); lps];
    let mut committed_ref: Vec<Vec<u64>> = vec![Vec::new(); lps];
    let mut committed_got: Vec<Vec<u64>> = vec![Vec::new(); lps];
    let mut freed = 0u64;
    let mut g = 0.0f64;
    let mut next_id = 0u64;
    for op in ops.into_iter().chain([Op::Commit { dg: u8::MAX }]) {
        match op {
            Op::Process { lp, dt, sends } => {
                let floor = pending[lp].last().map_or(g, |r| r.time.max(g));
                let time = floor + f64::from(dt);
                let id = next_id;
                next_id += 1;
                let log_at = h.log_next();
                let mut ids = Vec::new();
                for s in 0..u64::from(sends) {
                    let sid = id * 10 + s;
                    h.push_extra(Extra::Sent(Sent {
                        dst: 0,
                        time,
                        id: sid,
                    }));
                    ids.push(sid);
                }
                h.push_extra(Extra::Count(lp as u32, id as i64));
                let rec = record(lp as u32, time, id, last[lp], log_at, u32::from(sends));
                last[lp] = h.push(rec, None);
                pending[lp].push(RefRec {
                    id,
                    time,
                    sends: ids,
                });
            }
            Op::Rollback { lp, k } => {
                for _ in 0..k {
                    let Some(want) = pending[lp].pop() else { break };
                    let r = h.take(last[lp]);
                    prop_assert_eq!(r.ev.id, want.id);
                    let sends: Vec<u64> = (0..u64::from(r.info.sent()))
                        .map(|i| match h.extra(r.log_at + i) {
                            Extra::Sent(s) => s.id,
                            Extra::Count(..) => u64::MAX,
                        })
                        .collect();
                    prop_assert_eq!(&sends, &want.sends);
                    last[lp] = r.prev;
                }
            }
            Op::CommitLp { lp } if drop_at_commit => {
                // As `Worker::safe_now`: the chain newest first, committed oldest first.
                committed_ref[lp].extend(pending[lp].drain(..).map(|r| r.id));
                let mut seqs = Vec::new();
                let mut seq = last[lp];
                while let Some(r) = h.get(seq) {
                    seqs.push(seq);
                    seq = r.prev;
                }
                for &seq in seqs.iter().rev() {
                    h.commit_early(seq, |r, extras| {
                        let counts: Vec<Extra> = extras.copied().collect();
                        assert!(
                            matches!(counts.as_slice(), [Extra::Count(l, id)] if *l as usize == lp && *id as u64 == r.ev.id),
                            "wrong counter deltas {counts:?}"
                        );
                        committed_got[lp].push(r.ev.id);
                    });
                }
            }
            Op::CommitLp { .. } => {}
            Op::Commit { dg } => {
                g = if dg == u8::MAX {
                    f64::INFINITY
                } else {
                    g + f64::from(dg)
                };
                for (lp, p) in pending.iter_mut().enumerate() {
                    let n = p.iter().take_while(|r| r.time < g).count();
                    committed_ref[lp].extend(p.drain(..n).map(|r| r.id));
                }
                let got = &mut committed_got;
                h.commit_older(
                    g,
                    |r, extras| {
                        let lp = r.ev.dst as usize;
                        let counts: Vec<Extra> = extras.copied().collect();
                        match counts.as_slice() {
                            [Extra::Count(l, id)] if *l as usize == lp && *id as u64 == r.ev.id => {
                            }
                            other => panic!("wrong counter deltas {other:?}"),
                        }
                        got[lp].push(r.ev.id);
                        Ok::<bool, ()>(drop_at_commit)
                    },
                    |_, _| (),
                )
                .expect("no errors");
                h.free_front(|r| {
                    assert!(r.info.committed(), "only committed records are handed out");
                    freed += 1;
                });
            }
        }
        prop_assert_eq!(&committed_got, &committed_ref);
        for lp in 0..lps {
            let mut want: Vec<u64> = pending[lp].iter().map(|r| r.id).collect();
            want.reverse();
            prop_assert_eq!(chain(&h, last[lp]), want, "chain of LP {}", lp);
        }
        let uncommitted: usize = pending.iter().map(Vec::len).sum();
        prop_assert!(h.live() >= uncommitted as u64);
        prop_assert_eq!(h.uncommitted_newest_first().count(), uncommitted);
    }
    // Everything committed: the arena and its log are empty.
    prop_assert_eq!(h.live(), 0);
    prop_assert!(h.slots.is_empty());
    prop_assert!(h.log.is_empty());
    let total: u64 = committed_ref.iter().map(|c| c.len() as u64).sum();
    if !drop_at_commit {
        prop_assert_eq!(
            freed,
            total,
            "copy saving hands every committed record out once"
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn arena_matches_a_per_lp_reference(
        ops in prop::collection::vec(op(4), 0..120),
        drop_at_commit in any::<bool>(),
    ) {
        run(ops, 4, drop_at_commit)?;
    }
}

#[test]
fn a_record_with_an_empty_payload_takes_72_bytes() {
    // Entry 32 (time, seq, id, src, dst), meta 16, prev 8, log_at 8, sends 4, counts 2; the
    // two flags fill the rest and give `Option` its niche (no extra tag).
    assert_eq!(std::mem::size_of::<Option<Rec<()>>>(), 72);
    assert_eq!(std::mem::size_of::<Extra>(), 32);
}

#[test]
fn a_record_info_keeps_its_fields_apart() {
    let i = Info::new(u32::MAX, u16::MAX, true);
    assert_eq!(
        (i.sent(), i.counts(), i.error(), i.committed()),
        (u32::MAX, u16::MAX, true, false)
    );
    let j = Info::new(3, 0, false);
    assert_eq!(
        (j.sent(), j.counts(), j.error(), j.committed()),
        (3, 0, false, false)
    );
}
