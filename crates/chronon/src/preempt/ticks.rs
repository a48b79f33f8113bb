//! Fine-grain ticks (seed 003 §2.3, App. B): a per-thread POSIX timer (`timer_create` on
//! `CLOCK_MONOTONIC`, delivered to the worker's own thread with `SIGEV_THREAD_ID`) whose signal
//! handler sets the thread's [`Flag`], which a check at the next platform-mode return takes, and,
//! when the thread is in application mode, sends it to the check at once (interrupt.rs).
//! The alpha rule ([`AlphaRule`]) decides per worker whether the timer runs. README.md ("Ticks
//! that preempt") says how the handler switches contexts without switching inside itself.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// Set by a tick, taken by the next check at a platform-mode return.
#[derive(Debug, Default)]
pub(crate) struct Flag {
    due: AtomicBool,
    /// Whether ticks run: only then does a check wait for `due`.
    gating: AtomicBool,
    /// Ticks delivered to this flag's thread.
    delivered: AtomicU64,
}

impl Flag {
    /// Marks a check as due (async-signal-safe: two lock-free atomic operations).
    #[inline(always)]
    pub(crate) fn raise(&self) {
        // Ordering: Relaxed — the flag is set and read by the same thread (the signal handler
        // interrupts it); it carries no data, and a late view only delays one check.
        self.due.store(true, Relaxed);
        // Ordering: Relaxed — a statistic, read by the same thread.
        self.delivered.fetch_add(1, Relaxed);
    }

    /// Makes checks wait for ticks (`true`, the timer runs) or not.
    pub(crate) fn set_gating(&self, on: bool) {
        // Ordering: Relaxed — set and read by the worker's own thread.
        self.gating.store(on, Relaxed);
    }

    /// Whether a check is due: always while ticks are off, else once per tick (clears it).
    #[cfg(test)]
    pub(crate) fn take(&self) -> bool {
        self.take_tick().is_some()
    }

    /// As [`take`](Self::take), telling why: `Some(true)` a tick made the check due (the
    /// report's `ticks_acted_on`), `Some(false)` ticks are off (every check is due), `None`
    /// not due.
    #[inline(always)]
    pub(crate) fn take_tick(&self) -> Option<bool> {
        // Ordering: Relaxed, as in `raise`; the loads first keep the common case plain reads.
        if !self.gating.load(Relaxed) {
            return Some(false);
        }
        if self.due.load(Relaxed) {
            self.due.store(false, Relaxed);
            Some(true)
        } else {
            None
        }
    }

    /// Drops a tick that came while the platform context ran (seed 003 §2.2: ticks in
    /// platform mode change nothing).
    pub(crate) fn clear(&self) {
        // Ordering: Relaxed, as in `raise`.
        self.due.store(false, Relaxed);
    }

    /// Ticks delivered so far.
    pub(crate) fn delivered(&self) -> u64 {
        // Ordering: Relaxed — a statistic.
        self.delivered.load(Relaxed)
    }
}

/// The alpha rule (seed 003 Eq. 1–2): exponential means of an event's wall time on the CPU
/// (Δe) and of its platform-mode returns (APMS); T = Δe / APMS is the mean time between two
/// returns. Ticks run while T / ΔET >= 1 + alpha.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AlphaRule {
    pub(crate) period_s: f64,
    pub(crate) alpha: f64,
    /// Δe in seconds and APMS (0 until the first sample).
    pub(crate) delta_e: f64,
    pub(crate) apms: f64,
}

/// Weight of a new sample in the exponential means.
const EMA: f64 = 1.0 / 16.0;

impl AlphaRule {
    pub(crate) fn new(period_us: f64, alpha: f64) -> Self {
        AlphaRule {
            period_s: period_us * 1e-6,
            alpha,
            delta_e: 0.0,
            apms: 0.0,
        }
    }

