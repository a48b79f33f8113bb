//! The transport between the threads of one process. For the conservative protocols
//! ([`Endpoint`], this file): one [`Mailbox`] per worker (its min register is the worker's
//! MOM), the [`Gsu`] register files, a barrier of the configured kind, and, for null messages,
//! channel words and parking slots in process memory. For Time Warp (`tw.rs`): a mailbox and a
//! pool of recycled batches per worker.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};

use crossbeam_utils::CachePadded;

use super::Endpoint;
use crate::barrier::park::Sleepers;
use crate::barrier::Barrier;
use crate::comm::Mailbox;
use crate::event::{Event, EventKey};
use crate::gsu::{Gsu, Published, Snapshot};
use crate::model::Time;

mod tw;
pub(crate) use tw::Mailboxes;

/// What the workers of one process share.
#[derive(Debug)]
pub(crate) struct ThreadNet<E> {
    workers: usize,
    mail: Vec<CachePadded<Mailbox<Event<E>>>>,
    gsu: Gsu,
    /// `chan[v * W + w]`: bits of the time below which nothing will come from `v` to `w`.
    chan: Vec<CachePadded<AtomicU64>>,
    sleepers: Sleepers,
    abort: AtomicBool,
    /// The null-message rendezvous: arrivals and generation.
    arrived: AtomicUsize,
    generation: AtomicU64,
    barrier: Box<dyn Barrier>,
}

impl<E> ThreadNet<E> {
    /// `first[w]`: the key of the earliest event in worker `w`'s queue before any worker runs
    /// (the GSU is seeded with them: G0 in gsu/README.md).
    pub(crate) fn new(first: &[EventKey], barrier: Box<dyn Barrier>) -> Self {
        let w = first.len();
        ThreadNet {
            workers: w,
            mail: (0..w).map(|_| CachePadded::new(Mailbox::new())).collect(),
            gsu: Gsu::seeded(first),
            chan: (0..w * w)
                .map(|_| CachePadded::new(AtomicU64::new(0f64.to_bits())))
                .collect(),
            sleepers: Sleepers::new(w),
            abort: AtomicBool::new(false),
            arrived: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            barrier,
        }
    }

    /// Worker `me`'s endpoint.
    pub(crate) fn endpoint(&self, me: usize) -> ThreadEnd<'_, E> {
        ThreadEnd { net: self, me }
    }

    /// After every worker stopped: the messages still in transit, by the GSU's TMC registers,
    /// checked against the mailboxes, which are then emptied.
    pub(crate) fn drain_at_end(&self, mut each: impl FnMut(Event<E>)) -> i64 {
        let mut snap = Snapshot::default();
        self.gsu.snapshot(|i| self.mail[i].min_time(), &mut snap);
        let in_transit = snap.in_transit();
        let mut drained = 0i64;
        for m in self.mail.iter() {
            m.take(|e| {
                drained += 1;
                each(e)
            });
        }
        assert_eq!(
            in_transit, drained,
            "the GSU's TMC registers disagree with the mailboxes at the end of the run"
        );
        in_transit
    }
}

/// One worker's endpoint on a [`ThreadNet`].
#[derive(Debug)]
pub(crate) struct ThreadEnd<'n, E> {
    net: &'n ThreadNet<E>,
    me: usize,
}

impl<E> Endpoint<E> for ThreadEnd<'_, E> {
    #[inline]
    fn me(&self) -> usize {
        self.me
    }

    #[inline]
    fn send(&mut self, dst: usize, batch: Vec<Event<E>>) {
        self.net.gsu.send(dst, &self.net.mail[dst], batch);
    }

    #[inline]
    fn receive<S>(
        &mut self,
        state: &mut S,
        f: impl FnMut(&mut S, Event<E>),
        after: impl FnOnce(&mut S) -> Published,
    ) -> usize {
        self.net
            .gsu
            .receive(self.me, &self.net.mail[self.me], state, f, after)
    }

    fn publish(&mut self, p: &Published) {
        self.net.gsu.publish(self.me, p);
    }

    fn snapshot(&mut self, out: &mut Snapshot) {
        let mail = &self.net.mail;
        self.net.gsu.snapshot(|i| mail[i].min_time(), out);
    }

    fn has_mail(&self) -> bool {
        !self.net.mail[self.me].is_empty()
    }

    fn barrier(&mut self) -> bool {
        self.net.barrier.wait(self.me);
        true
    }

    fn channel(&self, from: usize, to: usize) -> Time {
        f64::from_bits(self.net.chan[from * self.net.workers + to].load(SeqCst))
    }

    fn raise_channel(&self, to: usize, t: Time) {
        self.net.chan[self.me * self.net.workers + to].store(t.to_bits(), SeqCst);
    }

    fn wake(&self, w: usize) {
        self.net.sleepers.wake(w);
    }

    fn wait_until(&mut self, ready: impl Fn(&Self) -> bool) {
        let this = &*self;
        self.net.sleepers.wait_until(self.me, || ready(this));
    }

    fn abort(&self) {
        self.net.abort.store(true, SeqCst);
        self.net.sleepers.wake_all();
    }

    fn aborted(&self) -> bool {
        self.net.abort.load(SeqCst)
    }

    fn rendezvous(&mut self, last: impl FnOnce(&mut Self)) -> bool {
        let net = self.net;
        let generation = net.generation.load(SeqCst);
        if net.arrived.fetch_add(1, SeqCst) + 1 == net.workers {
            last(self);
            net.arrived.store(0, SeqCst);
            net.generation.store(generation + 1, SeqCst);
            net.sleepers.wake_all();
        } else {
            net.sleepers.wait_until(self.me, || {
                net.abort.load(SeqCst) || net.generation.load(SeqCst) != generation
            });
        }
        !net.abort.load(SeqCst)
    }
}
