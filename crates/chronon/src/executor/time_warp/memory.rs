//! The memory bound (`--max-memory`): what it covers, how the footprint is estimated and
//! calibrated, and how speculation is capped to stay under it (docs/timewarp.md, "Memory
//! bound").
//!
//! - **What it covers**: the resident memory of the whole process (what `/proc/self/status`
//!   reports as VmRSS / VmHWM), not only the records Time Warp counts.
//! - **Estimate**: `fixed + Σ workers' dynamic bytes + correction`. `fixed` is *measured* once
//!   the LPs and initial events are in place (VmRSS then, less the dynamic bytes counted at
//!   that moment): binary, LP records, queue structure, allocator slack at start. The dynamic
//!   bytes are counted by the workers: pending events, processed records (the history arena and
//!   its extras log at their capacity), coast logs, checkpoints, cancelled ids. While a sample
//!   of VmRSS (at most every `SAMPLE_EVERY`, a fifth of that after a sample near the bound
//!   or while the cap is below `MIN_CAP`, taken by the worker that completes a GVT round) is within `CALIBRATE_FROM` of the bound
//!   and above the estimate, `correction` is raised to meet it (what the counts miss: a
//!   state's heap in its checkpoints, say); a sample below the estimate lowers it again.
//! - **Cap**: the worker that completes a GVT round gives the speculative part (processed,
//!   uncommitted history) what is left below `TARGET` × bound, as a number of uncommitted
//!   events per worker (at the measured bytes per history record). A worker at its cap runs
//!   only events at or before GVT and starts GVT rounds early, so fossil collection frees
//!   history and it goes on; it never speculates into memory it has not got.
//! - **Allocator slack**: a sample above `CALIBRATE_FROM` of the bound and above the estimate
//!   is taken again after the allocator gives its free memory back to the OS (`crate::trim`):
//!   memory the workers freed stays resident in their threads' arenas, and on a small,
//!   thrashing run it made VmRSS 2.4 times what Time Warp held and failed runs whose
//!   history fitted.
//! - **Giving up**: when the cap stays below `MIN_CAP` events per worker for
//!   `OVER_ROUNDS_MAX` GVT rounds in a row (the non-speculative part — pending events, LPs —
//!   leaves no room to make progress at a reasonable rate) while the latest sample of VmRSS is
//!   above `CALIBRATE_FROM` of the bound (a small cap with the process far from the bound is
//!   an estimate running ahead: samples bring it back), or VmRSS exceeds the bound by
//!   `HARD_OVER` in two samples in a row (the first caps speculation through the correction;
//!   the second shows that did not help), the run fails with one line naming the bound that
//!   would fit.
//! - **Up front**: before `init`, a bound below the process's resident memory plus the LP
//!   records is refused; after `init`, a bound below the measured footprint plus the minimum
//!   speculation room is refused, both naming the minimum.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The share of the bound that the estimate aims to stay under (the rest is headroom for
/// what the estimate does not see between two samples).
pub(crate) const TARGET: f64 = 0.9;
/// Fewer uncommitted events per worker than this and the run would crawl: give up instead.
pub(crate) const MIN_CAP: u64 = 256;
/// GVT rounds in a row with the cap below `MIN_CAP` before the run gives up.
const OVER_ROUNDS_MAX: u64 = 8;
/// Seconds between two samples of VmRSS.
const SAMPLE_EVERY: f64 = 0.005;
/// Samples above this share of the bound calibrate the estimate (correction).
const CALIBRATE_FROM: f64 = 0.8;
/// Measured VmRSS above bound × this fails the run at once.
const HARD_OVER: f64 = 1.05;

/// What the bound charges for a pending set: its events' bytes times the set's peak factor
/// (`PendingSet::peak_factor`).
pub(crate) fn pending_bytes<T: crate::event::Keyed, Q: crate::queue::PendingSet<T>>(q: &Q) -> f64 {
    q.peak_factor() * (q.len() * std::mem::size_of::<T>()) as f64
}

