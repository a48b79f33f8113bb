//! The per-LP random stream.
//!
//! Each LP owns one [`LpRng`], seeded from (run seed, LP id). Its whole state is one `u64`
//! (SplitMix64, Steele, Lea and Flood, OOPSLA 2014), so executors save and restore it with the
//! LP's send counter before every event, and it can also be stepped backwards
//! ([`LpRng::reverse`]) by reverse handlers.

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 output function: a good 64-bit mixer.
#[inline(always)]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A small, fast, reversible random stream; one per LP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LpRng {
    state: u64,
}

impl LpRng {
    /// The stream of LP `lp` in a run with seed `seed`.
    pub fn for_lp(seed: u64, lp: u32) -> Self {
        LpRng {
            state: mix64(seed ^ mix64(u64::from(lp).wrapping_add(0x5851_F42D_4C95_7F2D))),
        }
    }

    /// The stream's whole state (saved in checkpoints).
    pub(crate) fn raw(&self) -> u64 {
        self.state
    }

    /// The stream whose state is `raw` (see [`raw`](Self::raw)).
    pub(crate) fn from_raw(raw: u64) -> Self {
        LpRng { state: raw }
    }

    /// The `k`-th seed derived from `seed` (the SplitMix64 output of `seed + k * gamma`):
    /// distinct for distinct `k`, since the output function is a bijection on 64-bit words. For
    /// tools that run many simulations from one seed, such as the replications of a study.
    pub fn derive_seed(seed: u64, k: u64) -> u64 {
        mix64(seed.wrapping_add(k.wrapping_mul(GAMMA)))
    }

    /// A stream from a raw seed (for tools and tests that run outside the engine).
    pub fn from_seed(seed: u64) -> Self {
        LpRng { state: mix64(seed) }
    }

    /// The next 64 random bits.
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix64(self.state)
    }

    /// Uniform in [0, 1).
    #[inline(always)]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi).
    #[inline(always)]
    pub fn uniform_range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Exponentially distributed with the given **mean** (0 when the mean is 0): a service
    /// time of mean 2 is `exponential_mean(2.0)`.
    #[inline(always)]
    pub fn exponential_mean(&mut self, mean: f64) -> f64 {
        // 1 - u is in (0, 1], so the logarithm is finite.
        -mean * (1.0 - self.uniform()).ln()
    }

    /// Exponentially distributed with the given **rate** (events per time unit, > 0): the
    /// time to the next arrival of a Poisson stream of rate 0.5 is `exponential_rate(0.5)`,
    /// whose mean is 2. One draw, like [`exponential_mean`](Self::exponential_mean).
    #[inline(always)]
    pub fn exponential_rate(&mut self, rate: f64) -> f64 {
        -(1.0 - self.uniform()).ln() / rate
    }

    /// Exponentially distributed with the given mean.
    #[deprecated(
        since = "0.1.0",
        note = "the argument is a mean, not a rate: call exponential_mean(mean) or exponential_rate(rate)"
    )]
    #[inline(always)]
    pub fn exponential(&mut self, mean: f64) -> f64 {
        self.exponential_mean(mean)
    }

    /// Uniform integer in [0, n); `n` must be positive.
    #[inline(always)]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `p`.
    #[inline(always)]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// Steps the stream back over the last `draws` calls of [`next_u64`](Self::next_u64)
    /// (every other method draws exactly once).
    pub fn reverse(&mut self, draws: u64) {
        self.state = self.state.wrapping_sub(GAMMA.wrapping_mul(draws));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_by_lp_and_seed() {
        let a = LpRng::for_lp(1, 0).next_u64();
        assert_ne!(a, LpRng::for_lp(1, 1).next_u64());
        assert_ne!(a, LpRng::for_lp(2, 0).next_u64());
        assert_eq!(a, LpRng::for_lp(1, 0).next_u64());
    }

    #[test]
    fn reverse_restores_the_stream() {
        let mut r = LpRng::for_lp(7, 3);
        let start = r;
        let first: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
        r.reverse(5);
        assert_eq!(r, start);
        let again: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
        assert_eq!(first, again);
    }

    #[test]
    fn uniform_and_exponential_have_the_right_means() {
        let mut r = LpRng::from_seed(42);
        let n = 200_000;
        let u: f64 = (0..n).map(|_| r.uniform()).sum::<f64>() / n as f64;
        assert!((u - 0.5).abs() < 0.01, "uniform mean {u}");
        let e: f64 = (0..n).map(|_| r.exponential_mean(2.0)).sum::<f64>() / n as f64;
        assert!((e - 2.0).abs() < 0.03, "exponential mean {e}");
        assert!((0..1000).all(|_| r.below(7) < 7));
        assert_eq!(r.exponential_mean(0.0), 0.0);
        // A rate is the inverse of a mean: rate 0.5, mean 2, from the same one draw.
        let mut a = LpRng::from_seed(9);
        let mut b = LpRng::from_seed(9);
        let (x, y) = (a.exponential_rate(0.5), b.exponential_mean(2.0));
        assert!((x - y).abs() <= 1e-12 * y, "{x} vs {y}");
        assert_eq!(a, b, "one draw each");
        let mut c = LpRng::from_seed(9);
        #[allow(deprecated)]
        let z = c.exponential(2.0);
        assert_eq!(z, y, "the old name is the mean");
    }
}
