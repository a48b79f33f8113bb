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
            Mapping::Block => Ok((0..n).map(|i| (i * w / n.max(1)) as u32).collect()),
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
}