/// A `/proc/self/status` figure in bytes (`None` where it is unavailable).
fn status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = s
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The process's resident memory now (VmRSS).
pub(crate) fn resident_bytes() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// The process's peak resident memory so far (VmHWM).
pub(crate) fn peak_resident_bytes() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// A bound to suggest for a need of `bytes`: 5 % more (the measured footprint varies from run
/// to run: once, under a loaded test suite, a run at the bound named after init needed 3.1 %
/// more than that need), rounded up to whole MiB, written like `--max-memory` takes it.
pub(crate) fn mib(bytes: f64) -> String {
    format!("{}M", (bytes * 1.05 / f64::from(1u32 << 20)).ceil() as u64)
}

/// What the worker completing a GVT round hands in: the sum of the workers' figures.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Totals {
    /// All dynamic bytes counted by the workers.
    pub dynamic: u64,
    /// The part of `dynamic` that grows with the history records held: the arena's slots and
    /// log entries in use (not its spare capacity), coast logs, checkpoints.
    pub history: u64,
    /// History records held.
    pub records: u64,
}

/// The figures for the report.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Summary {
    pub fixed: u64,
    pub correction: u64,
    pub peak_estimate: u64,
    pub min_cap: u64,
    pub capped_rounds: u64,
    pub rss_samples: u64,
    /// Samples before which the allocator's free memory was given back (crate::trim).
    pub trims: u64,
}

#[derive(Debug)]
struct Ctl {
    correction: u64,
    /// The last sample was above `CALIBRATE_FROM` of the bound.
    near: bool,
    /// The last sample was above `HARD_OVER` of the bound.
    hard_over: bool,
    /// A sample of VmRSS was ever taken (`/proc` is readable).
    sampled: bool,
    last_sample: f64,
    over_rounds: u64,
    summary: Summary,
}

/// The bound and its controller, shared by all workers.
#[derive(Debug)]
pub(crate) struct MemoryBound {
    /// The bound in bytes (`u64::MAX`: none).
    pub bound: u64,
    threads: u64,
    /// The most uncommitted events per worker without a bound.
    default_cap: u64,
    /// Calibrated fixed footprint (see the module comment).
    fixed: u64,
    /// Uncommitted events a worker may hold now.
    cap: AtomicU64,
    ctl: Mutex<Ctl>,
}

impl MemoryBound {
    /// `fixed` is the footprint measured (or estimated) after init, less the dynamic bytes.
    pub(crate) fn new(bound: Option<u64>, threads: usize, default_cap: u64, fixed: u64) -> Self {
        MemoryBound {
            bound: bound.unwrap_or(u64::MAX),
            threads: threads as u64,
            default_cap,
            fixed,
            cap: AtomicU64::new(default_cap),
            ctl: Mutex::new(Ctl {
                correction: 0,
                near: false,
                hard_over: false,
                sampled: false,
                last_sample: f64::NEG_INFINITY,
                over_rounds: 0,
                summary: Summary {
                    fixed,
                    min_cap: default_cap,
                    ..Summary::default()
                },
            }),
        }
    }

    /// Whether a bound is set.
    #[inline]
    pub(crate) fn bounded(&self) -> bool {
        self.bound != u64::MAX
    }

    /// The most uncommitted events a worker may hold now.
    #[inline]
    pub(crate) fn cap(&self) -> u64 {
        // Ordering: advice on how far to speculate, recomputed every GVT round; any value is
        // safe (a worker at its cap still runs the events at GVT).
        self.cap.load(Ordering::Relaxed)
    }

    /// The smallest bound worth trying for a footprint of `base` bytes that cannot shrink
    /// (plus room for `MIN_CAP` records of `record` bytes per worker).
    pub(crate) fn minimum_for(&self, base: f64, record: f64) -> f64 {
        (base + 2.0 * (self.threads * MIN_CAP) as f64 * record) / TARGET
    }

    /// The worker that completed a GVT round (at `wall` seconds) recomputes the cap from the
    /// workers' totals. Returns the error that ends the run when progress has stopped.
    pub(crate) fn adjust(&self, t: Totals, wall: f64, record_size: u64) -> Option<String> {
        self.adjust_sampling(t, wall, record_size, resident_bytes)
    }