    /// Adds one event: `wall_s` on the CPU, `returns` platform-mode returns.
    pub(crate) fn sample(&mut self, wall_s: f64, returns: u64) {
        let r = returns as f64;
        if self.delta_e == 0.0 && self.apms == 0.0 {
            (self.delta_e, self.apms) = (wall_s, r);
        } else {
            self.delta_e += EMA * (wall_s - self.delta_e);
            self.apms += EMA * (r - self.apms);
        }
    }

    /// T = Δe / APMS (`+inf` with no returns: an event that never returns to the platform).
    pub(crate) fn t(&self) -> f64 {
        if self.apms <= 0.0 {
            f64::INFINITY
        } else {
            self.delta_e / self.apms
        }
    }

    /// Whether ticks should run now.
    pub(crate) fn wants_ticks(&self) -> bool {
        self.delta_e > 0.0 && self.t() / self.period_s >= 1.0 + self.alpha
    }
}

#[cfg(target_os = "linux")]
mod timer {
    use std::cell::Cell;
    use std::sync::Once;

    use super::Flag;

    thread_local! {
        // Const-initialized and without a destructor: reading it is a plain TLS load, which is
        // async-signal-safe (no lazy initialization, no allocation).
        static CURRENT: Cell<*const Flag> = const { Cell::new(std::ptr::null()) };
    }

    extern "C" fn on_tick(_: libc::c_int, _: *mut libc::siginfo_t, uc: *mut libc::c_void) {
        let f = CURRENT.with(Cell::get);
        if !f.is_null() {
            // Safety: `CURRENT` points at a flag that outlives the timer that sends this signal
            // (set in `Timer::new`, cleared in `Drop` after the timer is deleted); a signal
            // still queued after that finds null.
            unsafe { (*f).raise() };
            // Safety: `uc` is the ucontext the kernel passed to this SA_SIGINFO handler.
            unsafe { crate::preempt::interrupt::on_tick(uc) };
        }
    }

    fn signal() -> libc::c_int {
        libc::SIGRTMIN()
    }

    fn install() -> std::io::Result<()> {
        static ONCE: Once = Once::new();
        let mut err = None;
        ONCE.call_once(|| {
            // Safety: a zeroed `sigaction` is a valid empty value; the handler is an
            // `extern "C" fn(c_int, *mut siginfo_t, *mut c_void)` (SA_SIGINFO) that only does
            // async-signal-safe work: atomic stores, TLS reads and writes, and an edit of the
            // interrupted context's registers (interrupt.rs).
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_tick as *const () as libc::sighandler_t;
                sa.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
                libc::sigemptyset(&mut sa.sa_mask);
                if libc::sigaction(signal(), &sa, std::ptr::null_mut()) != 0 {
                    err = Some(std::io::Error::last_os_error());
                }
            }
        });
        err.map_or(Ok(()), Err)
    }

    /// A timer that signals this thread every period while armed.
    pub(crate) struct Timer {
        id: libc::timer_t,
        period_ns: i64,
        armed: bool,
        // The timer belongs to the thread that made it.
        _not_send: std::marker::PhantomData<*const ()>,
    }

    impl Timer {
        /// A disarmed timer for the calling thread, whose ticks raise `flag`.
        pub(crate) fn new(flag: &Flag, period_us: f64) -> std::io::Result<Timer> {
            install()?;
            CURRENT.with(|c| c.set(flag));
            // Safety: a zeroed `sigevent` is valid; the fields set are the ones
            // SIGEV_THREAD_ID reads; `id` is written by a successful `timer_create`.
            let id = unsafe {
                let mut ev: libc::sigevent = std::mem::zeroed();
                ev.sigev_notify = libc::SIGEV_THREAD_ID;
                ev.sigev_signo = signal();
                ev.sigev_notify_thread_id = libc::gettid();
                let mut id: libc::timer_t = std::ptr::null_mut();
                if libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut id) != 0 {
                    let e = std::io::Error::last_os_error();
                    CURRENT.with(|c| c.set(std::ptr::null()));
                    return Err(e);
                }
                id
            };
            Ok(Timer {
                id,
                period_ns: (period_us * 1e3).round().max(1.0) as i64,
                armed: false,
                _not_send: std::marker::PhantomData,
            })
        }

        /// Starts (`true`) or stops the ticks; a no-op when already so.
        pub(crate) fn set(&mut self, on: bool) {
            if on == self.armed {
                return;
            }
            let ns = if on { self.period_ns } else { 0 };
            let ts = libc::timespec {
                tv_sec: ns / 1_000_000_000,
                tv_nsec: ns % 1_000_000_000,
            };
            let spec = libc::itimerspec {
                it_interval: ts,
                it_value: ts,
            };
            // Safety: `id` is a live timer of this process; `spec` is a valid itimerspec.
            let rc = unsafe { libc::timer_settime(self.id, 0, &spec, std::ptr::null_mut()) };
            if rc == 0 {
                self.armed = on;
            }
        }

        /// Whether ticks run.
        pub(crate) fn armed(&self) -> bool {
            self.armed
        }
    }

    impl Drop for Timer {
        fn drop(&mut self) {
            // Safety: `id` is a live timer created by `new`, deleted once here.
            unsafe { libc::timer_delete(self.id) };
            CURRENT.with(|c| c.set(std::ptr::null()));
        }
    }
}

