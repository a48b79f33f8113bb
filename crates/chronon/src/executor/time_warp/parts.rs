//! Time Warp as the part runner (`crate::run`) drives it: the family's checks and settings, a
//! part's output once its workers stopped (the parts themselves, over each transport: `over/`), and the one report from the parts' outputs, which a run on threads makes too
//! (`report.rs`). Each LP commits in its owner part only, so commit hooks run once; `init`'s
//! counters are counted by part 0 only.

#![cfg_attr(chronon_loom, allow(dead_code))] // runs across parts are not built under loom
use std::collections::BTreeMap;

use super::options::{StateSaving, TimeWarpConfig};
use super::report::{
    insert_cpu, insert_preempt, pending_at_end, totals_from_workers, worker_figures,
};
use crate::error::{Setting, SimError};
use crate::executor::family::{across_words, Family};
use crate::executor::part_out::{finish_ops, peak_rss_bytes, PartOut};
use crate::executor::RunConfig;
use crate::fingerprint::Fingerprint;
use crate::model::{LpId, Model, ModelStats};
use crate::partition::Mapping;
use crate::queue::PendingSet;
use crate::stats::Report;
use crate::tw_msg::TwEvent;

/// Time Warp with its settings, as a family.
pub(crate) struct TimeWarp<'o> {
    pub(crate) threads: usize,
    pub(crate) opts: &'o TimeWarpConfig,
}

impl<M: Model> Family<M> for TimeWarp<'_> {
    fn name(&self) -> &'static str {
        "timewarp"
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn mapping(&self) -> &Mapping {
        &self.opts.mapping
    }

    fn refuse_across(
        &self,
        _model: &M,
        _cfg: &RunConfig,
        across: Setting,
        _parts: usize,
    ) -> Result<(), SimError> {
        let (count, what) = across_words(across);
        if self.opts.preempt && across == Setting::Ranks {
            return Err(SimError::config(
                Setting::Preempt,
                "$preempt does not run over MPI ranks; leave out $preempt (or run without mpirun)",
            ));
        }
        if self.opts.check_reverse {
            let problem = match across {
                Setting::Ranks => format!("$check_reverse does not run over {what}; leave out $check_reverse (or run without mpirun)"),
                _ => format!("$check_reverse does not run across {what}; leave out {count} or $check_reverse"),
            };
            return Err(SimError::config(Setting::CheckReverse, problem));
        }
        Ok(())
    }

    fn settings(&self) -> String {
        format!("options={:?}", self.opts)
    }

    fn report(
        &self,
        model: &M,
        cfg: &RunConfig,
        outs: Vec<PartOut>,
        stats: ModelStats,
    ) -> Result<Report, SimError> {
        Ok(report(model, cfg, self.threads, self.opts, outs, stats))
    }
}

/// How a part figure of Time Warp merges over the parts: the largest, the smallest, or (every
/// other) the sum.
fn merge(name: &str, a: f64, b: f64) -> f64 {
    match name {
        "gvt_rounds" | "max_memory" | "window_adaptive" | "window_cap" => a.max(b),
        "memory_cap_min" | "window_min" | "window_final" => a.min(b),
        _ => a + b,
    }
}

