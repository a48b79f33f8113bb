//! Every scheme: concurrent clones and drops from many threads free each item exactly once and
//! never while a handle exists.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use super::*;

/// Counts its drops in a shared counter and checks it is alive when read.
struct Tracked {
    alive: u64,
    drops: Arc<AtomicUsize>,
}

impl Tracked {
    fn new(drops: &Arc<AtomicUsize>) -> Tracked {
        Tracked {
            alive: 0xA11CE,
            drops: drops.clone(),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        assert_eq!(self.alive, 0xA11CE, "dropped twice");
        self.alive = 0xDEAD;
        self.drops.fetch_add(1, SeqCst);
    }
}

/// Flushes until `drops` reaches `want`. The buffered schemes free an item once every
/// registered thread has pushed since its last drop; tests running in parallel share their
/// global store, so another test's thread may hold frees back until it ends (a few ms).
fn settle_until<S: Scheme>(drops: &AtomicUsize, want: usize) {
    let start = std::time::Instant::now();
    loop {
        S::flush();
        let now = drops.load(SeqCst);
        assert!(now <= want, "{}: {now} drops of {want} items", S::NAME);
        if now == want {
            return;
        }
        assert!(
            start.elapsed().as_secs() < 20,
            "{}: {now} of {want} items freed after 20 s",
            S::NAME
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// One item cloned into many threads, each cloning and dropping, handing clones on.
fn concurrent_clone_drop<S: Scheme>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let items = 50;
    let threads = 4;
    let mut handles = Vec::new();
    for i in 0..items {
        let shared = Shared::<_, S>::new(Tracked::new(&drops));
        let copies: Vec<_> = (0..threads).map(|_| shared.clone()).collect();
        drop(shared);
        let joins: Vec<_> = copies
            .into_iter()
            .map(|c| {
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for k in 0..100 {
                        mine.push(c.clone());
                        if k % 3 == 0 {
                            assert_eq!(mine.pop().expect("pushed").alive, 0xA11CE);
                        }
                    }
                    assert_eq!(c.alive, 0xA11CE);
                    mine
                })
            })
            .collect();
        // Hand some clones back to this thread and drop the rest in the workers.
        for j in joins {
            let mine = j.join().expect("worker");
            if i % 2 == 0 {
                handles.extend(mine);
            }
        }
    }
    S::flush();
    assert!(
        drops.load(SeqCst) < items,
        "{}: freed while handles exist",
        S::NAME
    );
    for h in &handles {
        assert_eq!(h.alive, 0xA11CE);
    }
    drop(handles);
    settle_until::<S>(&drops, items);
}

#[test]
fn locked_frees_once() {
    concurrent_clone_drop::<Locked>();
}

#[test]
fn lock_add_frees_once() {
    concurrent_clone_drop::<LockAdd>();
}

#[test]
fn xadd_frees_once() {
    concurrent_clone_drop::<XAdd>();
}

#[test]
fn cas_frees_once() {
    concurrent_clone_drop::<Cas>();
}

#[test]
fn per_thread_frees_once() {
    concurrent_clone_drop::<PerThread>();
}

#[test]
fn buffered_frees_once() {
    concurrent_clone_drop::<Buffered>();
}

#[test]
fn buffered_deferred_frees_once() {
    concurrent_clone_drop::<BufferedDeferred>();
}

#[test]
fn buffered_waits_for_a_thread_that_has_not_pushed() {
    // The worker clones a handle (its reference sits unapplied in its buffer) and hands the
    // clone back; this thread drops it and its own handle and pushes. Applying those
    // unreferences before the worker's reference would free the item under the worker's
    // remaining handle: the uid rule must hold them back until the worker pushes.
    let drops = Arc::new(AtomicUsize::new(0));
    let shared = Shared::<_, Buffered>::new(Tracked::new(&drops));
    let (to_worker, from_main) = std::sync::mpsc::channel::<Shared<Tracked, Buffered>>();
    let (to_main, from_worker) = std::sync::mpsc::channel::<Shared<Tracked, Buffered>>();
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        let c = from_main.recv().expect("handle");
        to_main.send(c.clone()).expect("main");
        wait.recv().expect("release");
        assert_eq!(c.alive, 0xA11CE);
        drop(c);
    });
    to_worker.send(shared.clone()).expect("worker");
    let k = from_worker.recv().expect("worker");
    drop(k);
    drop(shared);
    Buffered::flush();
    assert_eq!(
        drops.load(SeqCst),
        0,
        "freed while the worker holds a handle"
    );
    release.send(()).expect("worker");
    worker.join().expect("worker");
    settle_until::<Buffered>(&drops, 1);
}

#[test]
fn a_thread_that_ends_releases_its_items() {
    let drops = Arc::new(AtomicUsize::new(0));
    std::thread::spawn({
        let drops = drops.clone();
        move || {
            let s = Shared::<_, BufferedDeferred>::new(Tracked::new(&drops));
            let v: Vec<_> = (0..1000).map(|_| s.clone()).collect();
            drop(v);
            drop(s);
        }
    })
    .join()
    .expect("thread");
    settle_until::<BufferedDeferred>(&drops, 1);
}

#[test]
fn per_thread_handles_dropped_on_other_threads() {
    // Handles made on one thread (sharing its local count) dropped on several others.
    let drops = Arc::new(AtomicUsize::new(0));
    let s = Shared::<_, PerThread>::new(Tracked::new(&drops));
    let clones: Vec<_> = (0..8).map(|_| s.clone()).collect();
    let joins: Vec<_> = clones
        .into_iter()
        .map(|c| std::thread::spawn(move || drop(c)))
        .collect();
    for j in joins {
        j.join().expect("thread");
    }
    assert_eq!(drops.load(SeqCst), 0);
    drop(s);
    assert_eq!(drops.load(SeqCst), 1);
}

#[test]
fn ptr_eq_and_deref() {
    let a = Shared::<_>::new(vec![1, 2, 3]);
    let b = a.clone();
    let c = Shared::<_>::new(vec![1, 2, 3]);
    assert!(Shared::ptr_eq(&a, &b));
    assert!(!Shared::ptr_eq(&a, &c));
    assert_eq!(*b, vec![1, 2, 3]);
    assert_eq!(format!("{a:?}"), "Shared([1, 2, 3])");
}

#[test]
fn a_thread_that_leaves_stops_holding_back_frees() {
    // The worker counts (a clone and a drop, unpushed) and then idles without ending: it holds
    // back this thread's unreference until it leaves, and not after.
    let drops = Arc::new(AtomicUsize::new(0));
    let shared = Shared::<_, Buffered>::new(Tracked::new(&drops));
    let (to_main, counted) = std::sync::mpsc::channel::<()>();
    let (to_worker, order) = std::sync::mpsc::channel::<bool>();
    let mine = shared.clone();
    let worker = std::thread::spawn(move || {
        drop(mine.clone());
        drop(mine);
        to_main.send(()).expect("main");
        // `true`: leave and go on idling; `false`: end.
        while order.recv().expect("order") {
            Buffered::leave();
            to_main.send(()).expect("main");
        }
    });
    counted.recv().expect("worker");
    drop(shared);
    Buffered::flush();
    assert_eq!(drops.load(SeqCst), 0, "freed before the idle worker pushed");
    to_worker.send(true).expect("worker");
    counted.recv().expect("worker");
    settle_until::<Buffered>(&drops, 1);
    to_worker.send(false).expect("worker");
    worker.join().expect("worker");
}
