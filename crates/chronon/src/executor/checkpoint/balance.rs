//! LPs that move between workers at run time (`--balance T`): the chain ends a link at every
//! multiple of T, maps the LPs anew from what each cost in that link (for a model with a
//! topology, [`Mapping::Costs`]: contiguous blocks of equal cost, neighbours kept together;
//! without one, [`Mapping::CostsSpread`]: dealt in turn, a worker at its share passed over)
//! and runs the next link from the cut under the new mapping. Every executor and transport reaches the cut
//! already (a checkpoint's), and restores any LP on any worker, so the history is the one every
//! mapping commits: the fingerprint is `seq`'s.
//!
//! A link's mapping reaches the parts through the link's `CkptRun` on threads, and through a
//! file of the cut directory (`map-<k>`, one little-endian `u32` owner per LP) that worker
//! processes (`CHRONON_LINK_MAPPING`) and MPI ranks read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::saver::Coord;
use crate::error::{Setting, SimError};
use crate::lp_cost::LpCost;
use crate::model::{LpId, Time};
use crate::partition::{cost_blocks, cost_imbalance, cost_spread, Mapping};
use crate::stats::Report;

/// The environment variable naming a worker process's link mapping file.
pub(crate) const LINK_MAPPING_ENV: &str = "CHRONON_LINK_MAPPING";

/// A mapping is redone only where the busiest worker was this much busier than the mean in
/// the last link (as the workers measured their busy time; where they did not, as the LP
/// costs say): below it, moving LPs gains less than the noise of the measure, and the moves
/// themselves cost cache locality.
const REMAP_ABOVE: f64 = 1.10;

/// What the chain needs to balance: the period, the workers over every part and the
/// executor's own mapping (the first link's).
#[derive(Clone, Debug)]
pub(crate) struct BalancePlan {
    pub period: BalancePeriod,
    pub workers: usize,
    pub start: Mapping,
    /// The model declares a topology: LPs move in contiguous blocks ([`Mapping::Costs`]),
    /// else they are dealt in turn ([`Mapping::CostsSpread`]).
    pub contiguous: bool,
}

/// How far apart the cuts are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BalancePeriod {
    /// At every multiple of this much simulated time.
    Every(Time),
    /// Adapted to what moving LPs gains: the first cut at an [`AUTO_FIRST`]th of the end
    /// time; after each link the period grows eightfold where the load was even (within
    /// 10 %), doubles where evening it would have gained less than twice what a cut costs
    /// (both measured), and halves where it would have gained more than eight times as much,
    /// between an [`AUTO_MIN`]th of the end time and the end time.
    Auto,
}

impl From<Time> for BalancePeriod {
    fn from(t: Time) -> Self {
        BalancePeriod::Every(t)
    }
}

/// `BalancePeriod::Auto`'s first period, as a fraction of the end time.
pub const AUTO_FIRST: f64 = 128.0;
/// `BalancePeriod::Auto`'s shortest period, as a fraction of the end time.
pub const AUTO_MIN: f64 = 1024.0;

/// What a link measured: its run time, and its busiest worker's busy time over the mean
/// (`None` where the workers report none).
#[derive(Clone, Copy, Debug)]
pub(super) struct LinkFigures {
    pub wall_s: f64,
    pub imbalance: Option<f64>,
}

impl LinkFigures {
    /// From a link's report.
    pub(super) fn of(r: &Report) -> Self {
        LinkFigures {
            wall_s: r.wall_s,
            imbalance: r.imbalance(),
        }
    }
}

/// The balancer of one chain.
pub(super) struct Balancer {
    plan: BalancePlan,
    /// The current period (`BalancePeriod::Auto` changes it), and the end time.
    period: Time,
    end: Time,
    /// What the last cut cost, in seconds (saving, reading back and restarting).
    cut_s: Option<f64>,
    owners: Vec<u32>,
    /// Whether the links run under `owners` (false until the first remap: the executor's).
    remapped: bool,
    cuts: u64,
    remaps: u64,
    moved: u64,
}

