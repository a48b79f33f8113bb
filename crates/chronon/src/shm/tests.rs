//! Unit tests of the shared-memory building blocks inside one process (cross-process tests:
//! `tests/shm_procs.rs`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::gsu::{Published, Snapshot};

/// A heap owner number no other test in this process uses (the registry is process-wide).
fn fresh_owner() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(100);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

fn small_heap(counts: u32) -> Heap {
    Heap::new(
        fresh_owner(),
        HeapConfig::empty().class(16, counts).class(256, counts),
    )
    .unwrap()
}

#[test]
fn segment_is_private_sealed_and_shared_by_descriptor() {
    let seg = Segment::create(10).unwrap();
    assert_eq!(seg.len() % page_size(), 0);
    let st = rustix::fs::fstat(seg.fd()).unwrap();
    assert_eq!(st.st_mode & 0o777, 0o600);
    // Sealed: nobody can shrink it under another process's mapping.
    assert!(rustix::fs::ftruncate(seg.fd(), 0).is_err());
    // A second mapping of the same descriptor sees the same bytes at another address.
    let other = Segment::from_fd(seg.fd().try_clone_to_owned().unwrap()).unwrap();
    assert_ne!(other.base(), seg.base());
    // Safety: both map at least one page; this test is the only user.
    unsafe {
        seg.base().as_ptr().write(42);
        assert_eq!(other.base().as_ptr().read(), 42);
    }
    // An ordinary file is refused (it could shrink under the mapping).
    let file = std::fs::File::open("/proc/self/exe").unwrap();
    assert!(Segment::from_fd(file.into()).is_err());
    // Opening through /proc works for the same user.
    use std::os::fd::AsRawFd;
    let third = Segment::open_remote(std::process::id(), seg.fd().as_raw_fd()).unwrap();
    // Safety: as above.
    assert_eq!(unsafe { third.base().as_ptr().read() }, 42);
}

#[test]
fn ring_keeps_order_capacity_and_register() {
    let (mut p, mut c) = local_ring::<(f64, u32)>(4);
    assert_eq!(c.min_time(), f64::INFINITY);
    let mut batch: Vec<_> = (0..6).map(|i| (10.0 - f64::from(i), i)).collect();
    assert_eq!(p.try_push_batch(&mut batch, |r| r.0), 4);
    assert_eq!(batch.len(), 2, "the unsent rest stays with the sender");
    assert!(c.min_time() <= 7.0);
    let mut got = Vec::new();
    assert_eq!(c.drain(|r| got.push(r.1)), 4);
    assert_eq!(c.min_time(), f64::INFINITY);
    assert_eq!(p.try_push_batch(&mut batch, |r| r.0), 2);
    c.drain(|r| got.push(r.1));
    assert_eq!(got, (0..6).collect::<Vec<_>>());
}

#[test]
fn ring_bounded_wait_times_out_and_keeps_the_batch() {
    let (mut p, _c) = local_ring::<u64>(2);
    let mut batch = vec![1, 2, 3];
    let t = Instant::now();
    let err = p
        .push_batch(&mut batch, |_| 0.0, Duration::from_millis(30))
        .unwrap_err();
    assert!(t.elapsed() >= Duration::from_millis(30));
    assert_eq!(err, Full { unsent: 1 });
    assert_eq!(batch, vec![3]);
}

/// Two workers fill each other's tiny rings: with the bounded wait each gives up, drains its
/// own inbox and retries, so both finish and every record arrives once, in order.
#[test]
fn rings_between_two_busy_workers_never_deadlock() {
    const N: u64 = 5000;
    let (p01, c01) = local_ring::<u64>(4);
    let (p10, c10) = local_ring::<u64>(4);
    let work = |mut out: Producer<u64>, mut inbox: Consumer<u64>| {
        move || {
            let mut got = Vec::new();
            let mut next = 0;
            while next < N || (got.len() as u64) < N {
                if next < N {
                    let mut batch: Vec<u64> = (next..(next + 16).min(N)).collect();
                    let k = batch.len() as u64;
                    let _ = out.push_batch(&mut batch, |&v| v as f64, Duration::from_micros(200));
                    next += k - batch.len() as u64;
                }
                inbox.drain(|v| got.push(v));
            }
            got
        }
    };
    let a = std::thread::spawn(work(p01, c10));
    let b = std::thread::spawn(work(p10, c01));
    for h in [a, b] {
        assert_eq!(h.join().unwrap(), (0..N).collect::<Vec<_>>());
    }
}

