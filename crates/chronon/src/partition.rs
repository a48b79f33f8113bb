//! Mapping LPs onto workers.

use crate::types::LpId;

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
    /// Contiguous blocks of about equal cost: `cost[i]` is LP `i`'s, in any unit (an earlier
    /// run's nanoseconds, `--mapping profile:FILE`; the last stretch's, `--balance`). The
    /// blocks keep neighbouring LPs together, as [`Mapping::Block`] does, and split a costly
    /// region over several workers: for models that declare a topology.
    Costs(Vec<u64>),
    /// About equal cost per worker, runs of [`SPREAD_RUN`] consecutive LPs (fewer where the
    /// workers would get fewer than 16 runs each) dealt in rounds, as [`Mapping::RoundRobin`]
    /// deals LPs: every round of as many runs as workers gives one run to each worker, the
    /// costliest run to the least loaded worker. For models without a topology: a busy region
    /// that moves on to LPs cold so far still finds them spread over every worker. (Runs
    /// rather than single LPs: neighbouring LP records on different workers share cache
    /// lines.)
    CostsSpread(Vec<u64>),
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
            Mapping::Costs(c) | Mapping::CostsSpread(c) if c.len() != n => {
                Err(format!("the LP costs have {} entries for {n} LPs", c.len()))
            }
            Mapping::Costs(c) => Ok(cost_blocks(c, w)),
            Mapping::CostsSpread(c) => Ok(cost_spread(c, w)),
        }
    }
}

/// Contiguous blocks of LPs of about equal total cost, one per worker: LP `i` goes to the
/// worker whose share of the total holds the middle of LP `i`'s cost. LPs of no cost go
/// with their neighbours; with no cost at all, [`Mapping::Block`].
pub(crate) fn cost_blocks(cost: &[u64], workers: usize) -> Vec<u32> {
    let n = cost.len();
    let total: u128 = cost.iter().map(|&c| u128::from(c)).sum();
    if total == 0 {
        return (0..n).map(|i| block_owner(i, n, workers)).collect();
    }
    let w = workers as u128;
    let mut before = 0u128;
    cost.iter()
        .map(|&c| {
            // Twice the middle of this LP's stretch, over twice the total: no rounding.
            let mid2 = 2 * before + u128::from(c);
            before += u128::from(c);
            ((mid2 * w / (2 * total)).min(w - 1)) as u32
        })
        .collect()
}

/// The most consecutive LPs [`Mapping::CostsSpread`] deals as one.
pub const SPREAD_RUN: usize = 16;

/// Runs of consecutive LPs ([`SPREAD_RUN`], or fewer so that every worker gets at least 16:
/// the load is evened out to within about one run's cost, so runs stay small beside a share)
/// dealt in rounds, as round-robin deals LPs: each round of `workers` consecutive runs gives
/// one run to every worker, the costliest run of the round to the least loaded worker so far
/// (the lowest-numbered of equals), and so on. A busy region of `workers` runs or more lands
/// on every worker wherever it is, however the load was when the costs were measured; the
/// measured load is evened out to within about one run's cost.
pub(crate) fn cost_spread(cost: &[u64], workers: usize) -> Vec<u32> {
    let w = workers.max(1);
    let run = (cost.len() / (16 * w)).clamp(1, SPREAD_RUN);
    let runs: Vec<u128> = cost
        .chunks(run)
        .map(|c| c.iter().map(|&x| u128::from(x)).sum())
        .collect();
    let mut load = vec![0u128; w];
    let mut run_owner = vec![0u32; runs.len()];
    for (r0, round) in runs.chunks(w).enumerate() {
        // The round's runs, costliest first (in order among equals) ...
        let mut by_cost: Vec<usize> = (0..round.len()).collect();
        by_cost.sort_by_key(|&j| std::cmp::Reverse(round[j]));
        // ... to the workers, least loaded first (lowest-numbered among equals).
        let mut by_load: Vec<usize> = (0..w).collect();
        by_load.sort_by_key(|&k| (load[k], k));
        for (&j, &k) in by_cost.iter().zip(&by_load) {
            load[k] += round[j];
            run_owner[r0 * w + j] = k as u32;
        }
    }
    cost.chunks(run)
        .zip(&run_owner)
        .flat_map(|(c, &k)| std::iter::repeat_n(k, c.len()))
        .collect()
}

