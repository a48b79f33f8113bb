//! Claim-by-atomic-index over a shared LP set (seed 001 §3.4.2): each round every worker takes
//! the next unclaimed index with one `fetch_add`; the set's home worker resets the cursor
//! between rounds. See `README.md` ("Load balancing") for the protocol and its proof sketch.

use crate::loom::atomic::{AtomicUsize, Ordering};

/// A per-round claim cursor over a set of `len` items.
#[derive(Debug, Default)]
pub(crate) struct Cursor {
    next: AtomicUsize,
}

impl Cursor {
    pub(crate) fn new() -> Self {
        Cursor {
            next: AtomicUsize::new(0),
        }
    }

    /// The next unclaimed index below `len`, or `None` when every index is taken. Each index
    /// is returned to exactly one caller between two resets.
    #[inline]
    pub(crate) fn claim(&self, len: usize) -> Option<usize> {
        // Ordering: Relaxed — uniqueness comes from the read-modify-write on one location (a
        // total modification order); the data of the claimed LP is handed between workers by
        // the round barriers, not by this counter.
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < len).then_some(i)
    }

    /// Makes every index claimable again. Called only between rounds (no claim can run
    /// concurrently: claims happen after the round's first barrier, resets before it).
    pub(crate) fn reset(&self) {
        // Ordering: Relaxed — the barrier that follows orders it before every claim of the
        // next round.
        self.next.store(0, Ordering::Relaxed);
    }
}

#[cfg(all(test, chronon_loom))]
mod loom_tests {
    use super::Cursor;
    use loom::sync::Arc;
    use loom::thread;

    #[test]
    fn every_index_is_claimed_exactly_once() {
        loom::model(|| {
            let c = Arc::new(Cursor::new());
            let len = 3;
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let c = c.clone();
                    thread::spawn(move || {
                        let mut got = Vec::new();
                        while let Some(i) = c.claim(len) {
                            got.push(i);
                        }
                        got
                    })
                })
                .collect();
            let mut all: Vec<usize> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
            all.sort_unstable();
            assert_eq!(all, vec![0, 1, 2]);
        });
    }
}

#[cfg(all(test, not(chronon_loom)))]
mod tests {
    use super::Cursor;

    #[test]
    fn claims_every_index_once_then_none_until_reset() {
        let c = Cursor::new();
        assert_eq!(
            (c.claim(2), c.claim(2), c.claim(2)),
            (Some(0), Some(1), None)
        );
        c.reset();
        assert_eq!(c.claim(2), Some(0));
    }
}