#[test]
fn ring_in_a_segment() {
    let seg = Arc::new(Segment::create(ring_bytes::<u32>(8)).unwrap());
    // Safety: fresh segment, large enough, page aligned; one producer and one consumer.
    let (mut p, mut c) = unsafe {
        init_ring::<u32>(seg.base(), 8);
        (
            Producer::<u32>::attach(seg.base(), seg.clone()),
            Consumer::<u32>::attach(seg.base(), seg.clone()),
        )
    };
    // Safety: as above; a register view only reads.
    let reg = unsafe { RingRegister::attach(seg.base(), seg.clone()) };
    let mut b = vec![7, 8, 9];
    p.push_batch(&mut b, |&v| f64::from(v), Duration::from_millis(1))
        .unwrap();
    assert_eq!((c.min_time(), reg.min_time()), (7.0, 7.0));
    let mut got = Vec::new();
    c.drain(|v| got.push(v));
    assert_eq!(got, [7, 8, 9]);
    assert_eq!(reg.min_time(), f64::INFINITY);
}

#[test]
fn bptr_derefs_counts_and_frees() {
    let mut heap = small_heap(4);
    heap.set_gvt(f64::INFINITY); // conservative: immediate reuse
    let a = heap.alloc([1u64, 2]).unwrap();
    assert_eq!(std::mem::size_of_val(&a), 8);
    assert_eq!(*a, [1, 2]);
    let b = a.clone();
    assert_eq!(BPtr::ref_count(&a), 2);
    drop(a);
    assert_eq!(BPtr::ref_count(&b), 1);
    assert_eq!(heap.stats().outstanding, 1);
    drop(b);
    let s = heap.stats();
    assert_eq!((s.outstanding, s.dormant, s.free), (0, 0, 8));
}

#[test]
fn dormant_items_wait_until_gvt_passes_their_time_to_zero() {
    let mut heap = small_heap(1);
    let a = heap.alloc(5u32).unwrap();
    let (h, off) = a.parts();
    a.release_at(10.0);
    // The 16-byte class has one item, now dormant: a new allocation cannot reuse it.
    let b = heap.alloc(6u32).unwrap();
    assert_ne!(
        b.parts(),
        (h, off),
        "reused before GVT passed its time-to-zero"
    );
    assert_eq!(heap.stats().segments, 2, "the heap grew instead");
    for gvt in [5.0, 10.0] {
        heap.set_gvt(gvt);
        assert_eq!(heap.stats().dormant, 1, "GVT {gvt} has not passed 10");
    }
    heap.set_gvt(10.5);
    let s = heap.stats();
    // The 16-byte item back, the unused 256-byte one, and 1 of the 2 items of 16 bytes in
    // the growth segment (which holds only the class that ran out, twice as many).
    assert_eq!((s.dormant, s.free), (0, 3));
    // Reused now (the free list hands out the item that came back last).
    let c = heap.alloc(7u32).unwrap();
    assert_eq!(c.parts(), (h, off));
    assert_eq!((*b, *c), (6, 7));
}

#[test]
fn thread_time_is_the_time_to_zero() {
    let mut heap = small_heap(2);
    heap.set_gvt(3.0);
    set_time(2.0);
    drop(heap.alloc(1u8).unwrap());
    set_time(4.0);
    drop(heap.alloc(2u8).unwrap());
    set_time(f64::INFINITY);
    assert_eq!(
        heap.stats().dormant,
        1,
        "the item freed at 2 is reusable at GVT 3"
    );
}

#[test]
fn heap_grows_then_reports_exhaustion_and_refuses_big_values() {
    let mut heap = Heap::new(
        fresh_owner(),
        HeapConfig::empty()
            .class(16, 1)
            .class(256, 1)
            .max_segments(5),
    )
    .unwrap();
    let mut keep = Vec::new();
    // 1 + 2 + 4 + 8 + 16 items of 16 bytes in 5 segments.
    for _ in 0..31 {
        keep.push(heap.alloc(0u64).unwrap());
    }
    assert_eq!(heap.stats().segments, 5);
    assert!(matches!(
        heap.alloc(0u64),
        Err(HeapError::Exhausted { class_size: 16, .. })
    ));
    // Values go to the smallest class they fit; bigger ones are refused with a clear error.
    let _big = heap.alloc([0u8; 200]).unwrap();
    let e = heap.alloc([0u8; 300]).unwrap_err();
    assert!(e.to_string().contains("300-byte"), "{e}");
}

#[test]
fn nested_bptrs_are_released_with_their_holder() {
    let mut heap = small_heap(4);
    heap.set_gvt(f64::INFINITY);
    let inner = heap.alloc(9u32).unwrap();
    let outer = heap.alloc((1u32, inner.clone())).unwrap();
    drop(inner);
    assert_eq!(*outer.1, 9);
    assert_eq!(heap.stats().outstanding, 2);
    drop(outer);
    assert_eq!(heap.stats().outstanding, 0);
}

