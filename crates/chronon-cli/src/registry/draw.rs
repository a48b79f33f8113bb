//! What a model's `check` draw gets ([`ModelSpec::draw`](super::ModelSpec::draw)): the random
//! choices of one configuration and the flags it sets.

use chronon::LpRng;

/// Random choices for `check`'s draws (a campaign's seed replays them): integers, chances,
/// one of a list, round numbers on a grid.
pub struct Draw {
    rng: LpRng,
}

impl Draw {
    pub(crate) fn new(seed: u64) -> Self {
        Draw {
            rng: LpRng::from_seed(seed),
        }
    }

    /// An integer in `lo..=hi` (`lo <= hi`).
    pub fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rng.below(hi - lo + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.rng.uniform() < p
    }

    /// One of `items` (not empty).
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.rng.below(items.len() as u64) as usize]
    }

    /// A float in `[lo, hi)` rounded to a multiple of `step` (round numbers reproduce
    /// exactly from the printed command line and make ties).
    pub fn grid(&mut self, lo: f64, hi: f64, step: f64) -> f64 {
        let n = ((hi - lo) / step).floor() as u64;
        lo + step * self.rng.below(n.max(1)) as f64
    }
}

/// The flags of a drawn configuration, as a command line: `set("lps", 8)` adds `--lps 8`.
#[derive(Default)]
pub struct Flags(pub(crate) Vec<String>);

impl Flags {
    /// Adds `--flag value`.
    pub fn set(&mut self, flag: &str, value: impl ToString) -> &mut Self {
        self.0.push(format!("--{flag}"));
        self.0.push(value.to_string());
        self
    }
}
