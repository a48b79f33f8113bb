//! The fingerprint: an order-independent digest of the committed history.
//!
//! Each LP folds the keys of the events it commits, in commit order, into a 64-bit running hash
//! ([`LpDigest`]). The run's fingerprint combines the LPs' digests with a commutative sum, so it
//! does not depend on which worker committed which LP or when — only on what each LP committed
//! and in what order. Two runs with equal fingerprints committed the same history (up to a
//! 64-bit hash collision); every executor is tested against the sequential one through it.

use std::fmt;

use crate::event::EventKey;
use crate::model::LpId;
use crate::rng::mix64;

/// One LP's running digest of its committed event keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LpDigest {
    hash: u64,
    count: u64,
}

impl LpDigest {
    /// Folds one committed event key into the digest.
    #[inline(always)]
    pub fn commit(&mut self, key: &EventKey) {
        let k = key.time_bits() ^ (u64::from(key.src) << 40) ^ key.seq.rotate_left(17);
        self.hash = (self.hash.rotate_left(23) ^ k).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.count += 1;
    }

    /// Events committed so far.
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// The run's digest: see the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub u64);

impl Fingerprint {
    /// Combines per-LP digests (in any order) into the fingerprint.
    pub fn from_digests<'a>(digests: impl IntoIterator<Item = (LpId, &'a LpDigest)>) -> Self {
        let mut sum = 0u64;
        for (lp, d) in digests {
            let lp_part = mix64(u64::from(lp).wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ d.count);
            sum = sum.wrapping_add(mix64(d.hash ^ lp_part));
        }
        Fingerprint(sum)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl serde::Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(time: f64, src: u32, seq: u64) -> EventKey {
        EventKey { time, src, seq }
    }

    #[test]
    fn order_within_an_lp_matters_and_across_lps_does_not() {
        let (a, b) = (key(1.0, 0, 0), key(2.0, 1, 0));
        let mut d1 = LpDigest::default();
        d1.commit(&a);
        d1.commit(&b);
        let mut d2 = LpDigest::default();
        d2.commit(&b);
        d2.commit(&a);
        assert_ne!(d1, d2);
        let e = LpDigest::default();
        let f1 = Fingerprint::from_digests([(0, &d1), (1, &e)]);
        let f2 = Fingerprint::from_digests([(1, &e), (0, &d1)]);
        assert_eq!(f1, f2);
        // The same digest on another LP is another history.
        assert_ne!(f1, Fingerprint::from_digests([(1, &d1), (0, &e)]));
        assert_eq!(format!("{f1}").len(), 16);
    }
}
