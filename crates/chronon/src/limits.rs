//! Sizes checked before anything is allocated.
//!
//! [`Simulation::run`](crate::Simulation::run) estimates, with checked arithmetic, the memory a
//! run needs at its start — the LPs, the events pending at once, the workers' tables — from the
//! LP count, the executor and the model's [`SizeHint`], and refuses the run with a one-line
//! [`SimError::Config`] naming the estimate and the limit when the estimate exceeds the memory
//! the machine can give ([`MemoryLimit::detect`]), or does not fit in 64 bits at all. It also
//! bounds the thread count and the shared sets. The rules:
//!
//! - **Memory**: `lps × (LP record + state heap) + lps × pending events per LP × (event record +
//!   payload heap) + workers × worker overhead + workers² × 16 B (channel and lookahead
//!   tables) + shared sets × 128 B + model bytes` must not exceed the limit. It is a lower bound on what
//!   the run needs (speculation under Time Warp, bounded by `max_memory`, comes on top), so a
//!   refused run could never have fit.
//! - **Limit**: the `CHRONON_MEMORY_LIMIT` environment variable (bytes, suffix K, M, G or T,
//!   powers of 1024) when set; else, on Linux, `MemAvailable` from `/proc/meminfo`, lowered to
//!   what the cgroup (v2 `memory.max` − `memory.current`) leaves when that is smaller; elsewhere
//!   (or when nothing can be read) no machine limit, and only the 64-bit overflow check applies.
//!   [`Simulation::memory_limit`](crate::Simulation::memory_limit) overrides all of these.
//! - **Threads**: at most [`MAX_THREADS`]; and at most `max(LPs, 64)`: a worker beyond the LP
//!   count owns no LP and only adds synchronization (a few are allowed so small test models run
//!   on any thread count).
//! - **Shared sets** (window load balancing): at most `max(LPs, 64)` (a set beyond the LP count
//!   is always empty).

use crate::error::{ConfigError, Setting, SimError};

/// The most worker threads a run may have.
pub const MAX_THREADS: usize = 4096;

/// How many more workers than LPs (in all) a run may have; see the module documentation.
pub const IDLE_WORKERS_ALLOWED: u64 = 64;

/// Engine bytes per worker besides the tables that grow with the square of the worker count
/// (queues, mailboxes, statistics, the touched part of its stack).
const WORKER_BYTES: u64 = 64 << 10;

/// Engine bytes per LP besides [`crate::executor::LpSlot`] (owner tables, queue bookkeeping).
const LP_EXTRA_BYTES: u64 = 32;

/// Engine bytes per pending event besides the event record (the queue's slack).
const EVENT_EXTRA_BYTES: u64 = 16;

/// What a model allocates, for the size check before a run (see [`Model::size_hint`]).
///
/// [`Model::size_hint`]: crate::Model::size_hint
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeHint {
    /// The most events pending at once per LP, on average (at least the events each LP sends
    /// from `init`).
    pub pending_per_lp: u64,
    /// Heap bytes of each LP's state beyond `size_of::<State>()`.
    pub state_heap_bytes: u64,
    /// Heap bytes of each event's payload beyond `size_of::<Event>()`.
    pub payload_heap_bytes: u64,
    /// Bytes the model allocates besides its LPs and events (tables, buffers), in all; `None`
    /// when that overflows 64 bits.
    pub model_bytes: Option<u64>,
    /// What `model_bytes` counts, for messages (e.g. `nodes × batching-factor × ops-per-tx
    /// accesses`).
    pub model_what: &'static str,
}

impl SizeHint {
    /// A hint of `pending_per_lp` events per LP and nothing else.
    pub fn pending(pending_per_lp: u64) -> Self {
        SizeHint {
            pending_per_lp,
            model_bytes: Some(0),
            ..SizeHint::default()
        }
    }
}

/// The memory a run may use, and where that figure comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLimit {
    /// Bytes; `None` when nothing is known (only overflow is then refused).
    pub bytes: Option<u64>,
    /// Where the figure comes from, for messages.
    pub source: String,
}

impl MemoryLimit {
    /// A fixed limit.
    pub fn fixed(bytes: u64, source: &str) -> Self {
        MemoryLimit {
            bytes: Some(bytes),
            source: source.to_string(),
        }
    }