/// Drop counting: references cloned and dropped on many threads return every item exactly
/// once (a double return would corrupt the counts, a missing one would leave it outstanding).
#[test]
fn every_item_comes_back_exactly_once() {
    let mut heap = small_heap(64);
    heap.set_gvt(f64::INFINITY);
    for _round in 0..20 {
        let items: Vec<_> = (0..64u64).map(|i| heap.alloc(i).unwrap()).collect();
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let mine: Vec<_> = items.to_vec();
                std::thread::spawn(move || {
                    let sum: u64 = mine.iter().map(|p| **p).sum();
                    drop(mine);
                    sum
                })
            })
            .collect();
        drop(items);
        for h in hs {
            assert_eq!(h.join().unwrap(), (0..64).sum::<u64>());
        }
        let s = heap.stats();
        assert_eq!((s.outstanding, s.dormant, s.free), (0, 0, 128));
    }
}

#[test]
fn control_barrier_registers_and_abort() {
    let c = Control::create(3).unwrap();
    let passes = Arc::new(AtomicU32::new(0));
    let hs: Vec<_> = (0..3)
        .map(|_| {
            let (c, passes) = (c.clone(), passes.clone());
            std::thread::spawn(move || {
                for round in 0..50 {
                    c.barrier(3, Duration::from_secs(10)).unwrap();
                    // Nobody passes round r+1's barrier before all passed round r's.
                    assert!(passes.fetch_add(1, Ordering::SeqCst) >= round * 3);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(passes.load(Ordering::SeqCst), 150);

    // GSU registers: TMC counts, LBTS over MOE and MOM.
    c.count_sent(1, 2);
    let mut snap = Snapshot::default();
    c.snapshot(|w| if w == 1 { 4.0 } else { f64::INFINITY }, &mut snap);
    assert_eq!(snap.in_transit(), 2);
    assert_eq!(snap.lbts(), 4.0);
    c.receive(1, || {
        let mut p = Published::IDLE;
        p.moe.time = 4.0;
        (2, p)
    });
    c.snapshot(|_| f64::INFINITY, &mut snap);
    assert_eq!((snap.in_transit(), snap.lbts()), (0, 4.0));

    // A barrier that cannot complete times out; an abort wakes it with the culprit's number.
    assert_eq!(
        c.barrier(3, Duration::from_millis(20)),
        Err(BarrierError::TimedOut)
    );
    let c2 = c.clone();
    let waiter = std::thread::spawn(move || c2.barrier(3, Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(50));
    c.abort(2);
    assert_eq!(waiter.join().unwrap(), Err(BarrierError::Aborted(2)));
}

/// A second mapping of the segment (as a worker process gets it) sees the same register
/// blocks; a segment that is not a control segment is refused.
#[test]
fn control_attached_by_descriptor_shares_the_registers() {
    let c = Control::create(3).unwrap();
    let dup = c.segment().fd().try_clone_to_owned().unwrap();
    let a = Control::attach(Segment::from_fd(dup).unwrap()).unwrap();
    assert_eq!(a.workers(), 3);
    let mut p = Published::IDLE;
    p.moe.time = 2.5;
    p.flags = 8;
    a.publish(2, &p);
    a.count_sent(0, 4);
    let mut snap = Snapshot::default();
    c.snapshot(|_| f64::INFINITY, &mut snap);
    assert_eq!((snap.lbts(), snap.flags(), snap.in_transit()), (2.5, 8, 4));
    assert_eq!(snap.workers.len(), 3);
    assert!(Control::attach(Segment::create(1 << 20).unwrap()).is_err());
    assert!(Control::attach(Segment::create(64).unwrap()).is_err());
}

#[test]
fn slices_and_bytes_hold_runtime_sizes() {
    let mut heap = small_heap(4);
    let s = heap
        .alloc_slice(&[(1u16, 10u64), (2, 20), (3, 30)])
        .unwrap();
    assert_eq!(s.as_slice(), &[(1, 10), (2, 20), (3, 30)]);
    assert_eq!(s.len(), 3);
    let b = heap.alloc_bytes_with(200, |b| b[199] = 7).unwrap();
    assert_eq!(b.as_slice().len(), 200);
    assert_eq!(b.as_slice()[199], 7);
    assert_eq!(b.as_slice()[0], 0);
    // 8 + 300 bytes fit no class of 16 or 256 bytes.
    assert!(matches!(
        heap.alloc_bytes_with(300, |_| {}),
        Err(HeapError::TooLarge { .. })
    ));
    let u = heap.alloc_untouched::<u8>(100).unwrap();
    assert!(!u.is_touched() && u.len() == 100);
    drop((s, b));
    assert_eq!(heap.stats().outstanding, 1);
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| u.as_slice().len()));
    assert!(read.is_err(), "an untouched payload must not be readable");
    drop(u);
    assert_eq!(heap.stats().outstanding, 0);
}

struct Header {
    id: u64,
    body: BPtr<Bytes>,
}
crate::impl_shm_safe!(Header { id, body });

enum Note {
    Plain(u32, f64),
    Boxed { id: u64, head: BPtr<Header> },
    Empty,
}
crate::impl_shm_safe!(enum Note { Plain(a, b), Boxed { id, head }, Empty });

#[test]
fn deep_copy_of_an_enum_copies_the_items_of_its_variant() {
    std::thread::spawn(|| {
        let mut heap = small_heap(8);
        let body = heap.alloc_bytes_with(50, |b| b.fill(3)).unwrap();
        let head = heap.alloc(Header { id: 2, body }).unwrap();
        let keep = head.clone();
        let copy = safe::deep_copy(Note::Boxed { id: 7, head });
        let Note::Boxed { id, head: copied } = &copy else {
            panic!("the variant changed")
        };
        assert_eq!(*id, 7);
        assert_ne!(copied.parts(), keep.parts());
        assert_ne!(copied.body.parts(), keep.body.parts());
        assert_eq!(copied.body.as_slice(), &[3u8; 50][..]);
        assert_eq!(BPtr::ref_count(&keep), 1);
        let plain = safe::deep_copy(Note::Plain(4, 0.5));
        assert!(matches!(plain, Note::Plain(4, x) if x == 0.5));
        assert!(matches!(safe::deep_copy(Note::Empty), Note::Empty));
        drop(keep);
        assert_eq!(heap.stats().outstanding, 0);
        drop(copy);
        assert_eq!(local::outstanding_items(), 0);
        local::release_thread_heap();
    })
    .join()
    .unwrap();
}

#[test]
fn deep_copy_copies_every_nested_item_into_this_threads_heap() {
    std::thread::spawn(|| {
        let mut heap = small_heap(8);
        let body = heap.alloc_bytes_with(100, |b| b.fill(9)).unwrap();
        let orig = heap.alloc(Header { id: 5, body }).unwrap();
        let keep = orig.clone();
        let copy = safe::deep_copy(Some(orig));
        let copy = copy.unwrap();
        // The copy is in other items (this thread's heap), with the same contents.
        assert_ne!(copy.parts(), keep.parts());
        assert_ne!(copy.body.parts(), keep.body.parts());
        assert_eq!(copy.id, 5);
        assert_eq!(copy.body.as_slice(), &[9u8; 100][..]);
        // The original lost the reference `deep_copy` consumed; its body is untouched.
        assert_eq!(BPtr::ref_count(&keep), 1);
        assert_eq!(BPtr::ref_count(&keep.body), 1);
        assert_eq!(BPtr::ref_count(&copy.body), 1);
        drop(keep);
        assert_eq!(heap.stats().outstanding, 0);
        drop(copy);
        assert_eq!(local::outstanding_items(), 0);
        local::release_thread_heap();
    })
    .join()
    .unwrap();
}

#[test]
fn heap_config_parses_and_checks() {
    let c = HeapConfig::parse("64:10, 4K:2,1M:1").unwrap();
    assert_eq!(c.classes(), &[(64, 10), (4096, 2), (1 << 20, 1)]);
    assert_eq!(c.largest(), 1 << 20);
    for bad in ["", "64", "64:0", "512:1,64:1", "x:1", "64:1,64:1", "8G:1"] {
        assert!(HeapConfig::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn growth_doubles_segments_and_can_be_disabled() {
    let mut heap = Heap::new(
        fresh_owner(),
        HeapConfig::empty().class(16, 2).max_segments(3),
    )
    .unwrap();
    // 2 + 4 + 8 items in three segments, then exhausted.
    let items: Vec<_> = (0..14).map(|i| heap.alloc(i as u64).unwrap()).collect();
    assert_eq!(heap.stats().segments, 3);
    assert!(matches!(
        heap.alloc(0u64),
        Err(HeapError::Exhausted { segments: 3, .. })
    ));
    drop(items);
    heap.set_gvt(f64::INFINITY);
    assert_eq!(heap.stats().free, 14);
    let mut fixed = Heap::new(
        fresh_owner(),
        HeapConfig::empty().class(16, 1).max_segments(1),
    )
    .unwrap();
    let _one = fixed.alloc(1u64).unwrap();
    let e = fixed.alloc(2u64).unwrap_err();
    assert!(e.to_string().contains("full in all 1 segments"), "{e}");
}

#[test]
fn a_class_is_tight_past_half_of_what_it_can_hold_until_gvt_frees_items() {
    // 2 + 4 + 8 = 14 items at most (three segments).
    let mut heap = Heap::new(
        fresh_owner(),
        HeapConfig::empty().class(16, 2).max_segments(3),
    )
    .unwrap();
    heap.defer_reuse(0.0);
    let mut items: Vec<_> = (0..7).map(|i| heap.alloc(i as u64).unwrap()).collect();
    assert!(!heap.tight(), "7 of 14 held: not past half");
    items.push(heap.alloc(7u64).unwrap());
    assert!(heap.tight(), "8 of 14 held");
    // Freed at time 1 (the thread's time-to-zero): dormant, still held until GVT passes 1.
    set_time(1.0);
    drop(items);
    heap.collect();
    assert!(heap.tight(), "dormant items are not reusable yet");
    heap.set_gvt(2.0);
    assert!(!heap.tight(), "GVT passed them: free again");
    set_time(f64::INFINITY);
}

#[test]
fn thread_heaps_reuse_at_once_until_an_optimistic_executor_reports_gvt() {
    std::thread::spawn(|| {
        // Immediate reuse (conservative): a freed item is free again, not dormant.
        let a = BPtr::new(1u64).unwrap();
        let free = with_thread_heap(|h| h.stats()).unwrap().free;
        drop(a);
        let st = with_thread_heap(|h| h.stats()).unwrap();
        assert_eq!((st.dormant, st.outstanding, st.free), (0, 0, free + 1));
        // Deferred past GVT: dropped at time 7, dormant at GVT 7, free above it.
        set_thread_gvt(5.0);
        let c = BPtr::new(3u64).unwrap();
        set_time(7.0);
        drop(c);
        let st = with_thread_heap(|h| h.stats()).unwrap();
        assert_eq!((st.dormant, st.outstanding), (1, 0));
        set_thread_gvt(7.0);
        assert_eq!(with_thread_heap(|h| h.stats()).unwrap().dormant, 1);
        set_thread_gvt(7.5);
        assert_eq!(with_thread_heap(|h| h.stats()).unwrap().dormant, 0);
        set_time(f64::INFINITY);
    })
    .join()
    .unwrap();
}

#[test]
fn payloads_received_from_other_ranks_go_to_a_receive_heap_with_the_runs_classes() {
    std::thread::spawn(|| {
        // The handlers' heap: one 64-byte class of 2 items, no growth.
        set_thread_heap_config(Some(HeapConfig::empty().class(64, 2).max_segments(1)));
        let mine: Vec<_> = (0..2u64).map(|i| BPtr::new(i).unwrap()).collect();
        assert!(matches!(
            BPtr::new(9u64),
            Err(HeapError::Exhausted { segments: 1, .. })
        ));
        let handlers = with_thread_heap(|h| h.owner()).unwrap();
        let received: Vec<_> = {
            let _into = local::Receiving::enter();
            // The run's classes: a value larger than 64 bytes fits none.
            assert!(matches!(
                BPtr::new([0u8; 100]),
                Err(HeapError::TooLarge { largest: 64, .. })
            ));
            // Up to 16 segments: 2 + 4 + 8 items need three.
            let v: Vec<_> = (0..14u64).map(|i| BPtr::new(i).unwrap()).collect();
            with_thread_heap(|h| {
                assert_ne!(h.owner(), handlers, "a heap of its own");
                assert_eq!(h.segments().len(), 3);
            })
            .unwrap();
            v
        };
        // The guard is gone: back to the handlers' heap, still full.
        assert!(BPtr::new(9u64).is_err());
        assert_eq!(local::outstanding_items(), 16, "both heaps are counted");
        // GVT-deferred reuse holds for the receive heap too.
        set_thread_gvt(5.0);
        set_time(7.0);
        drop(received);
        let dormant = || {
            let _into = local::Receiving::enter();
            with_thread_heap(|h| h.stats().dormant).unwrap()
        };
        assert_eq!(dormant(), 14);
        set_thread_gvt(7.5);
        assert_eq!(dormant(), 0);
        set_time(f64::INFINITY);
        drop(mine);
        release_thread_heap();
        set_thread_heap_config(None);
    })
    .join()
    .unwrap();
}
