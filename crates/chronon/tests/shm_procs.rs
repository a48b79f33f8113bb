//! Cross-process tests of `chronon::shm` with real worker processes: this test binary
//! re-executes itself (`Launcher` runs `current_exe()`), and each `child_*` test below is the
//! body of a worker: it does nothing unless the launcher's environment says it is a worker.
#![cfg(all(target_os = "linux", not(chronon_loom)))]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chronon::shm::registry::{self, Directory};
use chronon::shm::{
    init_ring, ring_bytes, BPtr, Consumer, Control, Heap, HeapConfig, LaunchError, Launcher,
    Producer, Segment, Worker,
};

type Payload = [u64; 512];
type Msg = (f64, BPtr<Payload>);
const RING: usize = 8;

fn worker() -> Option<Worker> {
    Worker::from_env().map(|w| w.expect("worker environment"))
}

fn args(entry: &str) -> [&str; 4] {
    [entry, "--exact", "--nocapture", "--test-threads=1"]
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn dev_shm() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn ring_at(seg: &Segment, k: usize) -> std::ptr::NonNull<u8> {
    let stride = ring_bytes::<Msg>(RING).next_multiple_of(64);
    // Safety (of the caller's later use): ring k lies inside the segment (see `rings`).
    unsafe { seg.base().add(k * stride) }
}

/// A segment holding ring 0 (parent → child) and ring 1 (child → parent).
fn rings() -> Segment {
    let stride = ring_bytes::<Msg>(RING).next_multiple_of(64);
    let seg = Segment::create(2 * stride).unwrap();
    for k in 0..2 {
        // Safety: fresh segment, 64-byte aligned slots of `stride` bytes, no ends attached.
        unsafe { init_ring::<Msg>(ring_at(&seg, k), RING) };
    }
    seg
}

fn pattern(seed: u64) -> Payload {
    std::array::from_fn(|i| seed.wrapping_mul(31).wrapping_add(i as u64))
}

fn recv_one(c: &mut Consumer<Msg>, deadline: Duration) -> Msg {
    let t = Instant::now();
    let mut got = None;
    while got.is_none() {
        c.drain(|m| got = Some(m));
        assert!(t.elapsed() < deadline, "nothing arrived");
        std::thread::yield_now();
    }
    got.unwrap()
}

/// Worker body of `bptr_crosses_processes_and_comes_back`.
#[test]
fn child_bptr() {
    let Some(mut w) = worker() else { return };
    // Safety: the parent passes its directory as segment 0.
    let dir = unsafe { Directory::attach(w.segment(0).unwrap()) }.unwrap();
    registry::set_directory(dir).unwrap();
    let control = Control::attach(w.segment(1).unwrap()).unwrap();
    let seg = Arc::new(w.segment(2).unwrap());
    // Safety: rings initialized by the parent; this process is ring 0's only consumer and
    // ring 1's only producer.
    let (mut from_parent, mut to_parent) = unsafe {
        (
            Consumer::<Msg>::attach(ring_at(&seg, 0), seg.clone()),
            Producer::<Msg>::attach(ring_at(&seg, 1), seg.clone()),
        )
    };
    // One item per segment: the second allocation grows the heap by a segment, which the
    // parent must find through the directory.
    let mut heap = Heap::new(1, HeapConfig::empty().class(4096, 1)).unwrap();
    heap.set_gvt(f64::INFINITY);
    // 1. The parent's payload, read in place through its heap (mapped here at another address).
    let (t, p) = recv_one(&mut from_parent, Duration::from_secs(10));
    assert_eq!(t, 1.5);
    assert_eq!(*p, pattern(7));
    let extra = p.clone();
    assert_eq!(BPtr::ref_count(&p), 2);
    drop(p);
    // The last reference, dropped at simulation time 7: the item goes back to the parent's
    // heap from here, dormant until the parent's GVT passes 7.
    chronon::shm::set_time(7.0);
    drop(extra);
    // 2. Two payloads in this process's heap (the second in a grown segment), read by the
    // parent.
    let first = heap.alloc(pattern(9)).unwrap();
    let second = heap.alloc(pattern(10)).unwrap();
    assert_eq!(heap.stats().segments, 2);
    assert_ne!(first.parts().0, second.parts().0);
    to_parent
        .push_batch(
            &mut vec![(2.5, first), (3.5, second)],
            |m| m.0,
            Duration::from_secs(5),
        )
        .unwrap();
    control.barrier(2, Duration::from_secs(10)).unwrap();
    // 3. The parent dropped it: it came back to this heap.
    assert_eq!(heap.stats().outstanding, 0);
}

#[test]
fn bptr_crosses_processes_and_comes_back() {
    let before = dev_shm();
    let dir = registry::set_directory(Directory::create().unwrap()).unwrap();
    let control = Control::create(2).unwrap();
    let seg = Arc::new(rings());
    // Safety: this process is ring 0's only producer and ring 1's only consumer.
    let (mut to_child, mut from_child) = unsafe {
        (
            Producer::<Msg>::attach(ring_at(&seg, 0), seg.clone()),
            Consumer::<Msg>::attach(ring_at(&seg, 1), seg.clone()),
        )
    };
    let mut heap = Heap::new(0, HeapConfig::default()).unwrap();
    heap.set_gvt(0.0); // Time Warp style: reuse waits for GVT
    let p = heap.alloc(pattern(7)).unwrap();
    to_child
        .push_batch(&mut vec![(1.5, p)], |m| m.0, Duration::from_secs(5))
        .unwrap();
    let launcher = {
        let (d, c, s) = (
            dir.segment().fd().try_clone_to_owned().unwrap(),
            control.segment().fd().try_clone_to_owned().unwrap(),
            seg.fd().try_clone_to_owned().unwrap(),
        );
        std::thread::spawn(move || {
            let (d, c, s) = (
                Segment::from_fd(d).unwrap(),
                Segment::from_fd(c).unwrap(),
                Segment::from_fd(s).unwrap(),
            );
            Launcher::new(1)
                .args(args("child_bptr"))
                .segment(&d)
                .segment(&c)
                .segment(&s)
                .run()
        })
    };
    // The child's payload, read here through the child's heap (mapped lazily via the directory).
    let mut got = Vec::new();
    let t0 = Instant::now();
    while got.len() < 2 {
        from_child.drain(|m| got.push(m));
        assert!(t0.elapsed() < Duration::from_secs(20), "nothing arrived");
        std::thread::yield_now();
    }
    let ((t1, q1), (t2, q2)) = (&got[0], &got[1]);
    assert_eq!((*t1, *t2), (2.5, 3.5));
    assert_eq!((**q1, **q2), (pattern(9), pattern(10)));
    assert_eq!(
        (q1.parts().0, q2.parts().0),
        (16, 17),
        "heap 17 is the child's growth"
    );
    drop(got);
    control.barrier(2, Duration::from_secs(20)).unwrap();
    launcher.join().unwrap().unwrap();
    // The child dropped our payload's last reference at time 7: it came back to our heap,
    // with that time-to-zero, and is reused only once GVT passes 7.
    heap.set_gvt(7.0);
    let s = heap.stats();
    assert_eq!((s.outstanding, s.dormant), (0, 1));
    heap.set_gvt(7.5);
    assert_eq!(heap.stats().dormant, 0);
    assert_eq!(dev_shm(), before, "a file was left in /dev/shm");
}

/// Worker body that writes its pid into its slot of segment 0, then sleeps (to be killed).
#[test]
fn child_sleeper() {
    let Some(mut w) = worker() else { return };
    let seg = w.segment(0).unwrap();
    // Safety: the segment has a page; slot `index` is this worker's alone.
    let slots = unsafe { &*seg.base().cast::<[AtomicU32; 64]>().as_ptr() };
    slots[w.index].store(std::process::id(), Ordering::SeqCst);
    if std::env::var_os("CHRONON_TEST_PARENT").is_some() {
        println!("pid {}", std::process::id());
    }
    std::thread::sleep(Duration::from_secs(60));
}

fn start_sleepers(
    procs: usize,
    stop: Option<Arc<AtomicBool>>,
) -> (
    Segment,
    Vec<u32>,
    std::thread::JoinHandle<Result<(), LaunchError>>,
) {
    let seg = Segment::create(4096).unwrap();
    let fd = seg.fd().try_clone_to_owned().unwrap();
    let h = std::thread::spawn(move || {
        let s = Segment::from_fd(fd).unwrap();
        let mut l = Launcher::new(procs)
            .args(args("child_sleeper"))
            .segment(&s)
            .quiet();
        if let Some(f) = stop {
            l = l.stop_flag(f);
        }
        l.run()
    });
    // Safety: a page of zeros, written only by the children through atomics.
    let slots = unsafe { &*seg.base().cast::<[AtomicU32; 64]>().as_ptr() };
    let t = Instant::now();
    while slots[..procs].iter().any(|s| s.load(Ordering::SeqCst) == 0) {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "workers did not start"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let pids = slots[..procs]
        .iter()
        .map(|s| s.load(Ordering::SeqCst))
        .collect();
    (seg, pids, h)
}

#[test]
fn kill_9_of_a_worker_stops_every_process_within_2_s() {
    let before = dev_shm();
    let (_seg, pids, h) = start_sleepers(3, None);
    let t = Instant::now();
    Command::new("kill")
        .args(["-9", &pids[1].to_string()])
        .status()
        .unwrap();
    let err = h.join().unwrap().unwrap_err();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "took {:?}",
        t.elapsed()
    );
    match err {
        LaunchError::WorkerDied { index, pid, .. } => assert_eq!((index, pid), (1, pids[1])),
        e => panic!("unexpected: {e}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("worker process 1") && msg.contains("signal 9"),
        "{msg}"
    );
    for &pid in &pids {
        assert!(!alive(pid), "worker {pid} still running");
    }
    assert_eq!(dev_shm(), before, "a file was left in /dev/shm");
}

#[test]
fn stop_flag_stops_and_reaps_every_worker() {
    let stop = Arc::new(AtomicBool::new(false));
    let (_seg, pids, h) = start_sleepers(2, Some(stop.clone()));
    stop.store(true, Ordering::SeqCst);
    assert!(matches!(h.join().unwrap(), Err(LaunchError::Stopped)));
    for &pid in &pids {
        assert!(!alive(pid), "worker {pid} still running");
    }
}

/// Run as a separate process by `sigint_to_the_parent_stops_the_workers`: a parent that
/// launches two sleepers (which print their pids on the shared stdout).
#[test]
fn parent_of_sleepers() {
    if std::env::var_os("CHRONON_TEST_PARENT").is_none() {
        return;
    }
    let _ = start_sleepers(2, None).2.join();
}

#[test]
fn sigint_or_kill_9_of_the_parent_stops_the_workers() {
    for signal in ["-INT", "-9"] {
        let mut parent = Command::new(std::env::current_exe().unwrap())
            .args(args("parent_of_sleepers"))
            .env("CHRONON_TEST_PARENT", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(parent.stdout.take().unwrap()).lines();
        let mut pids = Vec::new();
        while pids.len() < 2 {
            let line = lines.next().expect("worker pids").unwrap();
            // The harness may print "test child_sleeper ... " on the same line first.
            for part in line.split("pid ").skip(1) {
                let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
                pids.push(digits.parse::<u32>().unwrap());
            }
        }
        let t = Instant::now();
        Command::new("kill")
            .args([signal, &parent.id().to_string()])
            .status()
            .unwrap();
        assert!(!parent.wait().unwrap().success());
        while pids.iter().any(|&p| alive(p)) {
            assert!(
                t.elapsed() < Duration::from_secs(2),
                "workers outlived the parent ({signal})"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

const FLOOD: u64 = 20_000;

/// Sends `FLOOD` numbers through `out` while receiving as many from `inbox`, with a short
/// bounded wait: on `Full`, drain the inbox and retry with the kept batch.
fn flood(out: &mut Producer<u64>, inbox: &mut Consumer<u64>) {
    let (mut next, mut got) = (0u64, 0u64);
    while next < FLOOD || got < FLOOD {
        if next < FLOOD {
            let mut batch: Vec<u64> = (next..(next + 32).min(FLOOD)).collect();
            let k = batch.len() as u64;
            let _ = out.push_batch(&mut batch, |&v| v as f64, Duration::from_micros(100));
            next += k - batch.len() as u64;
        }
        inbox.drain(|v| {
            assert_eq!(v, got, "lost, duplicated or reordered");
            got += 1;
        });
    }
}

fn flood_ring_at(seg: &Segment, k: usize) -> std::ptr::NonNull<u8> {
    // Safety (of the caller's later use): two 4-slot rings of u64 fit in a page.
    unsafe { seg.base().add(k * 1024) }
}

/// Worker body of `two_processes_filling_each_others_rings_do_not_deadlock`.
#[test]
fn child_flood() {
    let Some(mut w) = worker() else { return };
    let seg = Arc::new(w.segment(0).unwrap());
    // Safety: rings initialized by the parent; this process consumes ring 0, produces ring 1.
    let (mut inbox, mut out) = unsafe {
        (
            Consumer::<u64>::attach(flood_ring_at(&seg, 0), seg.clone()),
            Producer::<u64>::attach(flood_ring_at(&seg, 1), seg.clone()),
        )
    };
    flood(&mut out, &mut inbox);
}

#[test]
fn two_processes_filling_each_others_rings_do_not_deadlock() {
    let seg = Arc::new(Segment::create(4096).unwrap());
    assert!(ring_bytes::<u64>(4) <= 1024);
    // Safety: fresh segment; this process produces ring 0 and consumes ring 1.
    let (mut out, mut inbox) = unsafe {
        init_ring::<u64>(flood_ring_at(&seg, 0), 4);
        init_ring::<u64>(flood_ring_at(&seg, 1), 4);
        (
            Producer::<u64>::attach(flood_ring_at(&seg, 0), seg.clone()),
            Consumer::<u64>::attach(flood_ring_at(&seg, 1), seg.clone()),
        )
    };
    let fd = seg.fd().try_clone_to_owned().unwrap();
    let child = std::thread::spawn(move || {
        let s = Segment::from_fd(fd).unwrap();
        Launcher::new(1).args(args("child_flood")).segment(&s).run()
    });
    flood(&mut out, &mut inbox);
    child.join().unwrap().unwrap();
}

/// Worker body of `barrier_and_registers_across_processes`.
#[test]
fn child_barrier() {
    let Some(mut w) = worker() else { return };
    let control = Control::attach(w.segment(0).unwrap()).unwrap();
    let shared = w.segment(1).unwrap();
    // Safety: a page of zeros, used through atomics only.
    let passes = unsafe { &*shared.base().cast::<AtomicU32>().as_ptr() };
    let parties = w.procs as u32;
    for round in 0..200 {
        control.barrier(parties, Duration::from_secs(20)).unwrap();
        // Nobody passes round r+1's barrier before everyone passed round r's.
        let before = passes.fetch_add(1, Ordering::SeqCst);
        assert!(before >= round * parties, "round {round}: {before}");
    }
    let i = w.index;
    control.count_sent(i, i + 1);
    let mut p = chronon::gsu::Published::IDLE;
    p.moe.time = 10.0 + i as f64;
    control.publish(i, &p);
    control.barrier(parties, Duration::from_secs(20)).unwrap();
}

#[test]
fn barrier_and_registers_across_processes() {
    let control = Control::create(3).unwrap();
    let shared = Segment::create(4096).unwrap();
    Launcher::new(3)
        .args(args("child_barrier"))
        .segment(control.segment())
        .segment(&shared)
        .run()
        .unwrap();
    // Safety: as in the children.
    let passes = unsafe { &*shared.base().cast::<AtomicU32>().as_ptr() };
    assert_eq!(passes.load(Ordering::SeqCst), 600);
    let mut snap = chronon::gsu::Snapshot::default();
    control.snapshot(|_| f64::INFINITY, &mut snap);
    assert_eq!((snap.lbts(), snap.in_transit()), (10.0, 6));
}
