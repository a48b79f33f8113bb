//! What a part of a run across parts (a worker process of `--procs`, an MPI rank) hands the
//! part runner (`crate::run`) once its workers stopped, for every protocol family, and its
//! encoding (`transport::wire`): errors, its LPs' fingerprint part and committed count,
//! counters, the operations `Model::finish` made per LP (replayed in LP order by the
//! coordinator), the family's part figures and per-worker figures.

#![cfg_attr(chronon_loom, allow(dead_code, unused_imports))] // runs across parts use the codec
use std::collections::BTreeMap;

use crate::error::{guard, ConfigError, ModelError, Setting, SimError};
use crate::event::EventKey;
use crate::lp_cost::LpCost;
use crate::model::{LpId, Model, ModelStats, StatKind, StatOp, Time};
#[cfg(all(target_os = "linux", not(chronon_loom)))]
use crate::transport::wire::{Reader, Writer};

/// Per LP: the operations its `finish` made, or `None` where it read figures.
pub(crate) type FinishOps = Vec<(LpId, Option<Vec<StatOp>>)>;

/// What a part reports.
#[derive(Debug)]
pub(crate) struct PartOut {
    pub(crate) result: Result<(), SimError>,
    pub(crate) fingerprint: u64,
    pub(crate) committed: u64,
    pub(crate) processed: u64,
    pub(crate) pending: u64,
    pub(crate) in_transit: u64,
    pub(crate) tmc_left: i64,
    pub(crate) stopped: bool,
    pub(crate) last_time: f64,
    pub(crate) init_s: f64,
    pub(crate) wall_s: f64,
    /// The worker process's peak resident set (VmHWM), bytes (0 where unknown).
    pub(crate) peak_rss: u64,
    pub(crate) counters: Vec<i64>,
    /// Per LP of this process: the operations its `finish` made, or `None` where `finish`
    /// read figures (the parent then asks this process to run it on the figures so far).
    pub(crate) finish: FinishOps,
    /// The family's figures of this part as a whole (not per worker): the family's report
    /// merges them (`Family::report`).
    pub(crate) figures: BTreeMap<String, f64>,
    /// The family's time series of this part (name, (wall seconds, simulated time)).
    pub(crate) series: Vec<(String, Vec<(f64, f64)>)>,
    pub(crate) workers: Vec<BTreeMap<String, f64>>,
    /// The committed-event trace of this process's LPs (`crate::trace`; empty when off).
    pub(crate) trace: Vec<(LpId, Vec<EventKey>)>,
    /// What each of this part's LPs cost (`crate::lp_cost`).
    pub(crate) lp_costs: Vec<(LpId, LpCost)>,
    /// Why this part's checkpoint part was not written, if it was not: the coordinating
    /// process, which would see only a truncated file, says so for the checkpoint.
    pub(crate) part_error: Option<String>,
}

impl PartOut {
    /// A part that succeeded and has nothing yet: its fields are filled by whoever makes it.
    pub(crate) fn ok() -> Self {
        PartOut {
            result: Ok(()),
            fingerprint: 0,
            committed: 0,
            processed: 0,
            pending: 0,
            in_transit: 0,
            tmc_left: 0,
            stopped: false,
            last_time: 0.0,
            init_s: 0.0,
            wall_s: 0.0,
            peak_rss: 0,
            counters: Vec::new(),
            finish: Vec::new(),
            figures: BTreeMap::new(),
            series: Vec::new(),
            workers: Vec::new(),
            trace: Vec::new(),
            lp_costs: Vec::new(),
            part_error: None,
        }
    }

    /// A part that failed with `e` (and so stopped).
    pub(crate) fn failed(e: SimError) -> Self {
        PartOut {
            result: Err(e),
            stopped: true,
            ..PartOut::ok()
        }
    }
}

#[cfg(all(target_os = "linux", not(chronon_loom)))]
/// Writes the figures and the end time (NaN: none).
pub(crate) fn put_stats(w: &mut Writer, stats: &ModelStats) {
    w.f64(stats.end_time().unwrap_or(f64::NAN));
    let all: Vec<(&str, f64)> = stats.iter().collect();
    w.u64(all.len() as u64);
    for (k, v) in all {
        w.str(k);
        w.f64(v);
    }
}

