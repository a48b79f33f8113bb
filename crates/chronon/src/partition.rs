//! Mapping LPs onto workers.

use crate::model::LpId;

/// How LPs are assigned to workers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mapping {
    /// Contiguous blocks: worker `w` owns LPs `[w * n / W, (w + 1) * n / W)`.
    #[default]
    Block,
    /// LP `i` goes to worker `i % W`.
    RoundRobin,
    /// Given explicitly: `owner[i]` is LP `i`'s worker.
    Explicit(Vec<u32>),
}

impl Mapping {
    /// The worker of every LP, for `lps` LPs on `workers` workers (`workers >= 1`).
    ///
    /// Returns an error naming the problem for an explicit mapping of the wrong length or with
    /// a worker out of range.
    pub fn owners(&self, lps: LpId, workers: usize) -> Result<Vec<u32>, String> {
        let n = lps as usize;
        let w = workers.max(1);
        match self {
            Mapping::Block => Ok((0..n).map(|i| block_owner(i, n, w)).collect()),
            Mapping::RoundRobin => Ok((0..n).map(|i| (i % w) as u32).collect()),
            Mapping::Explicit(v) => {
                if v.len() != n {
                    return Err(format!(
                        "the explicit LP mapping has {} entries for {n} LPs",
                        v.len()
                    ));
                }
                if let Some((i, o)) = v.iter().enumerate().find(|(_, &o)| o as usize >= w) {
                    return Err(format!(
                        "the explicit LP mapping puts LP {i} on worker {o}, but there are {w} workers"
                    ));
                }
                Ok(v.clone())
            }
        }
    }
}

/// The worker of LP `lp` under [`Mapping::Block`] with `lps` LPs on `workers` workers:
/// `floor(lp * workers / lps)`.
pub(crate) fn block_owner(lp: usize, lps: usize, workers: usize) -> u32 {
    (lp as u64 * workers as u64 / (lps as u64).max(1)) as u32
}

/// Marks a dedicated LP in the result of [`shared_split`].
pub const DEDICATED: u32 = u32::MAX;

/// Load balancing (seed 001 §3.4): splits every worker's LPs (`owner[i]` is LP `i`'s worker)
/// into a dedicated part, `round(dedicated * n_w)` of its `n_w` LPs spread evenly over them (in
/// LP order, a Bresenham walk), and a shared part; the shared LPs go to the `sets` shared sets
/// in turn, in LP order. Returns, per LP, its shared set or [`DEDICATED`].
pub fn shared_split(owner: &[u32], workers: usize, dedicated: f64, sets: usize) -> Vec<u32> {
    let w = workers.max(1);
    let mut count = vec![0usize; w];
    for &o in owner {
        count[o as usize] += 1;
    }
    let keep: Vec<usize> = count
        .iter()
        .map(|&n| ((dedicated.clamp(0.0, 1.0) * n as f64).round() as usize).min(n))
        .collect();
    let mut seen = vec![0usize; w];
    let mut next_set = 0usize;
    owner
        .iter()
        .map(|&o| {
            let o = o as usize;
            let (j, n, d) = (seen[o], count[o], keep[o]);
            seen[o] += 1;
            if (j + 1) * d / n > j * d / n || sets == 0 {
                DEDICATED
            } else {
                let s = next_set % sets;
                next_set += 1;
                s as u32
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_and_round_robin_cover_every_worker_evenly() {
        let b = Mapping::Block.owners(10, 3).unwrap();
        assert_eq!(b, vec![0, 0, 0, 0, 1, 1, 1, 2, 2, 2]);
        let r = Mapping::RoundRobin.owners(5, 2).unwrap();
        assert_eq!(r, vec![0, 1, 0, 1, 0]);
        assert!(Mapping::Explicit(vec![0, 3]).owners(2, 2).is_err());
        assert!(Mapping::Explicit(vec![0]).owners(2, 2).is_err());
    }

    #[test]
    fn shared_split_keeps_the_dedicated_fraction_of_each_worker() {
        let owner = Mapping::Block.owners(8, 2).unwrap();
        let all = shared_split(&owner, 2, 1.0, 2);
        assert!(all.iter().all(|&s| s == DEDICATED));
        let none = shared_split(&owner, 2, 0.0, 2);
        assert_eq!(none, vec![0, 1, 0, 1, 0, 1, 0, 1]);
        let half = shared_split(&owner, 2, 0.5, 3);
        let d = DEDICATED;
        assert_eq!(half, vec![0, d, 1, d, 2, d, 0, d]);
        let quarter = shared_split(&owner, 2, 0.25, 1);
        assert_eq!(quarter.iter().filter(|&&s| s == DEDICATED).count(), 2);
    }
}
