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

/// The arena under test beside the reference: per LP, uncommitted records in order and
/// committed ids in commit order (expected and seen).
struct Check {
    h: History<u32>,
    last: Vec<u64>,
    pending: Vec<Vec<RefRec>>,
    committed_ref: Vec<Vec<u64>>,
    committed_got: Vec<Vec<u64>>,
    freed: u64,
    g: f64,
    next_id: u64,
    drop_at_commit: bool,
}

impl Check {
    fn new(lps: usize, drop_at_commit: bool) -> Self {
        Check {
            h: History::default(),
            last: vec![NONE; lps],
            pending: vec![Vec::new(); lps],
            committed_ref: vec![Vec::new(); lps],
            committed_got: vec![Vec::new(); lps],
            freed: 0,
            g: 0.0,
            next_id: 0,
            drop_at_commit,
        }
    }

    fn process(&mut self, lp: usize, dt: u8, sends: u8) {
        let h = &mut self.h;
        let floor = self.pending[lp]
            .last()
            .map_or(self.g, |r| r.time.max(self.g));
        let time = floor + f64::from(dt);
        let id = self.next_id;
        self.next_id += 1;
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
        let rec = record(lp as u32, time, id, self.last[lp], log_at, u32::from(sends));
        self.last[lp] = h.push(rec, None);
        self.pending[lp].push(RefRec {
            id,
            time,
            sends: ids,
        });
    }

    fn rollback(&mut self, lp: usize, k: u8) -> Result<(), TestCaseError> {
        for _ in 0..k {
            let Some(want) = self.pending[lp].pop() else {
                break;
            };
            let r = self.h.take(self.last[lp]);
            prop_assert_eq!(r.ev.id, want.id);
            let sends: Vec<u64> = (0..u64::from(r.info.sent()))
                .map(|i| match self.h.extra(r.log_at + i) {
                    Extra::Sent(s) => s.id,
                    Extra::Count(..) => u64::MAX,
                })
                .collect();
            prop_assert_eq!(&sends, &want.sends);
            self.last[lp] = r.prev;
        }
        Ok(())
    }

    /// As `Worker::safe_now`: the chain newest first, committed oldest first.
    fn commit_lp(&mut self, lp: usize) {
        let h = &mut self.h;
        self.committed_ref[lp].extend(self.pending[lp].drain(..).map(|r| r.id));
        let mut seqs = Vec::new();
        let mut seq = self.last[lp];
        while let Some(r) = h.get(seq) {
            seqs.push(seq);
            seq = r.prev;
        }
        let got = &mut self.committed_got;
        for &seq in seqs.iter().rev() {
            h.commit_early(seq, |r, extras| {
                let counts: Vec<Extra> = extras.copied().collect();
                assert!(
                    matches!(counts.as_slice(), [Extra::Count(l, id)] if *l as usize == lp && *id as u64 == r.ev.id),
                    "wrong counter deltas {counts:?}"
                );
                got[lp].push(r.ev.id);
            });
        }
    }

    fn commit(&mut self, dg: u8) {
        self.g = if dg == u8::MAX {
            f64::INFINITY
        } else {
            self.g + f64::from(dg)
        };
        let g = self.g;
        for (lp, p) in self.pending.iter_mut().enumerate() {
            let n = p.iter().take_while(|r| r.time < g).count();
            self.committed_ref[lp].extend(p.drain(..n).map(|r| r.id));
        }
        let got = &mut self.committed_got;
        let drop_at_commit = self.drop_at_commit;
        self.h
            .commit_older(
                g,
                |r, extras| {
                    let lp = r.ev.dst as usize;
                    let counts: Vec<Extra> = extras.copied().collect();
                    match counts.as_slice() {
                        [Extra::Count(l, id)] if *l as usize == lp && *id as u64 == r.ev.id => {}
                        other => panic!("wrong counter deltas {other:?}"),
                    }
                    got[lp].push(r.ev.id);
                    Ok::<bool, ()>(drop_at_commit)
                },
                |_, _| (),
            )
            .expect("no errors");
        let freed = &mut self.freed;
        self.h.free_front(|r| {
            assert!(r.info.committed(), "only committed records are handed out");
            *freed += 1;
        });
    }

    /// After each step: the commit order, every LP's chain, the counts of live records.
    fn agrees(&self) -> Result<(), TestCaseError> {
        prop_assert_eq!(&self.committed_got, &self.committed_ref);
        for (lp, p) in self.pending.iter().enumerate() {
            let mut want: Vec<u64> = p.iter().map(|r| r.id).collect();
            want.reverse();
            prop_assert_eq!(chain(&self.h, self.last[lp]), want, "chain of LP {}", lp);
        }
        let uncommitted: usize = self.pending.iter().map(Vec::len).sum();
        prop_assert!(self.h.live() >= uncommitted as u64);
        prop_assert_eq!(self.h.uncommitted_newest_first().count(), uncommitted);
        Ok(())
    }
}

fn run(ops: Vec<Op>, lps: usize, drop_at_commit: bool) -> Result<(), TestCaseError> {
    let mut c = Check::new(lps, drop_at_commit);
    for op in ops.into_iter().chain([Op::Commit { dg: u8::MAX }]) {
        match op {
            Op::Process { lp, dt, sends } => c.process(lp, dt, sends),
            Op::Rollback { lp, k } => c.rollback(lp, k)?,
            Op::CommitLp { lp } if drop_at_commit => c.commit_lp(lp),
            Op::CommitLp { .. } => {}
            Op::Commit { dg } => c.commit(dg),
        }
        c.agrees()?;
    }
    // Everything committed: the arena and its log are empty.
    prop_assert_eq!(c.h.live(), 0);
    prop_assert!(c.h.slots.is_empty());
    prop_assert!(c.h.log.is_empty());
    let total: u64 = c.committed_ref.iter().map(|c| c.len() as u64).sum();
    if !drop_at_commit {
        prop_assert_eq!(
            c.freed,
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