impl Balancer {
    pub(super) fn new(plan: BalancePlan, lps: LpId, end: Time) -> Result<Self, SimError> {
        let owners = plan
            .start
            .owners(lps, plan.workers)
            .map_err(|m| SimError::config(Setting::Mapping, m))?;
        let period = match plan.period {
            BalancePeriod::Every(t) => t,
            BalancePeriod::Auto => end / AUTO_FIRST,
        };
        Ok(Balancer {
            plan,
            period,
            end,
            cut_s: None,
            owners,
            remapped: false,
            cuts: 0,
            remaps: 0,
            moved: 0,
        })
    }

    /// The first balancing cut after `from`: the next multiple of the period.
    pub(super) fn next_cut(&self, from: Time) -> Time {
        let p = self.period;
        let k = (from / p).floor() + 1.0;
        let t = k * p;
        if t > from {
            t
        } else {
            (k + 1.0) * p
        }
    }

    /// After a link that ran under the current owners and cost `costs` (per LP): maps the LPs
    /// anew where that evens the load out. Returns the owners the next link runs under, `None`
    /// while they are the executor's own.
    ///
    /// `wall_s` is the link's run time and `cut_s` what the cut before it cost (`None` for the
    /// first link): `BalancePeriod::Auto` adapts the period from them.
    pub(super) fn after_link(
        &mut self,
        costs: &[LpCost],
        link: LinkFigures,
        cut_s: Option<f64>,
    ) -> Option<Arc<Vec<u32>>> {
        self.cuts += 1;
        if let Some(c) = cut_s {
            self.cut_s = Some(c);
        }
        if costs.len() == self.owners.len() {
            let ns: Vec<u64> = costs.iter().map(|c| c.ns).collect();
            let w = self.plan.workers;
            let sampled = cost_imbalance(&self.owners, &ns, w);
            let now = link.imbalance.unwrap_or(sampled);
            self.adapt(now, link.wall_s);
            if now > REMAP_ABOVE {
                let next = if self.plan.contiguous {
                    cost_blocks(&ns, w)
                } else {
                    cost_spread(&ns, w)
                };
                if cost_imbalance(&next, &ns, w) < sampled {
                    self.moved += self
                        .owners
                        .iter()
                        .zip(&next)
                        .filter(|(a, b)| a != b)
                        .count() as u64;
                    self.remaps += 1;
                    self.owners = next;
                    self.remapped = true;
                }
            }
        }
        self.remapped.then(|| Arc::new(self.owners.clone()))
    }

