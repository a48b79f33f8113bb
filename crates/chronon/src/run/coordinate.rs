//! The coordinator of a run across parts, for every family over every transport: it reads
//! every part's output, computes `model_stats` in LP order (replaying the operations each part's
//! `Model::finish` recorded, or asking the LP's part to run `finish` on the figures so far where
//! it reads them), and picks the run's error; and a part's side of those requests.

use crate::error::{guard, SimError};
use crate::executor::part_out::{decode, get_stats, put_stats, PartOut, ABORTED};
use crate::executor::RunConfig;
use crate::model::{LpId, Model, ModelStats, StatOp};
use crate::transport::wire::{Reader, Writer};

/// Takes every part's error out of `outs` and returns the one that wins: the error of the
/// earliest (time, LP), as with threads (errors without a time, such as configuration errors,
/// rank last; "stopped by another process", which only Time Warp children report, only when
/// nothing better is known).
pub(crate) fn first_error(outs: &mut [PartOut]) -> Option<SimError> {
    let mut error: Option<SimError> = None;
    for o in outs {
        if let Err(e) = std::mem::replace(&mut o.result, Ok(())) {
            error = Some(match error {
                None => e,
                Some(old) => earlier(old, e),
            });
        }
    }
    error
}

/// Notes, for the checkpoint the run ends at, every part that could not write its part of it
/// (the coordinating process would see only a truncated file): its checkpoint is then not
/// saved, with that reason, and the run stops cleanly with its report.
pub(crate) fn note_part_errors(cfg: &RunConfig, outs: &mut [PartOut]) {
    for o in outs {
        if let Some(e) = o.part_error.take() {
            cfg.part_done(Err(e));
        }
    }
}

/// How the coordinator reaches the parts of a run: each part's report, then its replies to
/// `Model::finish` requests.
pub(crate) trait Parts {
    /// The next message from part `p`; `None`: it is gone.
    fn read(&mut self, p: usize) -> Option<Vec<u8>>;
    /// A finish request to part `p`; `false`: it is gone.
    fn write(&mut self, p: usize, bytes: &[u8]) -> bool;
    /// No more requests: every part may stop serving.
    fn close(&mut self);
    /// The number of parts.
    fn count(&self) -> usize;
}

/// The parent's side once the children run: their reports, then `model_stats` as
/// `finish_report` computes them: the counters, then `Model::finish` for every LP in LP order,
/// replayed from the operations the LP's process recorded or, for an LP whose `finish` reads
/// figures, run by that process on the figures so far (one request per such LP). `None`: a
/// child's report could not be read (it died; the launcher says which).
#[allow(clippy::type_complexity)]
pub(crate) fn coordinate<M: Model>(
    model: &M,
    cfg: &RunConfig,
    owner: &[u32],
    threads: usize,
    parts: &mut impl Parts,
) -> Option<(Vec<PartOut>, Result<ModelStats, SimError>)> {
    let mut outs = Vec::with_capacity(parts.count());
    for p in 0..parts.count() {
        let mut out = decode(&parts.read(p)?)?;
        crate::trace::absorb(std::mem::take(&mut out.trace));
        outs.push(out);
    }
    if outs.iter().any(|o| o.result.is_err()) {
        parts.close();
        return Some((outs, Ok(ModelStats::default())));
    }
    let names = model.counter_names();
    let mut counters = vec![0i64; names.len()];
    let mut per_lp: Vec<Option<Vec<StatOp>>> = vec![Some(Vec::new()); cfg.lps as usize];
    for o in &mut outs {
        for (c, x) in counters.iter_mut().zip(&o.counters) {
            *c += x;
        }
        for (lp, ops) in std::mem::take(&mut o.finish) {
            per_lp[lp as usize] = ops;
        }
    }
    let mut stats = ModelStats::default();
    stats.set_end_time(Some(cfg.stats_end(
        outs.iter().all(|o| !o.stopped),
        outs.iter().map(|o| o.last_time).fold(0.0, f64::max),
    )));
    for (name, value) in names.iter().zip(&counters) {
        stats.set(name, *value as f64);
    }
    for (lp, ops) in per_lp.iter().enumerate() {
        match ops {
            Some(ops) => stats.replay(ops),
            None => {
                let p = owner[lp] as usize / threads;
                let mut w = Writer::default();
                w.u64(lp as u64);
                put_stats(&mut w, &stats);
                if !parts.write(p, &w.0) {
                    return None;
                }
                let reply = parts.read(p)?;
                let mut r = Reader::new(&reply);
                match r.u64()? {
                    0 => stats = get_stats(&mut r)?,
                    _ => {
                        let e = SimError::Process(r.str()?);
                        parts.close();
                        return Some((outs, Err(e)));
                    }
                }
            }
        }
    }
    parts.close();
    Some((outs, Ok(stats)))
}

fn rank(e: &SimError) -> (f64, u32, u8) {
    match e {
        SimError::Model(m) => (m.time, m.lp, 0),
        SimError::Panic { lp, time, .. } => (*time, *lp, 0),
        SimError::Process(m) if m == ABORTED => (f64::INFINITY, u32::MAX, 2),
        _ => (f64::INFINITY, u32::MAX, 1),
    }
}

fn earlier(a: SimError, b: SimError) -> SimError {
    let (ra, rb) = (rank(&a), rank(&b));
    let key = |r: (f64, u32, u8)| (r.2, r.0, r.1);
    if key(rb).partial_cmp(&key(ra)) == Some(std::cmp::Ordering::Less) {
        b
    } else {
        a
    }
}

/// Answers one `Model::finish` request (an LP of this part and the figures so far): runs
/// `finish` for that LP on them and returns the figures after it, or its error. `None`: the
/// request is malformed or names an LP this part does not hold.
pub(crate) fn serve_finish<M: Model>(
    model: &M,
    states: &[Option<M::State>],
    req: &[u8],
) -> Option<Vec<u8>> {
    let mut r = Reader::new(req);
    let (lp, mut stats) = (r.u64()?, get_stats(&mut r)?);
    let state = states.get(usize::try_from(lp).ok()?)?.as_ref()?;
    let lp = lp as LpId;
    let mut w = Writer::default();
    match guard("Model::finish", Some(lp), || {
        model.finish(lp, state, &mut stats)
    }) {
        Ok(()) => {
            w.u64(0);
            put_stats(&mut w, &stats);
        }
        Err(e) => {
            w.u64(1);
            w.str(&e.to_string());
        }
    }
    Some(w.0)
}