#[cfg(target_os = "linux")]
pub(crate) use timer::Timer;

/// Elsewhere: no per-thread timers; ticks are refused at setup.
#[cfg(not(target_os = "linux"))]
pub(crate) struct Timer;

#[cfg(not(target_os = "linux"))]
impl Timer {
    pub(crate) fn new(_: &Flag, _: f64) -> std::io::Result<Timer> {
        Err(std::io::Error::other("per-thread tick timers need Linux"))
    }
    pub(crate) fn set(&mut self, _: bool) {}
    pub(crate) fn armed(&self) -> bool {
        false
    }
}

/// Sleeps for about `d` on a thread that ticks may interrupt; every idle wait of a Time Warp
/// worker uses it instead of `std::thread::sleep`.
///
/// `std::thread::sleep` restarts `nanosleep` after a signal with the *remaining* time that the
/// kernel returns, and Linux computes it from the timer's hard expiry, which includes the
/// thread's timer slack (50 µs by default). A tick every ΔET <= slack therefore interrupts each
/// restart before it ends and hands back a remaining time that never shrinks (it grows by
/// slack − ΔET per tick): a 50 µs sleep under 50 µs ticks never returned, and the worker never
/// came back to its loop to report in the GVT round (the `--preempt --tick-us 50` stall,
/// docs/timewarp.md). Here the deadline is absolute: `park_timeout` waits on a futex until an
/// absolute time (and a spurious or early return only makes the loop wait for what is left of
/// the same deadline), so a signal can delay the wait by one slack at most.
pub(crate) fn nap(d: std::time::Duration) {
    let until = std::time::Instant::now() + d;
    loop {
        let now = std::time::Instant::now();
        if now >= until {
            return;
        }
        std::thread::park_timeout(until - now);
    }
}

/// Work a busy loop gets done in `millis` ms on this thread, in loop iterations.
pub(super) fn work_rate(millis: u64) -> f64 {
    let until = std::time::Duration::from_millis(millis);
    let start = std::time::Instant::now();
    let mut x = 1u64;
    let mut n = 0u64;
    while start.elapsed() < until {
        for _ in 0..1024 {
            x = std::hint::black_box(x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(7));
        }
        n += 1;
    }
    std::hint::black_box(x);
    n as f64 / start.elapsed().as_secs_f64()
}