    /// After link `k` of a chain, which reported `r` and whose cut before it cost `cut_s`: the
    /// owners the next link runs under ([`after_link`](Self::after_link), decided on rank 0
    /// and learnt by every rank, [`share_owners`]); every rank takes rank 0's period. `dir`:
    /// the chain's cut directory, where worker processes and ranks read the mapping.
    pub(super) fn after_chain_link(
        &mut self,
        r: &Report,
        cut_s: f64,
        (coord, dir, k): (&Coord<'_>, Option<&Path>, usize),
    ) -> Result<LinkOwners, SimError> {
        let remap = self.after_link(&r.lp_costs, LinkFigures::of(r), Some(cut_s));
        self.period = f64::from_bits(coord.tell(self.period.to_bits()));
        share_owners(coord, remap, dir, k, r.lps)
    }

    /// `BalancePeriod::Auto`: a link whose load was uneven by `imbalance` (busiest worker over the
    /// mean) and that ran `wall_s` would have run in about `wall_s / imbalance` evened out:
    /// the period doubles where that gain is below twice a cut's cost, halves where it is
    /// above eight times.
    fn adapt(&mut self, imbalance: f64, wall_s: f64) {
        let (BalancePeriod::Auto, Some(cut)) = (self.plan.period, self.cut_s) else {
            return;
        };
        let gain = if imbalance > 1.0 {
            wall_s * (1.0 - 1.0 / imbalance)
        } else {
            0.0
        };
        if imbalance <= REMAP_ABOVE {
            self.period = (self.period * 8.0).min(self.end);
        } else if gain < 2.0 * cut {
            self.period = (self.period * 2.0).min(self.end);
        } else if gain > 8.0 * cut {
            self.period = (self.period / 2.0).max(self.end / AUTO_MIN);
        }
    }

    /// The report's `balance_cuts`, `balance_remaps`, `lps_moved`, `balance_period` (the
    /// last period) and `balance_cut_s` (`cuts_s`, the seconds the cuts took beyond the
    /// links' runs, which the run's wall time counts: they are part of running it balanced).
    pub(super) fn add_to(&self, report: &mut Report, cuts_s: f64) {
        report.wall_s += cuts_s;
        let st = &mut report.executor_stats;
        st.insert("balance_cut_s".into(), cuts_s);
        st.insert("balance_cuts".into(), self.cuts as f64);
        st.insert("balance_remaps".into(), self.remaps as f64);
        st.insert("lps_moved".into(), self.moved as f64);
        st.insert("balance_period".into(), self.period);
    }
}

/// The LPs' workers in a link where the chain moved them (`None`: the executor's mapping),
/// and the file they are written in for worker processes and ranks.
pub(super) type LinkOwners = (Option<Arc<Vec<u32>>>, Option<PathBuf>);

/// After link `k`: the owners link `k + 1` runs under, decided by the coordinating process
/// from `remap` (its balancer's answer; the other ranks' is ignored) and learnt by every rank,
/// and the file of the cut directory `dir` they are written in for worker processes and
/// ranks.
pub(super) fn share_owners(
    coord: &Coord<'_>,
    remap: Option<Arc<Vec<u32>>>,
    dir: Option<&Path>,
    k: usize,
    lps: LpId,
) -> Result<LinkOwners, SimError> {
    const NONE: u64 = 0;
    const WRITTEN: u64 = 1;
    const FAILED: u64 = 2;
    let path = dir.map(|d| map_path(d, k + 1));
    let mut error = None;
    let word = match (&remap, &path) {
        (Some(o), Some(p)) if coord.root => match write_map(p, o) {
            Ok(()) => WRITTEN,
            Err(e) => {
                error = Some(e);
                FAILED
            }
        },
        (Some(_), None) => WRITTEN,
        _ => NONE,
    };
    match coord.tell(word) {
        NONE => Ok((None, None)),
        WRITTEN if coord.root => Ok((remap, path)),
        WRITTEN => {
            let p = path.expect("ranks keep cuts in a directory");
            Ok((Some(read_map(&p, lps)?), Some(p)))
        }
        _ => Err(error.unwrap_or_else(|| {
            SimError::config(Setting::Run, "the LP mapping was not written on rank 0")
        })),
    }
}

/// Where link `k`'s mapping is written in the cut directory `dir`.
pub(super) fn map_path(dir: &Path, k: usize) -> PathBuf {
    dir.join(format!("map-{k}"))
}

/// Writes `owners` to `path` (one little-endian `u32` per LP).
pub(super) fn write_map(path: &Path, owners: &[u32]) -> Result<(), SimError> {
    let bytes: Vec<u8> = owners.iter().flat_map(|o| o.to_le_bytes()).collect();
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(path, bytes))
        .map_err(|e| {
            SimError::config(
                Setting::Run,
                format!(
                    "the LP mapping could not be written to {}: {e}",
                    path.display()
                ),
            )
        })
}