    /// [`adjust`](Self::adjust) with the process's resident bytes read by `resident_bytes`
    /// (the tests give figures of their own).
    fn adjust_sampling(
        &self,
        t: Totals,
        wall: f64,
        record_size: u64,
        mut resident_bytes: impl FnMut() -> Option<u64>,
    ) -> Option<String> {
        let Ok(mut c) = self.ctl.lock() else {
            return None;
        };
        let estimate = |c: &Ctl| self.fixed + t.dynamic + c.correction;
        // Near the bound, or while the cap is below `MIN_CAP`, samples come five times as
        // often: what the estimate misses can grow by tens of MB within one `SAMPLE_EVERY`,
        // and giving up waits for a sample (below).
        let every = if c.near || c.over_rounds > 0 {
            SAMPLE_EVERY / 5.0
        } else {
            SAMPLE_EVERY
        };
        if wall - c.last_sample >= every {
            c.last_sample = wall;
            if let Some(mut rss) = resident_bytes() {
                c.summary.rss_samples += 1;
                c.sampled = true;
                if rss as f64 > self.bound as f64 * CALIBRATE_FROM && rss > estimate(&c) {
                    // Above the estimate near the bound: first give back what the threads'
                    // allocator arenas keep free (resident, holding nothing; crate::trim),
                    // so that neither the correction nor the verdict counts it.
                    if crate::trim::release_free_memory() {
                        c.summary.trims += 1;
                        rss = resident_bytes().unwrap_or(rss);
                    }
                }
                let est = estimate(&c);
                c.near = rss as f64 > self.bound as f64 * CALIBRATE_FROM;
                if c.near && rss > est {
                    c.correction += rss - est;
                } else if rss < est {
                    // A sample below the estimate gives back correction that an earlier one
                    // added: what the estimate misses (a state's heap in its checkpoints, a
                    // burst of allocator slack) shrinks with the history once the cap bites.
                    c.correction -= c.correction.min(est - rss);
                }
                // Over by `HARD_OVER` in two samples in a row: the first one has capped
                // speculation (the correction above), the second shows that did not help.
                let hard = rss as f64 > self.bound as f64 * HARD_OVER;
                let again = std::mem::replace(&mut c.hard_over, hard);
                if hard && again {
                    let base = (self.fixed + c.correction + t.dynamic - t.history) as f64;
                    let need = self
                        .minimum_for(base, record_size as f64)
                        .max(rss as f64 / TARGET);
                    return Some(format!(
                        "Time Warp's process holds {rss} bytes resident (VmRSS), above --max-memory {} even with speculation capped; try --max-memory {} or more",
                        self.bound,
                        mib(need)
                    ));
                }
            }
        }
        let est = estimate(&c);
        c.summary.peak_estimate = c.summary.peak_estimate.max(est);
        c.summary.correction = c.correction;
        // Bytes per history record as measured (holes, logs, checkpoints included; the arena's
        // spare capacity is in `base`).
        let per = (t.history as f64 / t.records.max(1) as f64).max(record_size as f64);
        let base = est - t.history;
        let room = self.bound as f64 * TARGET - base as f64;
        let cap = if room <= 0.0 {
            0
        } else {
            ((room / (self.threads as f64 * per)) as u64).min(self.default_cap)
        };
        // Ordering: see `cap`.
        self.cap.store(cap.max(1), Ordering::Relaxed);
        if cap < self.default_cap {
            c.summary.capped_rounds += 1;
        }
        c.summary.min_cap = c.summary.min_cap.min(cap);
        if cap < MIN_CAP {
            c.over_rounds += 1;
            // Giving up needs the process itself near the bound in its latest sample (where
            // VmRSS can be read): a cap that is small because the estimate ran ahead of the
            // process only slows the run until a sample brings the estimate back.
            let high = c.near || !c.sampled;
            if c.over_rounds >= OVER_ROUNDS_MAX && high {
                let need = self.minimum_for(base as f64, per);
                return Some(format!(
                    "Time Warp needs about {} bytes (process base {}, pending events and LPs {}) to make progress, above --max-memory {}; try --max-memory {} or more",
                    need as u64,
                    self.fixed + c.correction,
                    t.dynamic - t.history,
                    self.bound,
                    mib(need)
                ));
            }
        } else {
            c.over_rounds = 0;
        }
        None
    }