/// The busiest worker's cost over the mean worker's, for `owner` and `cost` (1: even; 0 when
/// nothing cost anything).
pub fn cost_imbalance(owner: &[u32], cost: &[u64], workers: usize) -> f64 {
    let mut per = vec![0u128; workers.max(1)];
    for (&o, &c) in owner.iter().zip(cost) {
        if let Some(x) = per.get_mut(o as usize) {
            *x += u128::from(c);
        }
    }
    let total: u128 = per.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let max = per.iter().copied().max().unwrap_or(0);
    max as f64 * per.len() as f64 / total as f64
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

/// The LPs this process holds when it runs one part of a run across processes (`--procs`) or
/// MPI ranks: one bit per LP. `None` while this process runs every LP of its run (threads, or
/// the sequential executor).
static THIS_PART: std::sync::RwLock<Option<Vec<u64>>> = std::sync::RwLock::new(None);

/// Records which LPs this process holds for the run being set up: `Some(part_bits(...))` for
/// one part of a run across processes or ranks, `None` for a run whose every LP is in this
/// process. Each run's setup calls it before any LP is initialized.
pub(crate) fn set_this_part(held: Option<Vec<u64>>) {
    *THIS_PART.write().unwrap_or_else(|e| e.into_inner()) = held;
}

/// Whether nothing holds the lock of the part's LPs (tests: a context dropped after a tick
/// must not keep it).
#[cfg(test)]
pub(crate) fn free_for_writing() -> bool {
    THIS_PART.try_write().is_ok()
}

/// One bit per LP of `lps`: whether its worker (`owner_of(lp)`) is in `mine`.
pub(crate) fn part_bits(
    lps: LpId,
    owner_of: impl Fn(usize) -> u32,
    mine: std::ops::Range<usize>,
) -> Vec<u64> {
    let mut bits = vec![0u64; (lps as usize).div_ceil(64)];
    for lp in 0..lps as usize {
        if mine.contains(&(owner_of(lp) as usize)) {
            bits[lp / 64] |= 1 << (lp % 64);
        }
    }
    bits
}

fn has_bit(bits: &[u64], lp: LpId) -> bool {
    bits.get(lp as usize / 64)
        .is_some_and(|b| b & (1 << (lp % 64)) != 0)
}

/// Whether LP `lp` is held by this process in the run it takes part in: always true in a run
/// in one process (threads, the sequential executor); in a worker process of a multi-process
/// run or an MPI rank, whether `lp`'s worker is one of this process's. An event sent to such an
/// LP never leaves this process's memory, so it may hold what only this process can read (a
/// Python model keeps such events as objects and pickles only those that cross processes).
/// Models ask it through [`Ctx::same_process`](crate::Ctx::same_process).
pub fn in_this_process(lp: LpId) -> bool {
    // Platform mode: a tick must not switch a context off the CPU while it holds the lock (a
    // context dropped after such a switch would never release it).
    let _p = crate::preempt::interrupt::Platform::enter();
    let held = THIS_PART.read().unwrap_or_else(|e| e.into_inner());
    let here = match &*held {
        None => true,
        Some(bits) => has_bit(bits, lp),
    };
    // The lock is released before platform mode ends.
    drop(held);
    here
}

#[cfg(test)]
mod tests {
    #[test]
    fn cost_blocks_are_contiguous_and_split_a_costly_region() {
        // 8 LPs, LPs 2..4 cost 10 each, the rest 1: two workers share the costly pair.
        let c = [1, 1, 10, 10, 1, 1, 1, 1];
        let o = Mapping::Costs(c.to_vec()).owners(8, 2).unwrap();
        assert_eq!(o, vec![0, 0, 0, 1, 1, 1, 1, 1]);
        assert!(o.windows(2).all(|p| p[0] <= p[1]), "contiguous");
        assert!(
            cost_imbalance(&o, &c, 2)
                < cost_imbalance(&Mapping::Block.owners(8, 2).unwrap(), &c, 2)
        );
        // No cost at all: blocks.
        assert_eq!(
            Mapping::Costs(vec![0; 10]).owners(10, 3).unwrap(),
            Mapping::Block.owners(10, 3).unwrap()
        );
        assert!(Mapping::Costs(vec![1; 3]).owners(4, 2).is_err());
        // Even costs: blocks; one worker: every LP on it.
        assert_eq!(cost_blocks(&[5; 6], 3), vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(cost_blocks(&[5, 0, 9], 1), vec![0, 0, 0]);
        assert_eq!(cost_imbalance(&[0, 0, 1], &[1, 1, 2], 2), 1.0);
    }

    #[test]
    fn spread_costs_deal_rounds_costliest_to_least_loaded() {
        // Even costs: round-robin exactly.
        assert_eq!(
            Mapping::CostsSpread(vec![3; 6]).owners(6, 3).unwrap(),
            Mapping::RoundRobin.owners(6, 3).unwrap()
        );
        // Every other LP costly: round-robin would give worker 0 all of them (8 LPs on 2
        // workers: runs of one LP).
        let c = [10, 1, 10, 1, 10, 1, 10, 1];
        let o = cost_spread(&c, 2);
        assert_eq!(o, vec![0, 1, 1, 0, 0, 1, 1, 0]);
        let rr = Mapping::RoundRobin.owners(8, 2).unwrap();
        assert!(cost_imbalance(&o, &c, 2) < 1.1);
        assert!(cost_imbalance(&rr, &c, 2) > 1.6);
        // No cost at all: round-robin.
        assert_eq!(cost_spread(&[0; 5], 2), vec![0, 1, 0, 1, 0]);
        // Many LPs: runs of SPREAD_RUN dealt in turn.
        let o = cost_spread(&[1; 1024], 2);
        assert!(o[..SPREAD_RUN].iter().all(|&w| w == 0));
        assert!(o[SPREAD_RUN..2 * SPREAD_RUN].iter().all(|&w| w == 1));
        assert_eq!(o[2 * SPREAD_RUN], 0);
    }

    #[test]
    fn spread_costs_keep_every_later_busy_region_spread() {
        // 1024 LPs on 4 workers (runs of 16, rounds of 64 LPs), measured while LPs 0..64 were
        // busy and with uneven costs elsewhere: the load is evened out ...
        let w = 4;
        let c: Vec<u64> = (0..1024u64)
            .map(|i| if i < 64 { 1000 } else { 10 + i % 7 })
            .collect();
        let o = cost_spread(&c, w);
        assert!(
            cost_imbalance(&o, &c, w) < 1.1,
            "{}",
            cost_imbalance(&o, &c, w)
        );
        for start in (0..1024 - 64).step_by(16) {
            // ... and a busy region of 4 runs anywhere later lands on every worker where it
            // is one round, and never more than two of its runs on one worker.
            let mut per = [0; 4];
            for r in (start..start + 64).step_by(16) {
                per[o[r] as usize] += 1;
            }
            let most = per.iter().copied().max().unwrap();
            assert!(
                most <= if start % 64 == 0 { 1 } else { 2 },
                "at {start}: {per:?}"
            );
        }
    }

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

    #[test]
    fn a_part_holds_the_lps_of_its_workers() {
        // 130 LPs on 4 workers, two per process: process 1 holds workers 2 and 3.
        let owner = Mapping::Block.owners(130, 4).unwrap();
        let bits = part_bits(130, |lp| owner[lp], 2..4);
        for lp in 0..130u32 {
            assert_eq!(has_bit(&bits, lp), owner[lp as usize] >= 2, "LP {lp}");
        }
        assert!(!has_bit(&bits, 130), "an LP past the end is no part's");
        let rr = Mapping::RoundRobin.owners(6, 2).unwrap();
        let even = part_bits(6, |lp| rr[lp], 0..1);
        assert_eq!(
            (0..6).map(|lp| has_bit(&even, lp)).collect::<Vec<_>>(),
            [true, false, true, false, true, false]
        );
    }
}
