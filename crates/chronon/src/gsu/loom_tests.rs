//! Loom models of the GSU: no snapshot misses a message in flight, whether it is being sent
//! (the sender raises its MOE right after) or received (the receiver takes it out of MOM), and
//! the termination test never stops early. Every model runs over both storages of the one
//! register implementation (`regs.rs`): the process-private [`Gsu`] and the register blocks in
//! the shared control segment ([`Control`], a real memfd segment; threads stand in for
//! processes, which share nothing else the protocol uses). MOM is a mailbox register in both.

use loom::sync::Arc;
use loom::thread;

const PREEMPTIONS: usize = 2;

use super::{Gsu, Published, Snapshot};
use crate::comm::Mailbox;
use crate::event::EventKey;
use crate::loom::atomic::{AtomicU64, Ordering::SeqCst};
use crate::shm::Control;

type Mail = [Mailbox<EventKey>; 2];

/// The GSU over one storage, as the models drive it (two workers).
trait Unit: Clone + Send + Sync + 'static {
    /// Registers seeded with each worker's first event (G0).
    fn seeded(first: [EventKey; 2]) -> Self;
    fn send(&self, dst: usize, mail: &Mail, batch: Vec<EventKey>);
    /// Worker `me` receives: each event goes to `each`, then `after` is published.
    fn receive(
        &self,
        me: usize,
        mail: &Mail,
        each: impl FnMut(EventKey),
        after: Published,
    ) -> usize;
    fn publish(&self, me: usize, p: &Published);
    fn snapshot(&self, mom: impl Fn(usize) -> f64, out: &mut Snapshot);
    /// The termination test: publish, then snapshot; returns the LBTS.
    fn publish_and_snapshot(
        &self,
        me: usize,
        p: &Published,
        mom: impl Fn(usize) -> f64,
        out: &mut Snapshot,
    ) -> f64 {
        self.publish(me, p);
        self.snapshot(mom, out);
        out.lbts()
    }
}

impl Unit for Arc<Gsu> {
    fn seeded(first: [EventKey; 2]) -> Self {
        Arc::new(Gsu::seeded(&first))
    }
    fn send(&self, dst: usize, mail: &Mail, batch: Vec<EventKey>) {
        Gsu::send(self, dst, &mail[dst], batch);
    }
    fn receive(
        &self,
        me: usize,
        mail: &Mail,
        mut each: impl FnMut(EventKey),
        after: Published,
    ) -> usize {
        Gsu::receive(self, me, &mail[me], &mut (), |_, e| each(e), |_| after)
    }
    fn publish(&self, me: usize, p: &Published) {
        Gsu::publish(self, me, p);
    }
    fn snapshot(&self, mom: impl Fn(usize) -> f64, out: &mut Snapshot) {
        Gsu::snapshot(self, mom, out);
    }
    fn publish_and_snapshot(
        &self,
        me: usize,
        p: &Published,
        mom: impl Fn(usize) -> f64,
        out: &mut Snapshot,
    ) -> f64 {
        Gsu::publish_and_snapshot(self, me, p, mom, out)
    }
}

impl Unit for Control {
    fn seeded(first: [EventKey; 2]) -> Self {
        let c = Control::create(2).expect("control segment");
        for (w, moe) in first.into_iter().enumerate() {
            c.publish(
                w,
                &Published {
                    moe,
                    ..Published::IDLE
                },
            );
        }
        c
    }
    fn send(&self, dst: usize, mail: &Mail, batch: Vec<EventKey>) {
        self.count_sent(dst, batch.len());
        mail[dst].push_batch(batch);
    }
    fn receive(
        &self,
        me: usize,
        mail: &Mail,
        each: impl FnMut(EventKey),
        after: Published,
    ) -> usize {
        Control::receive(self, me, || (mail[me].take(each), after))
    }
    fn publish(&self, me: usize, p: &Published) {
        Control::publish(self, me, p);
    }
    fn snapshot(&self, mom: impl Fn(usize) -> f64, out: &mut Snapshot) {
        Control::snapshot(self, mom, out);
    }
}

fn at(t: f64) -> Published {
    Published {
        moe: key(t),
        bound: t,
        flags: 0,
        aux: f64::INFINITY,
    }
}

fn key(time: f64) -> EventKey {
    EventKey {
        time,
        src: 0,
        seq: 0,
    }
}

fn idle() -> EventKey {
    Published::IDLE.moe
}

fn mailboxes() -> Arc<Mail> {
    Arc::new([Mailbox::new(), Mailbox::new()])
}

/// Loom with a preemption bound (the spin loops make the full state space explode; bounded
/// preemption still covers every interleaving with a few context switches).
fn bounded(f: fn()) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(PREEMPTIONS);
    b.max_branches = 100_000;
    b.check(f);
}

fn message_being_sent<U: Unit>() {
    let u = U::seeded([idle(), idle()]);
    let mail = mailboxes();
    // Worker 0 is executing an event at 0.5 that sends one at 1.0 to worker 1.
    u.publish(0, &at(0.5));
    let (g, m) = (u.clone(), mail.clone());
    let sender = thread::spawn(move || {
        g.send(1, &m, vec![key(1.0)]);
        g.publish(0, &at(f64::INFINITY));
    });
    let mut s = Snapshot::default();
    u.snapshot(|w| mail[w].min_time(), &mut s);
    assert!(s.lbts() <= 1.0, "lbts {} misses the message", s.lbts());
    sender.join().unwrap();
}