#[cfg(all(target_os = "linux", not(chronon_loom)))]
pub(crate) fn get_stats(r: &mut Reader<'_>) -> Option<ModelStats> {
    let mut stats = ModelStats::default();
    let end = r.f64()?;
    stats.set_end_time((!end.is_nan()).then_some(end));
    for _ in 0..r.u64()? {
        let k = r.str()?;
        stats.set(&k, r.f64()?);
    }
    Some(stats)
}

#[cfg(all(target_os = "linux", not(chronon_loom)))]
pub(crate) fn encode(o: &PartOut) -> Vec<u8> {
    let mut w = Writer::default();
    match &o.result {
        Ok(()) => w.u64(0),
        Err(e) => {
            let (kind, lp, time, msg) = match e {
                // The setting travels in the LP slot, the value and problem in the message.
                SimError::Config(c) => (
                    1,
                    c.setting.index(),
                    0.0,
                    format!("{}\u{1f}{}", c.value, c.problem),
                ),
                SimError::Model(m) => (2, m.lp, m.time, m.message.clone()),
                SimError::Panic { lp, time, message } => (3, *lp, *time, message.clone()),
                SimError::Process(m) => (4, 0, 0.0, m.clone()),
                other => (4, 0, 0.0, other.to_string()),
            };
            w.u64(kind);
            w.u64(u64::from(lp));
            w.f64(time);
            w.str(&msg);
        }
    }
    w.u64(o.fingerprint);
    w.u64(o.committed);
    w.u64(o.processed);
    w.u64(o.pending);
    w.u64(o.in_transit);
    w.u64(o.tmc_left as u64);
    w.u64(u64::from(o.stopped));
    w.f64(o.last_time);
    w.f64(o.init_s);
    w.f64(o.wall_s);
    w.u64(o.peak_rss);
    w.u64(o.counters.len() as u64);
    o.counters.iter().for_each(|c| w.u64(*c as u64));
    w.u64(o.finish.len() as u64);
    for (lp, ops) in &o.finish {
        w.u64(u64::from(*lp));
        match ops {
            None => w.u64(u64::MAX),
            Some(ops) => {
                w.u64(ops.len() as u64);
                for (kind, name, value) in ops {
                    w.u64(*kind as u64);
                    w.str(name);
                    w.f64(*value);
                }
            }
        }
    }
    put_map(&mut w, &o.figures);
    w.u64(o.series.len() as u64);
    for (name, points) in &o.series {
        w.str(name);
        w.u64(points.len() as u64);
        for (a, b) in points {
            w.f64(*a);
            w.f64(*b);
        }
    }
    w.u64(o.workers.len() as u64);
    for m in &o.workers {
        put_map(&mut w, m);
    }
    w.u64(o.trace.len() as u64);
    for (lp, keys) in &o.trace {
        w.u64(u64::from(*lp));
        w.u64(keys.len() as u64);
        for k in keys {
            w.f64(k.time);
            w.u64(u64::from(k.src));
            w.u64(k.seq);
        }
    }
    w.u64(o.lp_costs.len() as u64);
    for (lp, c) in &o.lp_costs {
        w.u64(u64::from(*lp));
        w.u64(c.events);
        w.u64(c.ns);
    }
    match &o.part_error {
        Some(e) => {
            w.u64(1);
            w.str(e);
        }
        None => w.u64(0),
    }
    w.0
}