/// The one report of a Time Warp run from its parts' outputs (one part for a run on threads):
/// fingerprint parts added, counts summed, per-worker figures concatenated, the parts' own
/// figures merged, the GVT values every part recorded and part 0's window series, `stats` (computed in LP order by the caller) as
/// `model_stats`.
pub(super) fn report<M: Model>(
    model: &M,
    cfg: &RunConfig,
    threads: usize,
    opts: &TimeWarpConfig,
    outs: Vec<PartOut>,
    stats: ModelStats,
) -> Report {
    let mut report = Report::new("timewarp", threads, cfg.queue.name(), cfg.lps, cfg.end);
    let mut fingerprint = 0u64;
    let mut wall = 0f64;
    let mut figures: BTreeMap<String, f64> = BTreeMap::new();
    report.lp_costs = crate::lp_cost::gather(
        cfg.lps,
        outs.iter().flat_map(|o| o.lp_costs.iter().copied()),
    );
    for (k, o) in outs.into_iter().enumerate() {
        fingerprint = fingerprint.wrapping_add(o.fingerprint);
        report.committed += o.committed;
        report.processed += o.processed;
        report.pending_at_end += o.pending;
        report.complete &= !o.stopped;
        report.last_time = report.last_time.max(o.last_time);
        report.init_s = report.init_s.max(o.init_s);
        wall = wall.max(o.wall_s);
        report.workers.extend(o.workers);
        for (name, v) in o.figures {
            let merged = match figures.get(&name) {
                Some(&old) => merge(&name, old, v),
                None => v,
            };
            figures.insert(name, merged);
        }
        for (name, points) in o.series {
            match name.as_str() {
                // Each part records the GVT values it published (across processes, the last
                // reporter of a round publishes it: any process's worker): part 0's points,
                // then the values only other parts recorded.
                "gvt" => {
                    let seen: std::collections::HashSet<u64> =
                        report.gvt_series.iter().map(|p| p.1.to_bits()).collect();
                    let new = points
                        .into_iter()
                        .filter(|p| !seen.contains(&p.1.to_bits()));
                    report.gvt_series.extend(new);
                }
                // Each part has its own window: part 0's.
                "window" if k == 0 => report.window_series = points,
                _ => {}
            }
        }
    }
    // GVT only rises, so GVT order is time order (a run on threads, one part, keeps its own).
    report
        .gvt_series
        .sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.total_cmp(&b.0)));
    let sum = |k: &str| -> f64 { report.workers.iter().filter_map(|w| w.get(k)).sum() };
    report.rolled_back = sum("rolled_back") as u64;
    let mut es = figures;
    es.insert(
        "efficiency".into(),
        report.committed as f64 / report.processed.max(1) as f64,
    );
    for k in [
        "primary_rollbacks",
        "secondary_rollbacks",
        "anti_messages",
        "coasted_events",
        "safe_commits",
        "early_commits",
        "checkpoints",
    ] {
        es.insert(k.to_string(), sum(k));
    }
    totals_from_workers(&mut es, &report.workers, report.rolled_back);
    insert_cpu(
        &mut es,
        sum("cpu_user_s"),
        sum("cpu_sys_s"),
        report.committed,
    );
    let reverse = match opts.state_saving {
        StateSaving::Copy => false,
        StateSaving::Reverse => true,
        StateSaving::Auto => model.reverse_handler().is_some(),
    };
    es.insert("reverse_computation".into(), f64::from(u8::from(reverse)));
    report.executor_stats.extend(es);
    report.fingerprint = Fingerprint(fingerprint);
    cfg.progress.set_now(report.last_time);
    report.model_stats = stats;
    report.set_wall(wall);
    report
}

/// The figures of a part as a whole, which its workers share (GVT rounds, the peak of tracked
/// memory, the memory bound's and the optimism window's), and its series (GVT, window).
#[allow(clippy::type_complexity)]
pub(super) fn part_figures<M: Model>(
    sh: &super::shared::Shared<'_, M>,
    opts: &TimeWarpConfig,
) -> (BTreeMap<String, f64>, Vec<(String, Vec<(f64, f64)>)>) {
    let mut es = BTreeMap::new();
    es.insert("gvt_rounds".into(), sh.gvt.rounds() as f64);
    es.insert(
        "peak_tracked_bytes".into(),
        sh.peak.load(std::sync::atomic::Ordering::SeqCst) as f64,
    );
    if let Some(m) = opts.max_memory {
        es.insert("max_memory".into(), m as f64);
        let ms = sh.mem.summary();
        es.insert("memory_fixed_bytes".into(), ms.fixed as f64);
        es.insert("memory_correction_bytes".into(), ms.correction as f64);
        es.insert("memory_peak_estimate".into(), ms.peak_estimate as f64);
        es.insert("memory_cap_min".into(), ms.min_cap as f64);
        es.insert("memory_capped_rounds".into(), ms.capped_rounds as f64);
        es.insert("memory_rss_samples".into(), ms.rss_samples as f64);
        es.insert("memory_trims".into(), ms.trims as f64);
    }
    let window = sh.optimism.summary();
    window.insert_into(&mut es);
    let gvt = sh.series.lock().map(|s| s.clone()).unwrap_or_default();
    let series = vec![
        ("gvt".to_string(), gvt),
        ("window".to_string(), window.series),
    ];
    (es, series)
}