    /// The limit of this machine and process (see the module documentation).
    pub fn detect() -> Self {
        if let Ok(v) = std::env::var("CHRONON_MEMORY_LIMIT") {
            if let Some(b) = parse_bytes(&v) {
                return MemoryLimit::fixed(b, "CHRONON_MEMORY_LIMIT");
            }
        }
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
        let mut limit = match meminfo.as_deref().and_then(meminfo_available) {
            Some((b, field)) => MemoryLimit::fixed(b, &format!("{field} in /proc/meminfo")),
            None => MemoryLimit {
                bytes: None,
                source: "no memory figure available".into(),
            },
        };
        let read = |p: &str| std::fs::read_to_string(p).ok();
        if let Some(free) = cgroup_free(
            read("/sys/fs/cgroup/memory.max").as_deref(),
            read("/sys/fs/cgroup/memory.current").as_deref(),
        ) {
            if limit.bytes.is_none_or(|b| free < b) {
                limit = MemoryLimit::fixed(free, "the cgroup's memory.max");
            }
        }
        limit
    }
}

/// `MemAvailable` (or, without it, `MemTotal`) from the text of `/proc/meminfo`, in bytes.
pub fn meminfo_available(text: &str) -> Option<(u64, &'static str)> {
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .and_then(|kib| kib.checked_mul(1024))
    };
    field("MemAvailable:")
        .map(|b| (b, "MemAvailable"))
        .or_else(|| field("MemTotal:").map(|b| (b, "MemTotal")))
}

/// What a cgroup v2 limit leaves (`memory.max` − `memory.current`); `None` without a limit.
fn cgroup_free(max: Option<&str>, current: Option<&str>) -> Option<u64> {
    let max: u64 = max?.trim().parse().ok()?;
    let current: u64 = current.and_then(|c| c.trim().parse().ok()).unwrap_or(0);
    Some(max.saturating_sub(current))
}

/// A byte count with an optional K, M, G or T suffix (powers of 1024).
pub fn parse_bytes(s: &str) -> Option<u64> {
    let t = s.trim();
    let (digits, shift) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 10),
        'M' | 'm' => (&t[..t.len() - 1], 20),
        'G' | 'g' => (&t[..t.len() - 1], 30),
        'T' | 't' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()?
        .checked_mul(1u64 << shift)
}

/// A byte count for people: `1.5 GiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// The figures of a run that the size check looks at.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunSize {
    pub lps: u64,
    pub threads: u64,
    pub shared_sets: u64,
    /// `size_of` the engine's LP record (state included).
    pub lp_record: u64,
    /// `size_of` the engine's event record (payload included).
    pub event_record: u64,
    pub hint: SizeHint,
    /// How many processes each hold the whole LP table (1; P under `--procs`, where every
    /// worker process initializes every LP).
    pub lp_copies: u64,
}

/// Checks threads and shared sets against the LP count and [`MAX_THREADS`].
pub(crate) fn check_workers(s: &RunSize) -> Result<(), SimError> {
    if s.threads == 0 {
        return Err(ConfigError::new(Setting::Threads, 0, "it must be at least 1").into());
    }
    let most = s.lps.max(IDLE_WORKERS_ALLOWED);
    if s.threads > most {
        return Err(SimError::config(Setting::Threads, format!(
            "$threads is {} for {} LPs; workers beyond the LPs own nothing and only add synchronization: use at most {most} threads",
            s.threads, s.lps
        )));
    }
    if s.threads > MAX_THREADS as u64 {
        return Err(SimError::config(
            Setting::Threads,
            format!(
                "$threads is {}; at most {MAX_THREADS} worker threads are allowed",
                s.threads
            ),
        ));
    }
    if s.shared_sets > most {
        return Err(SimError::config(Setting::SharedSets, format!(
            "$shared_sets is {} for {} LPs; a set beyond the LPs is always empty: use at most {most} (seed 001 suggests a third to a half of $threads)",
            s.shared_sets, s.lps
        )));
    }
    Ok(())
}

/// The run's memory estimate in bytes (`None`: beyond 64 bits) and its largest term, named.
pub(crate) fn estimate(s: &RunSize) -> (Option<u64>, String) {
    let h = &s.hint;
    let lp_bytes = s
        .lp_record
        .checked_add(LP_EXTRA_BYTES)
        .and_then(|b| b.checked_add(h.state_heap_bytes));
    let lps_total = lp_bytes
        .and_then(|b| b.checked_mul(s.lps))
        .and_then(|b| b.checked_mul(s.lp_copies.max(1)));
    let event_bytes = s
        .event_record
        .checked_add(EVENT_EXTRA_BYTES)
        .and_then(|b| b.checked_add(h.payload_heap_bytes));
    let pending = h.pending_per_lp.max(1);
    let events_total = event_bytes
        .and_then(|b| b.checked_mul(pending))
        .and_then(|b| b.checked_mul(s.lps));
    let workers_total = s
        .threads
        .checked_mul(s.threads)
        .and_then(|w2| w2.checked_mul(16))
        .and_then(|t| t.checked_add(s.threads.checked_mul(WORKER_BYTES)?))
        .and_then(|t| t.checked_add(s.shared_sets.checked_mul(128)?));
    let terms = [
        (
            lps_total,
            format!(
                "{}{} LPs × {} per LP",
                if s.lp_copies > 1 {
                    format!("{} processes × ", s.lp_copies)
                } else {
                    String::new()
                },
                s.lps,
                lp_bytes.map_or("> 16 EiB".into(), human_bytes)
            ),
        ),
        (
            events_total,
            format!(
                "{} LPs × {} pending events × {} per event",
                s.lps,
                pending,
                event_bytes.map_or("> 16 EiB".into(), human_bytes)
            ),
        ),
        (
            workers_total,
            format!("{} threads, {} shared sets", s.threads, s.shared_sets),
        ),
        (
            h.model_bytes,
            if h.model_what.is_empty() {
                "the model's own tables".to_string()
            } else {
                h.model_what.to_string()
            },
        ),
    ];
    let total = terms
        .iter()
        .try_fold(0u64, |acc, (t, _)| acc.checked_add((*t)?));
    let largest = terms
        .iter()
        .max_by_key(|(t, _)| t.unwrap_or(u64::MAX))
        .map(|(_, name)| name.clone())
        .unwrap_or_default();
    (total, largest)
}