#[cfg(all(target_os = "linux", not(chronon_loom)))]
pub(crate) fn decode(b: &[u8]) -> Option<PartOut> {
    let mut r = Reader::new(b);
    let result = match r.u64()? {
        0 => Ok(()),
        kind => {
            let lp = u32::try_from(r.u64()?).ok()?;
            let time = r.f64()?;
            let message = r.str()?;
            Err(match kind {
                1 => {
                    let (value, problem) = message.split_once('\u{1f}')?;
                    SimError::Config(ConfigError {
                        setting: Setting::from_index(lp)?,
                        value: value.into(),
                        problem: problem.into(),
                    })
                }
                2 => SimError::Model(ModelError { lp, time, message }),
                3 => SimError::Panic { lp, time, message },
                _ => SimError::Process(message),
            })
        }
    };
    let mut o = PartOut::ok();
    o.result = result;
    o.fingerprint = r.u64()?;
    o.committed = r.u64()?;
    o.processed = r.u64()?;
    o.pending = r.u64()?;
    o.in_transit = r.u64()?;
    o.tmc_left = r.u64()? as i64;
    o.stopped = r.u64()? != 0;
    o.last_time = r.f64()?;
    o.init_s = r.f64()?;
    o.wall_s = r.f64()?;
    o.peak_rss = r.u64()?;
    let n = r.u64()?;
    o.counters = (0..n)
        .map(|_| r.u64().map(|v| v as i64))
        .collect::<Option<_>>()?;
    let n = r.u64()?;
    for _ in 0..n {
        let lp = u32::try_from(r.u64()?).ok()?;
        let ops = match r.u64()? {
            u64::MAX => None,
            k => Some(
                (0..k)
                    .map(|_| Some((StatKind::from_code(r.u64()?)?, r.str()?, r.f64()?)))
                    .collect::<Option<Vec<_>>>()?,
            ),
        };
        o.finish.push((lp, ops));
    }
    o.figures = get_map(&mut r)?;
    for _ in 0..r.u64()? {
        let name = r.str()?;
        let k = r.u64()?;
        let points = (0..k)
            .map(|_| Some((r.f64()?, r.f64()?)))
            .collect::<Option<Vec<_>>>()?;
        o.series.push((name, points));
    }
    let n = r.u64()?;
    for _ in 0..n {
        o.workers.push(get_map(&mut r)?);
    }
    let n = r.u64()?;
    for _ in 0..n {
        let lp = u32::try_from(r.u64()?).ok()?;
        let k = r.u64()?;
        let keys = (0..k)
            .map(|_| {
                Some(EventKey {
                    time: r.f64()?,
                    src: u32::try_from(r.u64()?).ok()?,
                    seq: r.u64()?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        o.trace.push((lp, keys));
    }
    for _ in 0..r.u64()? {
        let lp = u32::try_from(r.u64()?).ok()?;
        let (events, ns) = (r.u64()?, r.u64()?);
        o.lp_costs.push((lp, LpCost { events, ns }));
    }
    if r.u64()? == 1 {
        o.part_error = Some(r.str()?);
    }
    Some(o)
}

#[cfg(all(target_os = "linux", not(chronon_loom)))]
fn put_map(w: &mut Writer, m: &BTreeMap<String, f64>) {
    w.u64(m.len() as u64);
    for (k, v) in m {
        w.str(k);
        w.f64(*v);
    }
}

#[cfg(all(target_os = "linux", not(chronon_loom)))]
fn get_map(r: &mut Reader<'_>) -> Option<BTreeMap<String, f64>> {
    let k = r.u64()?;
    (0..k).map(|_| Some((r.str()?, r.f64()?))).collect()
}

/// The error a Time Warp part reports when another part stopped the run (conservative parts
/// report a stop as an incomplete run instead).
pub(crate) const ABORTED: &str = "another worker process stopped the run";

/// Runs `Model::finish` for each LP of this part, recording its operations (`None` where
/// it read figures: the coordinator has it run on the real figures later). `end`: the end time
/// `finish` sees ([`RunConfig::known_end`](super::RunConfig::known_end)); `None` where only
/// the coordinator knows it (a run stopped early or without an end time: the latest event of
/// every part), and the coordinator has every LP's `finish` run on its figures.
pub(crate) fn finish_ops<'s, M: Model>(
    model: &M,
    end: Option<Time>,
    lps: impl Iterator<Item = (LpId, &'s M::State)>,
) -> Result<FinishOps, SimError>
where
    M::State: 's,
{
    let mut finish = Vec::new();
    let Some(end) = end else {
        return Ok(lps.map(|(lp, _)| (lp, None)).collect());
    };
    for (lp, state) in lps {
        let mut st = ModelStats::recording();
        st.set_end_time(Some(end));
        let ran = guard("Model::finish", Some(lp), || {
            model.finish(lp, state, &mut st)
        });
        // A `finish` that read figures saw only its own: its operations (or its panic) mean
        // nothing, and the coordinator will have it run on the real figures.
        match (st.take_log(), ran) {
            (Ok(ops), Ok(())) => finish.push((lp, Some(ops))),
            (Err(()), _) => finish.push((lp, None)),
            (Ok(_), Err(e)) => return Err(e),
        }
    }
    Ok(finish)
}

/// This process's peak resident set (VmHWM in /proc/self/status), bytes; 0 where unknown.
pub(crate) fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}