    /// The figures for the report.
    pub(crate) fn summary(&self) -> Summary {
        self.ctl.lock().map(|c| c.summary).unwrap_or_default()
    }
}

/// Counts behind the memory estimate (besides the arena, which knows its own size).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Census {
    /// Events in the LPs' coast logs (copy state saving).
    pub(super) coast: u64,
    pub(super) checkpoints: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    /// A bound of `bound` MB over a process of `fixed` MB, 2 workers.
    fn bound(bound: u64, fixed: u64) -> MemoryBound {
        MemoryBound::new(Some(bound * MB), 2, 4096, fixed * MB)
    }

    fn totals(dynamic: u64, history: u64, records: u64) -> Totals {
        Totals {
            dynamic: dynamic * MB,
            history: history * MB,
            records,
        }
    }

    #[test]
    fn a_sample_above_the_estimate_near_the_bound_corrects_it_and_a_lower_one_gives_it_back() {
        let m = bound(100, 10);
        // 90 MB resident against an estimate of 10 + 20: corrected by 60 MB.
        assert!(m
            .adjust_sampling(totals(20, 0, 0), 0.0, 100, || Some(90 * MB))
            .is_none());
        assert_eq!(m.summary().correction, 60 * MB);
        // Far from the bound but below the estimate (10 + 20 + 60): given back down to it.
        assert!(m
            .adjust_sampling(totals(20, 0, 0), 1.0, 100, || Some(50 * MB))
            .is_none());
        assert_eq!(m.summary().correction, 20 * MB);
        // A sample far from the bound and above the estimate changes nothing.
        assert!(m
            .adjust_sampling(totals(0, 0, 0), 2.0, 100, || Some(70 * MB))
            .is_none());
        assert_eq!(m.summary().correction, 20 * MB);
    }

    #[test]
    fn a_small_cap_gives_up_only_while_the_process_is_near_the_bound() {
        // Pending events and LPs (95 MB counted) leave no room under 90 % of 100 MB.
        let t = totals(95, 0, 0);
        let far = bound(100, 0);
        for k in 0..3 * OVER_ROUNDS_MAX {
            // The process holds 50 MB: the estimate ran ahead of it.
            let out = far.adjust_sampling(t, k as f64, 100, || Some(50 * MB));
            assert!(out.is_none(), "round {k}: {out:?}");
        }
        assert_eq!(far.cap(), 1);
        let near = bound(100, 0);
        let mut verdict = None;
        for k in 0..OVER_ROUNDS_MAX {
            verdict = near.adjust_sampling(t, k as f64, 100, || Some(95 * MB));
            assert_eq!(verdict.is_some(), k + 1 == OVER_ROUNDS_MAX, "round {k}");
        }
        let msg = verdict.unwrap();
        assert!(msg.contains("to make progress"), "{msg}");
        // Without /proc (no sample) the estimate alone decides, as before.
        let blind = bound(100, 0);
        let gave_up = (0..OVER_ROUNDS_MAX)
            .any(|k| blind.adjust_sampling(t, k as f64, 100, || None).is_some());
        assert!(gave_up);
    }

    #[test]
    fn resident_memory_over_the_bound_fails_the_run_in_the_second_sample_in_a_row() {
        let m = bound(100, 0);
        let over = || Some(110 * MB);
        assert!(m.adjust_sampling(totals(0, 0, 0), 0.0, 100, over).is_none());
        // A sample back under the bound in between starts the count again.
        assert!(m
            .adjust_sampling(totals(0, 0, 0), 1.0, 100, || Some(60 * MB))
            .is_none());
        assert!(m.adjust_sampling(totals(0, 0, 0), 2.0, 100, over).is_none());
        // Within the sampling interval nothing is read, so nothing is judged.
        assert!(m.adjust_sampling(totals(0, 0, 0), 2.0, 100, over).is_none());
        let msg = m
            .adjust_sampling(totals(0, 0, 0), 3.0, 100, over)
            .expect("the second sample in a row over 1.05 x the bound");
        assert!(msg.contains("resident (VmRSS)"), "{msg}");
    }
}
