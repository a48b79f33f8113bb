//! `run --trace FILE [--trace-lps A,B]`: the committed-event trace (`chronon::trace`), checked
//! before the run and written after it, one line per committed event sorted by LP and commit
//! order, so that two runs' traces diff directly.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chronon::trace::TraceEvent;
use chronon::LpId;

use crate::args::CommonArgs;
use crate::Failure;

/// The file's first line: what each following line holds.
pub(crate) const HEADER: &str = "# chronon trace: lp pos time src seq digest";

/// Checks the trace flags before anything starts: not over MPI ranks (each rank records only
/// its own LPs), every LP of `--trace-lps` in range (`lps`: the model's count, when it knows).
pub(super) fn check(common: &CommonArgs, lps: Option<LpId>) -> Result<(), Failure> {
    if common.trace.is_none() {
        if !common.trace_lps.is_empty() {
            return Err(Failure::bad_input(
                "--trace-lps chooses the LPs of a trace: give --trace FILE too",
            ));
        }
        return Ok(());
    }
    if common.ranks.is_some() || chronon::mpi::launched().is_some() {
        return Err(Failure::bad_input(
            "--trace does not run over MPI ranks yet; trace the same configuration with --threads or --procs",
        ));
    }
    if let (Some(n), Some(bad)) = (lps, common.trace_lps.iter().find(|&&l| Some(l) >= lps)) {
        return Err(Failure::bad_input(format!(
            "--trace-lps: LP {bad} is out of range; the model has {n} LPs (0 to {})",
            n.saturating_sub(1)
        )));
    }
    Ok(())
}

/// Starts recording when `--trace` is given.
pub(super) fn start(common: &CommonArgs) {
    if common.trace.is_some() {
        let only = (!common.trace_lps.is_empty()).then_some(common.trace_lps.as_slice());
        chronon::trace::start(only);
    }
}

/// The trace as the file holds it: the header, then `lp pos time src seq digest` per event.
pub(super) fn text(trace: &BTreeMap<LpId, Vec<TraceEvent>>) -> String {
    let mut s = String::with_capacity(64 * trace.values().map(Vec::len).sum::<usize>() + 64);
    s.push_str(HEADER);
    s.push('\n');
    for (lp, evs) in trace {
        for e in evs {
            let k = &e.key;
            let _ = writeln!(
                s,
                "{lp} {} {} {} {} {:016x}",
                e.pos, k.time, k.src, k.seq, e.digest
            );
        }
    }
    s
}