#[test]
fn a_message_being_sent_is_never_missed() {
    bounded(message_being_sent::<Arc<Gsu>>);
}

#[test]
fn a_message_being_sent_is_never_missed_in_shared_memory() {
    bounded(message_being_sent::<Control>);
}

fn message_being_received<U: Unit>() {
    let u = U::seeded([idle(), idle()]);
    let mail = mailboxes();
    u.send(1, &mail, vec![key(1.0)]);
    let (g, m) = (u.clone(), mail.clone());
    let receiver = thread::spawn(move || {
        let mut min = f64::INFINITY;
        g.receive(1, &m, |e| min = min.min(e.time), at(1.0));
        assert_eq!(min, 1.0);
    });
    let mut s = Snapshot::default();
    u.snapshot(|w| mail[w].min_time(), &mut s);
    assert!(s.lbts() <= 1.0, "lbts {} misses the message", s.lbts());
    receiver.join().unwrap();
    u.snapshot(|w| mail[w].min_time(), &mut s);
    assert_eq!(s.in_transit(), 0);
}

#[test]
fn a_message_being_received_is_never_missed() {
    bounded(message_being_received::<Arc<Gsu>>);
}

#[test]
fn a_message_being_received_is_never_missed_in_shared_memory() {
    bounded(message_being_received::<Control>);
}

/// `Control::bracket` (the shared-memory transport's absorb, transport/README.md X1): worker 1
/// moves a message at 1.0 from its mailbox to a private stash inside an odd epoch, lowering
/// the stash's register before the epoch ends; its MOM is min(mailbox, stash). A stable
/// snapshot never sees the message in neither place.
#[test]
fn a_message_moved_inside_a_bracket_is_never_missed_in_shared_memory() {
    bounded(|| {
        let c = <Control as Unit>::seeded([idle(), idle()]);
        let mail = mailboxes();
        let stash = Arc::new(AtomicU64::new(f64::INFINITY.to_bits()));
        c.send(1, &mail, vec![key(1.0)]);
        let (g, m, st) = (c.clone(), mail.clone(), stash.clone());
        let absorber = thread::spawn(move || {
            g.bracket(1, || {
                let mut min = f64::INFINITY;
                m[1].take(|e| min = min.min(e.time));
                st.fetch_min(min.to_bits(), SeqCst);
            });
        });
        let mut s = Snapshot::default();
        let mom = |w: usize| {
            let stashed = if w == 1 {
                f64::from_bits(stash.load(SeqCst))
            } else {
                f64::INFINITY
            };
            mail[w].min_time().min(stashed)
        };
        c.snapshot(mom, &mut s);
        assert!(s.lbts() <= 1.0, "lbts {} misses the message", s.lbts());
        absorber.join().unwrap();
    });
}

/// The termination test of a worker with nothing left before `END` (null messages): receive
/// what is in the mailbox (each received event is executed at once, sending nothing), then
/// publish "idle" and snapshot; stop once the snapshot shows nothing before `END`. Returns how
/// many events the worker received.
fn idle_until_quiescent<U: Unit>(u: &U, mail: &Mail, me: usize) -> usize {
    const END: f64 = 10.0;
    let mut received = 0;
    let mut s = Snapshot::default();
    loop {
        u.receive(me, mail, |_| received += 1, at(f64::INFINITY));
        if u.publish_and_snapshot(me, &at(f64::INFINITY), |w| mail[w].min_time(), &mut s) >= END {
            return received;
        }
        thread::yield_now();
    }
}

fn starts_idle<U: Unit>() {
    // Worker 0 starts with an event at 1.0 in its queue (put there before the threads
    // start); worker 1 starts with nothing. Worker 0's event sends one at 2.0 to worker 1.
    let u = U::seeded([key(1.0), idle()]);
    let mail = mailboxes();
    let (g, m) = (u.clone(), mail.clone());
    let w0 = thread::spawn(move || {
        g.send(1, &m, vec![key(2.0)]);
        g.publish(0, &at(f64::INFINITY));
    });
    // Worker 1 may only conclude "quiescent" after it has received worker 0's message.
    assert_eq!(idle_until_quiescent(&u, &mail, 1), 1);
    w0.join().unwrap();
}

#[test]
fn a_worker_that_starts_idle_waits_for_the_others_first_events() {
    bounded(starts_idle::<Arc<Gsu>>);
}

#[test]
fn a_worker_that_starts_idle_waits_for_the_others_first_events_in_shared_memory() {
    bounded(starts_idle::<Control>);
}

fn becomes_idle<U: Unit>() {
    // Worker 0 is executing an event at 0.5 that sends one at 1.0 to worker 1, then has
    // nothing left; worker 1 has just executed its last event at 0.7 and is going idle.
    let u = U::seeded([key(0.5), key(0.7)]);
    let mail = mailboxes();
    let (g, m) = (u.clone(), mail.clone());
    let w0 = thread::spawn(move || {
        g.send(1, &m, vec![key(1.0)]);
        // Worker 0 goes idle too and runs the same termination test.
        idle_until_quiescent(&g, &m, 0)
    });
    assert_eq!(idle_until_quiescent(&u, &mail, 1), 1);
    assert_eq!(w0.join().unwrap(), 0);
}

#[test]
fn a_worker_that_becomes_idle_with_a_message_to_it_in_flight_does_not_stop() {
    bounded(becomes_idle::<Arc<Gsu>>);
}

#[test]
fn a_worker_that_becomes_idle_with_a_message_to_it_in_flight_does_not_stop_in_shared_memory() {
    bounded(becomes_idle::<Control>);
}