/// Refuses a run whose estimate exceeds `limit` (or 64 bits).
pub(crate) fn check_memory(s: &RunSize, limit: &MemoryLimit) -> Result<(), SimError> {
    let (total, largest) = estimate(s);
    match (total, limit.bytes) {
        (None, _) => Err(SimError::config(Setting::Run, format!(
            "the run would need more than 16 EiB of memory (mostly {largest}); reduce the sizes"
        ))),
        (Some(t), Some(l)) if t > l => Err(SimError::config(Setting::Run, format!(
            "the run would need at least {} of memory (mostly {largest}) but {} is available ({}); reduce the sizes",
            human_bytes(t),
            human_bytes(l),
            limit.source
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(lps: u64, pending: u64) -> RunSize {
        RunSize {
            lps,
            threads: 1,
            shared_sets: 0,
            lp_record: 64,
            event_record: 32,
            hint: SizeHint::pending(pending),
            lp_copies: 1,
        }
    }

    #[test]
    fn meminfo_prefers_available_then_total() {
        let t = "MemTotal:       16000 kB\nMemFree: 1 kB\nMemAvailable:    8000 kB\n";
        assert_eq!(meminfo_available(t), Some((8000 * 1024, "MemAvailable")));
        assert_eq!(
            meminfo_available("MemTotal: 4 kB\n"),
            Some((4096, "MemTotal"))
        );
        assert_eq!(meminfo_available("nothing"), None);
    }

    #[test]
    fn cgroup_limit_is_what_is_left() {
        assert_eq!(cgroup_free(Some("max\n"), Some("5")), None);
        assert_eq!(cgroup_free(Some("1000\n"), Some("400\n")), Some(600));
        assert_eq!(cgroup_free(Some("100"), Some("400")), Some(0));
        assert_eq!(cgroup_free(None, None), None);
    }

    #[test]
    fn byte_counts_parse() {
        assert_eq!(parse_bytes("512M"), Some(512 << 20));
        assert_eq!(parse_bytes("2g"), Some(2 << 30));
        assert_eq!(parse_bytes("1000"), Some(1000));
        assert_eq!(parse_bytes("99999999999T"), None);
        assert_eq!(parse_bytes("x"), None);
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn estimates_are_checked_and_compared() {
        let limit = MemoryLimit::fixed(1 << 30, "test");
        assert!(check_memory(&size(1024, 10), &limit).is_ok());
        let e = check_memory(&size(4_000_000_000, 1000), &limit).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("4000000000 LPs × 1000 pending events"), "{m}");
        assert!(m.contains("available (test)"), "{m}");
        let e = check_memory(&size(u64::MAX / 2, u64::MAX / 2), &limit).unwrap_err();
        assert!(e.to_string().contains("16 EiB"), "{e}");
        // No machine figure: only overflow is refused.
        let none = MemoryLimit {
            bytes: None,
            source: "none".into(),
        };
        assert!(check_memory(&size(4_000_000_000, 1000), &none).is_ok());
        assert!(check_memory(&size(u64::MAX, 2), &none).is_err());
    }

    #[test]
    fn workers_are_bounded() {
        let mut s = size(10, 1);
        s.threads = 64;
        assert!(check_workers(&s).is_ok());
        s.threads = 100_000;
        assert!(check_workers(&s)
            .unwrap_err()
            .to_string()
            .contains("at most"));
        s.threads = 65;
        assert!(check_workers(&s).is_err());
        s.lps = 10_000;
        s.threads = 5000;
        assert!(check_workers(&s).is_err());
        s.threads = 2;
        s.shared_sets = u64::MAX;
        let m = check_workers(&s).unwrap_err().to_string();
        assert!(m.contains("shared_sets"), "{m}");
    }
}