/// What [`tick_overhead`] measured.
#[derive(Clone, Copy, Debug)]
pub struct TickOverhead {
    /// The fraction of the thread's work lost to the ticks (negative values are noise).
    pub overhead: f64,
    /// Ticks delivered while the timer was armed.
    pub delivered: u64,
    /// Seconds the timer was armed. At least the `millis` asked for, and more on a loaded
    /// machine or under very short periods: the loop looks at the clock every 1024 steps, and a
    /// thread that spends its time in tick handlers takes long to reach the next look.
    pub armed_secs: f64,
}

impl TickOverhead {
    /// The ticks a timer of `period_us` would deliver over the armed time, none lost.
    pub fn expected(&self, period_us: f64) -> f64 {
        self.armed_secs * 1e6 / period_us
    }
}

/// The fraction of a thread's work lost to ticks every `period_us` microseconds, measured on
/// the calling thread over `millis` ms with and without the timer (seed 003 Fig. 5), the ticks
/// delivered and how long the timer was armed.
pub fn tick_overhead(period_us: f64, millis: u64) -> std::io::Result<TickOverhead> {
    let flag = Flag::default();
    let base = work_rate(millis);
    let mut t = Timer::new(&flag, period_us)?;
    let armed = std::time::Instant::now();
    t.set(true);
    let with = work_rate(millis);
    t.set(false);
    let armed_secs = armed.elapsed().as_secs_f64();
    let delivered = flag.delivered();
    drop(t);
    let base2 = work_rate(millis);
    Ok(TickOverhead {
        overhead: 1.0 - with / ((base + base2) / 2.0),
        delivered,
        armed_secs,
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn an_armed_timer_raises_the_flag_of_its_own_thread_only() {
        let flag = Flag::default();
        flag.set_gating(true);
        let mut t = Timer::new(&flag, 200.0).expect("timer");
        assert!(!flag.take());
        t.set(true);
        let start = std::time::Instant::now();
        while !flag.take() {
            assert!(start.elapsed().as_secs() < 5, "no tick in 5 s");
            std::hint::spin_loop();
        }
        t.set(false);
        let n = flag.delivered();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(flag.delivered() <= n + 1, "a disarmed timer stops ticking");
    }

    /// The `--preempt --tick-us 50` stall's mechanism, made certain: with 10 ms of timer slack
    /// on the thread, a relative sleep restarted after every 50 µs tick (`std::thread::sleep`,
    /// which the idle worker used) never ends; `nap` must end all the same.
    #[test]
    fn a_nap_ends_under_ticks_faster_than_the_timer_slack() {
        use std::time::Duration;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Safety: PR_SET_TIMERSLACK takes a plain value and changes this thread only.
            let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 10_000_000 as libc::c_ulong) };
            assert_eq!(rc, 0, "prctl(PR_SET_TIMERSLACK)");
            let flag = Flag::default();
            let mut t = Timer::new(&flag, 50.0).expect("timer");
            t.set(true);
            for _ in 0..5 {
                nap(Duration::from_micros(50));
            }
            t.set(false);
            let _ = tx.send(flag.delivered());
        });
        // A stuck wait leaves its thread behind (it ends with the test process).
        let delivered = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("nap did not return in 30 s under 50 µs ticks");
        assert!(delivered > 0, "ticks came while it waited");
    }

    #[test]
    fn the_alpha_rule_enables_ticks_when_returns_are_rarer_than_ticks() {
        let mut r = AlphaRule::new(50.0, 0.5);
        assert!(!r.wants_ticks(), "no sample yet");
        // 300 µs events with 3 returns: T = 100 µs >= 1.5 x 50 µs.
        r.sample(300e-6, 3);
        assert!(r.wants_ticks());
        // 300 µs events with 150 returns: T = 2 µs.
        for _ in 0..200 {
            r.sample(300e-6, 150);
        }
        assert!(!r.wants_ticks());
        assert!((r.t() - 2e-6).abs() < 1e-7);
    }
}
