//! PHOLD, the standard PDES benchmark, with ROSS-compatible semantics.
//!
//! `lps` LPs each start with `start_events` events at `lookahead + Exp(mean - lookahead)`. On
//! each event an LP sends one new event: with probability `remote` to a uniformly random LP
//! (itself included), otherwise to itself, at `now + lookahead + Exp(mean - lookahead)`. Events
//! at or after the end time never execute, so about `lps * start_events * end / mean` events are
//! committed. `work_us` spins for that many microseconds of wall time per event, so handlers cost
//! what a real model's do; `state_bytes` gives each LP that much state, touched by every event.

use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use chronon::{Ctx, LpId, LpRng, Model, ModelStats, ReverseCtx, ReverseFn, SizeHint};

/// PHOLD's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Phold {
    /// Number of LPs.
    pub lps: u32,
    /// Events each LP starts with.
    pub start_events: u32,
    /// Probability that an event goes to a random LP rather than to its sender.
    pub remote: f64,
    /// Minimum delay of every event.
    pub lookahead: f64,
    /// Mean delay of every event (lookahead included).
    pub mean: f64,
    /// Busy work per event, in microseconds of wall time.
    pub work_us: f64,
    /// Bytes of state per LP.
    pub state_bytes: usize,
    /// `hot_lps` consecutive LPs are hot: they spin `hot_work_us` more per event (uneven load).
    /// The hot region starts at LP 0.
    pub hot_lps: u32,
    /// Extra busy work per event of a hot LP, in microseconds of wall time.
    pub hot_work_us: f64,
    /// Every `hot_move` time units the hot region moves on by `hot_lps` LPs (wrapping around),
    /// so no static mapping suits the whole run; 0: it never moves.
    pub hot_move: f64,
    /// Which LPs a remote event may go to.
    pub topology: PholdTopology,
}

/// PHOLD's communication graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PholdTopology {
    /// Every LP may send to every LP (the classic PHOLD).
    #[default]
    Mesh,
    /// LPs on a 2-D torus (`rows x cols`, the most square factorization of `lps`); a remote
    /// event goes to one of the (up to 4) neighbours, chosen uniformly.
    Mesh2d,
}

impl std::str::FromStr for PholdTopology {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mesh" => Ok(PholdTopology::Mesh),
            "mesh2d" => Ok(PholdTopology::Mesh2d),
            _ => Err(format!("unknown topology '{s}' (allowed: mesh, mesh2d)")),
        }
    }
}

/// The torus' column count for `lps` LPs: the largest divisor not above the square root.
fn torus_cols(lps: u32) -> u32 {
    let mut c = (f64::from(lps).sqrt() as u32).max(1);
    while lps % c != 0 {
        c -= 1;
    }
    c
}

/// LP `me`'s neighbours on the torus (sorted, without itself or duplicates).
pub fn torus_neighbours(lps: u32, me: LpId) -> Vec<LpId> {
    let cols = torus_cols(lps);
    let rows = lps / cols;
    let (r, c) = (me / cols, me % cols);
    let mut v = vec![
        ((r + rows - 1) % rows) * cols + c,
        ((r + 1) % rows) * cols + c,
        r * cols + (c + cols - 1) % cols,
        r * cols + (c + 1) % cols,
    ];
    v.sort_unstable();
    v.dedup();
    v.retain(|&x| x != me);
    v
}

impl Default for Phold {
    /// The standard configuration: 1024 LPs, 10 start events, 10% remote, lookahead 0.1, mean 1.
    fn default() -> Self {
        Phold {
            lps: 1024,
            start_events: 10,
            remote: 0.1,
            lookahead: 0.1,
            mean: 1.0,
            work_us: 0.0,
            state_bytes: 0,
            hot_lps: 0,
            hot_work_us: 0.0,
            hot_move: 0.0,
            topology: PholdTopology::Mesh,
        }
    }
}

