//! The fingerprint: an order-independent digest of the committed history.
//!
//! Each LP folds the keys of the events it commits, in commit order, into a 64-bit running hash
//! ([`LpDigest`]). The run's fingerprint combines the LPs' digests with a commutative sum, so it
//! does not depend on which worker committed which LP or when — only on what each LP committed
//! and in what order. Two runs with equal fingerprints committed the same history (up to a
//! 64-bit hash collision); every executor is tested against the sequential one through it.

use std::fmt;

use crate::event::EventKey;
use crate::rng::mix64;
use crate::types::LpId;

/// The digest's multiplier (odd, so invertible modulo 2^64) and its inverse.
const MUL: u64 = 0x9E37_79B9_7F4A_7C15;
const INV_MUL: u64 = inverse_mod_2_64(MUL);

/// The word a key contributes to its LP's digest.
#[inline(always)]
fn word(key: &EventKey) -> u64 {
    key.time_bits() ^ (u64::from(key.src) << 40) ^ key.seq.rotate_left(17)
}

/// The inverse of odd `a` modulo 2^64 (Newton's iteration, each step doubles the bits).
const fn inverse_mod_2_64(a: u64) -> u64 {
    let mut x = a; // correct to 3 bits for odd a
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        i += 1;
    }
    x
}

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
        self.hash = (self.hash.rotate_left(23) ^ word(key)).wrapping_mul(MUL);
        self.count += 1;
    }

    /// Undoes the last [`commit`](Self::commit), which folded `key` (Time Warp's rollback:
    /// the fold is invertible, so a processed record need not keep the digest before it).
    #[inline]
    pub fn uncommit(&mut self, key: &EventKey) {
        self.hash = (self.hash.wrapping_mul(INV_MUL) ^ word(key)).rotate_right(23);
        self.count -= 1;
    }

    /// Events committed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The running hash and the count (saved in checkpoints).
    pub(crate) fn raw(&self) -> (u64, u64) {
        (self.hash, self.count)
    }

    /// The digest of [`raw`](Self::raw) `(hash, count)`.
    pub(crate) fn from_raw(hash: u64, count: u64) -> Self {
        LpDigest { hash, count }
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
    fn uncommit_undoes_commits_newest_first() {
        assert_eq!(MUL.wrapping_mul(INV_MUL), 1);
        let keys: Vec<EventKey> = (0..50)
            .map(|i| key(f64::from(i) * 0.37, i * 7 % 13, u64::from(i) * 3))
            .collect();
        let mut d = LpDigest::default();
        let mut seen = vec![d];
        for k in &keys {
            d.commit(k);
            seen.push(d);
        }
        for (i, k) in keys.iter().enumerate().rev() {
            d.uncommit(k);
            assert_eq!(d, seen[i]);
        }
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
