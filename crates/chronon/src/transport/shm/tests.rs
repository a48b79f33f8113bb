//! The ring mesh on its own, with plain `u64` records (time = value): layout and ends, the
//! stash's order and register, the bounded-wait push with make room and give up, the ring
//! capacity setting.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use super::ends::Ends;
use super::mesh::{parse_ring_cap, Mesh, Record, RING_CAP};
use super::part::MeshPart;
use super::SharedEnds;
use crate::shm::{Control, Segment};

impl Record for u64 {
    fn time(&self) -> f64 {
        *self as f64
    }
}

/// A mesh of `workers` workers with a 64-byte header, attached twice (two "processes").
fn two_attachments(workers: usize) -> (Mesh, Mesh) {
    let seg = Mesh::create::<u64>(64, workers).unwrap();
    let seg2 = Segment::from_fd(seg.fd().try_clone_to_owned().unwrap()).unwrap();
    (
        Mesh::attach::<u64>(seg, 64, workers).unwrap(),
        Mesh::attach::<u64>(seg2, 64, workers).unwrap(),
    )
}

fn take_all(e: &mut Ends<u64>) -> Vec<(usize, u64)> {
    let mut got = Vec::new();
    e.take(true, |s, r| got.push((s, r)));
    got
}

#[test]
fn the_header_is_the_callers_and_rings_join_every_pair() {
    let (a, b) = two_attachments(3);
    // The header is shared and left to the caller (zeroed).
    // Safety: 64 header bytes at the start of the mapped segment; one thread.
    unsafe {
        assert_eq!(a.header().cast::<u64>().as_ptr().read(), 0);
        a.header().cast::<u64>().as_ptr().write(7);
        assert_eq!(b.header().cast::<u64>().as_ptr().read(), 7);
    }
    let mut e0 = a.ends::<u64>(0);
    let mut e2 = b.ends::<u64>(2);
    let mut e1 = b.ends::<u64>(1);
    let never = || -> bool { panic!("no ring is full") };
    assert!(e0.push(2, &mut vec![5, 3], |_| {}, never));
    assert!(e1.push(2, &mut vec![9], |_| {}, never));
    assert_eq!(a.register(0, 2).unwrap().min_time(), 3.0);
    assert!(a.register(1, 1).is_none());
    assert!(e2.has_mail() && !e0.has_mail());
    assert_eq!(e2.mail_min(), 3.0);
    assert_eq!(take_all(&mut e2), [(0, 5), (0, 3), (1, 9)]);
    assert!(!e2.has_mail());
    assert_eq!(e2.mail_min(), f64::INFINITY);
}

#[test]
#[should_panic(expected = "another record type")]
fn ends_of_another_record_type_are_refused() {
    let (a, _) = two_attachments(2);
    let _ = a.ends::<u32>(0);
}

impl Record for u32 {
    fn time(&self) -> f64 {
        f64::from(*self)
    }
}

#[test]
fn per_sender_the_stash_comes_before_the_ring() {
    let (a, b) = two_attachments(3);
    let (mut e0, mut e1, mut e2) = (a.ends::<u64>(0), a.ends::<u64>(1), b.ends::<u64>(2));
    let never = || -> bool { panic!("no ring is full") };
    assert!(e0.push(2, &mut vec![10, 11], |_| {}, never));
    assert!(e1.push(2, &mut vec![20], |_| {}, never));
    assert_eq!(e2.absorb(), 10.0);
    assert!(e2.has_mail() && !e2.rings_hold_mail());
    assert_eq!(e2.mail_min(), 10.0);
    assert!(e0.push(2, &mut vec![4], |_| {}, never));
    assert_eq!(e2.mail_min(), 4.0);
    // Only rings whose register is finite unless `all`: sender 1's ring is empty.
    let mut got = Vec::new();
    assert_eq!(e2.take(false, |s, r| got.push((s, r))), 4);
    assert_eq!(got, [(0, 10), (0, 11), (0, 4), (1, 20)]);
}

/// A full ring: the push waits, calls make room and retries until the receiver took enough;
/// `give_up` ends it with the rest kept in the batch.
#[test]
fn a_full_ring_makes_room_retries_and_gives_up_on_request() {
    let (a, b) = two_attachments(2);
    let (mut e0, mut e1) = (a.ends::<u64>(0), b.ends::<u64>(1));
    let cap = a.cap() as u64;
    let mut batch: Vec<u64> = (0..cap + 3).collect();
    let mut calls = 0;
    assert!(!e0.push(1, &mut batch, |_| calls += 1, || true));
    assert_eq!((batch.len(), calls, e0.full_retries()), (3, 0, 1));
    // The receiver absorbs while the sender waits: room appears, every record arrives once.
    std::thread::scope(|s| {
        s.spawn(|| {
            while e1.absorb() == f64::INFINITY {
                std::thread::yield_now();
            }
        });
        assert!(e0.push(1, &mut batch, |_| {}, || false));
    });
    let got: Vec<u64> = take_all(&mut e1).into_iter().map(|(_, r)| r).collect();
    assert_eq!(got, (0..cap + 3).collect::<Vec<_>>());
}