/// A part's (process's, rank's) output once its workers stopped: its LPs' fingerprint part and
/// committed count, committed counters (with `counters`, what `init` moved and the part
/// counts), pending events (`pending` plus each worker's leftovers), per-worker figures, the
/// operations `Model::finish` made per LP; `states` gets its LPs' final states.
#[allow(clippy::too_many_arguments)]
pub(super) fn part_out<M: Model, Q: PendingSet<TwEvent<M::Event>>>(
    model: &M,
    cfg: &RunConfig,
    sh: &super::shared::Shared<'_, M>,
    results: Vec<super::report::WorkerResult<M, Q>>,
    counters: Vec<i64>,
    mut pending: u64,
    base: usize,
    (init_s, wall_s): (f64, f64),
    states: &mut Vec<Option<M::State>>,
    (opts, saving): (&TimeWarpConfig, super::options::Saving),
) -> Result<PartOut, SimError> {
    let mut counters = counters;
    let mut complete = true;
    let mut workers = Vec::with_capacity(results.len());
    let mut last_time = 0f64;
    let (mut processed, mut committed) = (0u64, 0u64);
    let mut fingerprint = 0u64;
    let mut mine = Vec::new();
    let mut costs = Vec::new();
    *states = (0..cfg.lps).map(|_| None).collect();
    // A run that ends at a checkpoint's cut: this part's LPs' bookkeeping and pending events
    // (every such event has its own key in its entry: see `report::pending_at_end`).
    let to_part = cfg.saving() && results.iter().all(|r| r.4);
    let mut metas = Vec::new();
    let mut left = Vec::new();
    for (k, ((lps, clocks), cold, c, st, done, (queue, cancelled))) in
        results.into_iter().enumerate()
    {
        drop(cold);
        complete &= done;
        pending += pending_at_end(queue, cancelled, &*sh.wires, base + k, |e| {
            if to_part {
                debug_assert!(!e.stacked(), "an event pending at a cut is not stacked");
                left.push(crate::event::Event::new(e.head(), e.dst, e.payload));
            }
        });
        for (a, b) in counters.iter_mut().zip(&c) {
            *a += b;
        }
        processed += st.processed;
        last_time = last_time.max(st.last_committed);
        let mut figures = worker_figures(&st, saving);
        if let Some(p) = sh.preempt {
            insert_preempt(&mut figures, &st.preempt, p.ticks.is_some());
        }
        workers.push(figures);
        let first = mine.len();
        mine.extend((0..lps.len()).map(|li| sh.lp_id(base + k, li)));
        let ids = &mine[first..];
        fingerprint = fingerprint.wrapping_add(
            Fingerprint::from_digests(ids.iter().zip(&lps).map(|(&id, l)| (id, &l.digest))).0,
        );
        committed += lps.iter().map(|l| l.digest.count()).sum::<u64>();
        costs.extend(ids.iter().zip(&clocks).map(|(&id, c)| (id, c.cost())));
        for (&id, l) in ids.iter().zip(lps) {
            if to_part {
                metas.push((id, l.meta, l.digest));
            }
            states[id as usize] = Some(l.state);
        }
    }
    // Part `base` (this process's first worker): its LPs, their events and its counters.
    let mut written = Ok(());
    if let Some(mut part) = cfg.part_writer::<M>(base, &counters).filter(|_| to_part) {
        for (id, meta, digest) in &metas {
            let state = states[*id as usize].as_ref().expect("this process's LP");
            part.lp_parts(*id, state, meta, digest);
        }
        for e in &left {
            part.event(e);
        }
        written = part.finish();
        cfg.part_done(written.clone());
    }
    crate::placement::mark_workers(&sh.pinner.placement(), &mut workers);
    let (figures, series) = part_figures(sh, opts);
    let finish = finish_ops(
        model,
        cfg.known_end(complete),
        mine.iter().map(|&lp| {
            (
                lp as LpId,
                states[lp as usize].as_ref().expect("this process's LP"),
            )
        }),
    )?;
    Ok(PartOut {
        result: Ok(()),
        fingerprint,
        committed,
        processed,
        pending,
        in_transit: 0,
        tmc_left: 0,
        stopped: !complete,
        last_time,
        init_s,
        wall_s,
        peak_rss: peak_rss_bytes(),
        counters,
        finish,
        figures,
        series,
        workers,
        trace: Vec::new(),
        lp_costs: costs,
        part_error: written.err(),
    })
}