impl Phold {
    /// Checks the parameters; the error names the parameter and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if self.lps == 0 {
            return Err("lps is 0; it must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.remote) {
            return Err(format!("remote is {}; it must be in [0, 1]", self.remote));
        }
        if !(self.lookahead >= 0.0 && self.lookahead.is_finite()) {
            return Err(format!(
                "lookahead is {}; it must be finite and >= 0",
                self.lookahead
            ));
        }
        if !(self.mean > 0.0 && self.mean.is_finite()) {
            return Err(format!("mean is {}; it must be finite and > 0", self.mean));
        }
        if self.lookahead > self.mean {
            return Err(format!(
                "lookahead {} is greater than mean {}; it must be <= mean",
                self.lookahead, self.mean
            ));
        }
        if !(self.work_us >= 0.0 && self.work_us.is_finite()) {
            return Err(format!(
                "work-us is {}; it must be finite and >= 0",
                self.work_us
            ));
        }
        if !(self.hot_work_us >= 0.0 && self.hot_work_us.is_finite()) {
            return Err(format!(
                "hot-work-us is {}; it must be finite and >= 0",
                self.hot_work_us
            ));
        }
        if !(self.hot_move >= 0.0 && self.hot_move.is_finite()) {
            return Err(format!(
                "hot-move is {}; it must be finite and >= 0",
                self.hot_move
            ));
        }
        if self.hot_lps > self.lps {
            return Err(format!(
                "hot-lps is {}; it must be at most lps ({})",
                self.hot_lps, self.lps
            ));
        }
        Ok(())
    }

    /// Whether LP `lp` is in the hot region at time `now`: `hot_lps` LPs from
    /// `(k * hot_lps) mod lps`, `k` the number of `hot_move` periods before `now`.
    pub fn is_hot(&self, lp: LpId, now: f64) -> bool {
        if self.hot_lps == 0 {
            return false;
        }
        let n = u64::from(self.lps);
        let k = if self.hot_move > 0.0 {
            (now / self.hot_move) as u64 % n
        } else {
            0
        };
        let start = k * u64::from(self.hot_lps) % n;
        (u64::from(lp) + n - start) % n < u64::from(self.hot_lps)
    }

    /// The expected number of committed events up to `end`.
    pub fn expected_events(&self, end: f64) -> f64 {
        f64::from(self.lps) * f64::from(self.start_events) * end / self.mean
    }

    #[inline(always)]
    fn delay(&self, rng: &mut LpRng) -> f64 {
        self.lookahead + rng.exponential_mean(self.mean - self.lookahead)
    }

    #[inline(always)]
    fn destination(&self, me: LpId, rng: &mut LpRng) -> LpId {
        if rng.uniform() < self.remote {
            match self.topology {
                PholdTopology::Mesh => rng.below(u64::from(self.lps)) as LpId,
                PholdTopology::Mesh2d => {
                    let n = torus_neighbours(self.lps, me);
                    if n.is_empty() {
                        me
                    } else {
                        n[rng.below(n.len() as u64) as usize]
                    }
                }
            }
        } else {
            me
        }
    }
}

/// Index of the `remote_sends` counter.
const REMOTE_SENDS: usize = 0;

/// One PHOLD LP's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PholdLp {
    /// Events this LP executed.
    pub events: u64,
    /// Padding state of `state_bytes` bytes; each event adds 1 to one byte.
    pub data: Vec<u8>,
}

/// PHOLD's event carries nothing: its key is all it needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Job;

/// Spins for `us` microseconds of wall time.
pub fn spin_for_us(us: f64) {
    if us > 0.0 {
        let until = Duration::from_secs_f64(us * 1e-6);
        let start = Instant::now();
        while start.elapsed() < until {
            std::hint::spin_loop();
        }
    }
}

/// Spins for `us` microseconds of wall time *on the CPU*, in slices of [`SLICE_US`] with a
/// [`Ctx::preemption_point`] between two (instrumented application code, seed 003 §2.1): under
/// preemptive Time Warp the event may be switched off the CPU there, and the time it spends
/// off it does not count as work done.
pub fn spin_for_us_in<M: Model + ?Sized>(us: f64, ctx: &mut Ctx<'_, M>) {
    let mut left = us;
    while left > 0.0 {
        let slice = left.min(SLICE_US);
        spin_for_us(slice);
        left -= slice;
        if left > 0.0 {
            ctx.preemption_point();
        }
    }
}

/// About `us` microseconds of CPU work: a loop of a fixed number of steps (this machine's rate,
/// measured once per process) that never calls the engine, never allocates and never reads the
/// clock. Time the event spends off the CPU does not count as work done, and only a tick that
/// preempts by interrupt (`--preempt` with ticks, docs/timewarp.md) switches it off mid-way.
pub fn work_us(us: f64) {
    if us > 0.0 {
        let steps = (us * steps_per_us()).round() as u64;
        std::hint::black_box(work_steps(steps));
    }
}

/// The loop of [`work_us`]: `n` steps of integer mixing.
#[inline(never)]
fn work_steps(n: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..n {
        x = std::hint::black_box(x.wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ i).rotate_left(17);
    }
    x
}

/// Steps of [`work_steps`] per microsecond on this machine, measured on first use (the fastest
/// of three 2 ms samples, so a descheduled sample does not count). In platform mode: the
/// one-time measurement takes a lock that no tick may leave held by a suspended event.
fn steps_per_us() -> f64 {
    static RATE: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    chronon::platform_mode(|| {
        *RATE.get_or_init(|| {
            (0..3)
                .map(|_| {
                    let mut chunks = 0u64;
                    let start = Instant::now();
                    while start.elapsed() < Duration::from_millis(2) {
                        std::hint::black_box(work_steps(4096));
                        chunks += 1;
                    }
                    (chunks * 4096) as f64 / (start.elapsed().as_secs_f64() * 1e6)
                })
                .fold(1.0, f64::max)
        })
    })
}