/// Two workers flood each other without receiving: each push makes room by absorbing its own
/// inbox, so neither deadlocks, and every record arrives once, in order. A worker that is
/// done keeps absorbing until the other is (as at an end barrier).
#[test]
fn two_workers_flooding_each_other_never_deadlock() {
    const N: u64 = 20_000;
    let (a, b) = two_attachments(2);
    let done = AtomicUsize::new(0);
    let run = |mesh: &Mesh, me: usize| {
        let mut e = mesh.ends::<u64>(me);
        for chunk in 0..N / 100 {
            let mut batch: Vec<u64> = (chunk * 100..(chunk + 1) * 100).collect();
            assert!(e.push(1 - me, &mut batch, |e| _ = e.absorb(), || false));
        }
        done.fetch_add(1, SeqCst);
        while done.load(SeqCst) < 2 {
            e.absorb();
            std::thread::yield_now();
        }
        e
    };
    let (mut ea, mut eb) = std::thread::scope(|s| {
        let ha = s.spawn(|| run(&a, 0));
        let hb = s.spawn(|| run(&b, 1));
        (ha.join().unwrap(), hb.join().unwrap())
    });
    let want: Vec<u64> = (0..N).collect();
    for e in [&mut ea, &mut eb] {
        let got: Vec<u64> = take_all(e).into_iter().map(|(_, r)| r).collect();
        assert_eq!(got, want);
    }
}

/// Two processes' parts of one mesh run of two workers (a 64-byte header), one control
/// segment.
fn two_parts() -> (MeshPart, MeshPart) {
    let seg = Mesh::create::<u64>(64, 2).unwrap();
    let seg2 = Segment::from_fd(seg.fd().try_clone_to_owned().unwrap()).unwrap();
    let control = Control::create(2).unwrap();
    (
        MeshPart::attach::<u64>(seg, 64, control.clone(), 2, 0).unwrap(),
        MeshPart::attach::<u64>(seg2, 64, control, 2, 1).unwrap(),
    )
}

#[test]
fn a_part_of_another_run_is_refused() {
    let seg = Mesh::create::<u64>(64, 2).unwrap();
    let control = Control::create(3).unwrap();
    let e = MeshPart::attach::<u64>(seg, 64, control, 2, 0).unwrap_err();
    assert!(e.to_string().contains("do not match this run"), "{e}");
    let (a, _) = two_parts();
    let e = SharedEnds::<u64, ()>::new(a, 1, 2, |_| ()).unwrap_err();
    assert!(e.to_string().contains("do not match this run"), "{e}");
}

/// A part's push on a full ring gives up, with the rest kept in the batch and no absorb,
/// when the run is over or aborted (by any process); each try counts a full retry.
#[test]
fn a_part_push_gives_up_when_the_run_is_over_or_aborted() {
    let (a, b) = two_parts();
    let mut e0 = a.mesh.ends::<u64>(0);
    let cap = a.mesh.cap() as u64;
    let mut batch: Vec<u64> = (0..cap + 3).collect();
    let no_absorb = |_: &mut Ends<u64>| panic!("gave up without absorbing");
    assert!(!a.push(&mut e0, 1, &mut batch, no_absorb, || true));
    assert_eq!((batch.len(), e0.full_retries()), (3, 1));
    assert!(!a.aborted());
    b.abort();
    assert!(a.aborted() && b.aborted());
    assert!(!a.push(&mut e0, 1, &mut batch, no_absorb, || false));
    assert_eq!((batch.len(), e0.full_retries()), (3, 2));
    // Nothing was lost: the receiver finds the ring's records in order.
    let got: Vec<u64> = take_all(&mut b.mesh.ends::<u64>(1))
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    assert_eq!(got, (0..cap).collect::<Vec<_>>());
}

#[test]
fn shared_ends_lock_per_worker_and_meet_at_the_end_barrier() {
    let (a, b) = two_parts();
    let a = SharedEnds::<u64, u32>::new(a, 0, 1, |w| w as u32).unwrap();
    let b = SharedEnds::<u64, u32>::new(b, 1, 1, |w| w as u32).unwrap();
    assert_eq!((a.lock(0).local, b.lock(1).local), (0, 1));
    assert!(a.lock(0).ends.push(1, &mut vec![3], |_| {}, || false));
    std::thread::scope(|s| {
        s.spawn(|| assert!(a.end_barrier(0)));
        assert!(b.end_barrier(1));
    });
    // The waiting receiver absorbed (or the record is still in its ring): it is there once.
    assert_eq!(b.lock(1).ends.mail_min(), 3.0);
    assert_eq!(take_all(&mut b.lock(1).ends), [(0, 3)]);
    assert!(!a.part().aborted());
    b.part().abort();
    assert!(a.part().aborted());
}

#[test]
fn the_ring_capacity_is_a_power_of_two_in_range_or_the_default() {
    assert_eq!(parse_ring_cap(None), RING_CAP);
    assert_eq!(parse_ring_cap(Some("4")), 4);
    assert_eq!(parse_ring_cap(Some("2")), 2);
    assert_eq!(parse_ring_cap(Some("1048576")), 1 << 20);
    for bad in ["0", "1", "3", "2097152", "x", ""] {
        assert_eq!(parse_ring_cap(Some(bad)), RING_CAP, "{bad}");
    }
}