/// Reads a mapping [`write_map`] wrote, for `lps` LPs.
pub(crate) fn read_map(path: &Path, lps: LpId) -> Result<Arc<Vec<u32>>, SimError> {
    let bad = |e: String| {
        SimError::config(
            Setting::Run,
            format!("the LP mapping in {} does not read: {e}", path.display()),
        )
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    if bytes.len() != lps as usize * 4 {
        return Err(bad(format!("{} bytes for {lps} LPs", bytes.len())));
    }
    Ok(Arc::new(
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link of 1 s whose workers reported no busy time (the LP costs decide).
    fn link() -> LinkFigures {
        LinkFigures {
            wall_s: 1.0,
            imbalance: None,
        }
    }

    fn plan(period: f64) -> BalancePlan {
        BalancePlan {
            period: BalancePeriod::Every(period),
            workers: 2,
            start: Mapping::Block,
            contiguous: true,
        }
    }

    #[test]
    fn cuts_fall_on_multiples_of_the_period_after_any_start() {
        let b = Balancer::new(plan(2.5), 4, 100.0).unwrap();
        assert_eq!(b.next_cut(0.0), 2.5);
        assert_eq!(b.next_cut(2.5), 5.0);
        assert_eq!(b.next_cut(3.0f64.next_up()), 5.0);
    }

    #[test]
    fn an_uneven_link_moves_lps_and_an_even_one_keeps_them() {
        let mut b = Balancer::new(plan(1.0), 4, 10.0).unwrap();
        let c = |ns| LpCost { events: 1, ns };
        let even = [c(5), c(5), c(5), c(5)];
        assert_eq!(
            b.after_link(&even, link(), None),
            None,
            "even: the executor's"
        );
        let m = b
            .after_link(&[c(10), c(10), c(1), c(1)], link(), Some(0.1))
            .expect("remapped");
        assert_eq!(*m, vec![0, 1, 1, 1]);
        let mut r = Report::new("window", 2, "heap", 4, 1.0);
        b.add_to(&mut r, 0.0);
        assert_eq!(r.executor_stats["lps_moved"], 1.0);
        assert_eq!(r.executor_stats["balance_remaps"], 1.0);
        assert_eq!(r.executor_stats["balance_cuts"], 2.0);
        assert_eq!(
            r.executor_stats["balance_period"], 1.0,
            "a fixed period stays"
        );
        // Once remapped, every later link runs under the balancer's owners (here even: kept).
        let after = b.after_link(&[c(3), c(1), c(1), c(1)], link(), Some(0.1));
        assert_eq!(after.as_deref(), Some(&vec![0, 1, 1, 1]));
    }

    #[test]
    fn the_auto_period_follows_what_a_move_gains_against_what_a_cut_costs() {
        let auto = BalancePlan {
            period: BalancePeriod::Auto,
            workers: 2,
            start: Mapping::Block,
            contiguous: true,
        };
        let mut b = Balancer::new(auto, 4, 256.0).unwrap();
        assert_eq!(b.period, 2.0, "an AUTO_FIRST-th of the end");
        let c = |ns| LpCost { events: 1, ns };
        // No cut measured yet: the period stays.
        b.after_link(&[c(1); 4], link(), None);
        assert_eq!(b.period, 2.0);
        // Even load: nothing to gain, the period grows eightfold, up to the end time.
        for want in [16.0, 128.0, 256.0, 256.0] {
            b.after_link(&[c(1); 4], link(), Some(0.01));
            assert_eq!(b.period, want);
        }
        b.period = 16.0;
        // Very uneven load (imbalance 2: half the link's 1 s to gain, cuts of 10 ms): halves.
        b.after_link(&[c(9), c(9), c(0), c(0)], link(), Some(0.01));
        assert_eq!(b.period, 8.0);
        // Uneven again (the LPs it moved cost nothing now, the others all), but cuts that
        // cost as much as the gain: doubles again.
        b.after_link(&[c(0), c(0), c(9), c(9)], link(), Some(0.4));
        assert_eq!(b.period, 16.0);
    }

    #[test]
    fn a_mapping_file_reads_back_and_a_wrong_one_is_refused() {
        let d = std::env::temp_dir().join(format!("chronon-map-test-{}", std::process::id()));
        write_map(&d, &[0, 1, 1, 0]).unwrap();
        assert_eq!(*read_map(&d, 4).unwrap(), vec![0, 1, 1, 0]);
        let e = read_map(&d, 5).unwrap_err().to_string();
        assert!(e.contains("16 bytes for 5 LPs"), "{e}");
        std::fs::remove_file(&d).unwrap();
    }
}