/// Work between two preemption points of [`spin_for_us_in`], in microseconds.
pub const SLICE_US: f64 = 2.0;

impl Model for Phold {
    fn lp_count(&self) -> Option<chronon::LpId> {
        Some(self.lps)
    }

    type State = PholdLp;
    type Event = Job;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> PholdLp {
        for _ in 0..self.start_events {
            let delay = self.delay(ctx.rng());
            ctx.send(ctx.me(), delay, Job);
        }
        PholdLp {
            events: 0,
            data: vec![0; self.state_bytes],
        }
    }

    #[inline]
    fn on_event(&self, lp: &mut PholdLp, _job: &Job, ctx: &mut Ctx<'_, Self>) {
        let me = ctx.me();
        let dst = self.destination(me, ctx.rng());
        let delay = self.delay(ctx.rng());
        ctx.send(dst, delay, Job);
        if !lp.data.is_empty() {
            let i = (lp.events % lp.data.len() as u64) as usize;
            lp.data[i] = lp.data[i].wrapping_add(1);
        }
        lp.events += 1;
        ctx.count(REMOTE_SENDS, i64::from(dst != me));
        if self.is_hot(me, ctx.now()) {
            spin_for_us_in(self.work_us + self.hot_work_us, ctx);
        } else {
            spin_for_us_in(self.work_us, ctx);
        }
    }

    fn lookahead(&self) -> f64 {
        self.lookahead
    }

    /// Each LP keeps `start_events` events pending and `state_bytes` of state.
    fn size_hint(&self) -> SizeHint {
        SizeHint {
            state_heap_bytes: self.state_bytes as u64,
            ..SizeHint::pending(u64::from(self.start_events))
        }
    }

    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
        match self.topology {
            PholdTopology::Mesh => None,
            PholdTopology::Mesh2d => Some(
                torus_neighbours(self.lps, lp)
                    .into_iter()
                    .map(|d| (d, self.lookahead))
                    .collect(),
            ),
        }
    }

    fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
        Some(Self::undo)
    }

    fn counter_names(&self) -> &'static [&'static str] {
        &["remote_sends"]
    }

    fn finish(&self, _lp: LpId, lp: &PholdLp, stats: &mut ModelStats) {
        stats.add("events", lp.events as f64);
    }
}

impl Phold {
    /// The reverse handler ([`Model::reverse_handler`]): undoes `on_event`.
    fn undo(&self, lp: &mut PholdLp, _job: &Job, ctx: &ReverseCtx) {
        lp.events -= 1;
        if !lp.data.is_empty() {
            let i = (lp.events % lp.data.len() as u64) as usize;
            lp.data[i] = lp.data[i].wrapping_sub(1);
        }
        let _ = ctx;
    }
}

/// What the bare reference loop did.
#[derive(Clone, Copy, Debug)]
pub struct BareRun {
    /// Events executed.
    pub events: u64,
    /// Wall seconds of the event loop (initialization excluded).
    pub wall_s: f64,
}

/// The yardstick: PHOLD on a `std::collections::BinaryHeap` of (time, LP) with one random
/// stream and no engine at all — no per-LP state, no checks, no fingerprint.
pub fn bare_heap_loop(p: &Phold, end: f64, seed: u64) -> BareRun {
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    struct Entry(std::cmp::Reverse<u64>, u32);
    let mut rng = LpRng::from_seed(seed);
    let mut heap = BinaryHeap::with_capacity(p.lps as usize * p.start_events as usize);
    for lp in 0..p.lps {
        for _ in 0..p.start_events {
            let t = p.delay(&mut rng);
            heap.push(Entry(std::cmp::Reverse(t.to_bits()), lp));
        }
    }
    let start = Instant::now();
    let mut events = 0u64;
    while let Some(Entry(std::cmp::Reverse(bits), lp)) = heap.pop() {
        let now = f64::from_bits(bits);
        if now >= end {
            break;
        }
        let dst = p.destination(lp, &mut rng);
        let t = now + p.delay(&mut rng);
        heap.push(Entry(std::cmp::Reverse(t.to_bits()), dst));
        events += 1;
    }
    BareRun {
        events,
        wall_s: start.elapsed().as_secs_f64(),
    }
}

// PHOLD's events may cross a process boundary (`--procs`): the payload is empty.
#[cfg(target_os = "linux")]
chronon::impl_shm_safe!(Job {});
