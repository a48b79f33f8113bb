//! What `check` prints for a failure: one short block. For a parallel run that completed and
//! differs from the sequential one, it first diagnoses: does the sequential run repeat itself;
//! shrink the configuration (fewer LPs, an earlier end) while the mismatch stays, within a time
//! budget; rerun the pair with `--trace` and name the first LP and event where the committed
//! histories part; and name the likely class of cause.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use super::child::with_end;
use super::runner::{differences, Failed, Rerun, Runner};

/// Wall time shrinking may take.
const SHRINK_BUDGET: Duration = Duration::from_secs(30);
/// The least time limit of each run of the diagnosis (check's default slow floor); a run gets
/// the parallel run's own limit when that is longer.
const RUN_LIMIT: Duration = Duration::from_secs(20);

/// One committed event of a trace file: time, sender, the sender's send counter.
type Key = (f64, u64, u64);
/// A trace file: per LP, its committed events in commit order.
type Trace = BTreeMap<u64, Vec<Key>>;

/// Whether a model's configuration (model, flags) has a reverse handler.
pub(crate) type HasReverse<'a> = &'a dyn Fn(&str, &[String]) -> bool;

/// The lines (without the `check: ` prefix) that explain failure `f`.
pub(crate) fn explain(runner: &mut Runner, f: Failed, reverse: HasReverse<'_>) -> Vec<String> {
    let mut lines = vec![format!("FAILED: {}", f.what)];
    let Some(rerun) = &f.rerun else {
        lines.extend(reproduce(&f.cmds));
        return lines;
    };
    let started = Instant::now();
    match diagnose(runner, rerun, reverse) {
        Ok((more, nondeterministic)) => {
            if nondeterministic {
                // The verdict first: no executor is at fault.
                lines = vec![
                    format!(
                        "FAILED: {NOT_DETERMINISTIC} of {} with the same seed differ",
                        rerun.model
                    ),
                    format!("  found when: {}", f.what),
                ];
            }
            lines.extend(more);
            lines.push(format!(
                "  (diagnosed in {:.1} s)",
                started.elapsed().as_secs_f64()
            ));
        }
        Err(why) => {
            lines.push(format!("  no diagnosis: {why}"));
            lines.extend(reproduce(&f.cmds));
        }
    }
    lines
}

/// The command lines that reproduce a failure, in order.
fn reproduce(cmds: &[String]) -> Vec<String> {
    cmds.iter()
        .enumerate()
        .map(|(i, c)| format!("  {} {c}", if i == 0 { "reproduce:" } else { "then:     " }))
        .collect()
}

fn seq() -> Vec<String> {
    vec!["--sync".to_string(), "seq".to_string()]
}

fn with_trace(exec: &[String], path: &Path) -> Vec<String> {
    let mut e = exec.to_vec();
    e.extend(["--trace".to_string(), path.display().to_string()]);
    e
}

/// The verdict when two sequential runs with one seed differ (the Python package recognizes it).
const NOT_DETERMINISTIC: &str = "the model is not deterministic: two sequential runs";

/// The diagnosis of a parallel run that differs from the sequential one (see module docs), and
/// whether the cause is that the model is not deterministic (two sequential runs differ).
fn diagnose(
    runner: &mut Runner,
    r: &Rerun,
    reverse: HasReverse<'_>,
) -> Result<(Vec<String>, bool), String> {
    let model = r.model.as_str();
    let limit = r.limit.max(RUN_LIMIT);
    let first = runner.report_of(model, &r.flags, &seq(), limit)?;
    let again = runner.report_of(model, &r.flags, &seq(), limit)?;
    if !differences(&again, &first).is_empty() {
        // Not deterministic: compare two sequential runs.
        let (a, b) = (runner.scratch("seq1.trace"), runner.scratch("seq2.trace"));
        runner.report_of(model, &r.flags, &with_trace(&seq(), &a), limit)?;
        runner.report_of(model, &r.flags, &with_trace(&seq(), &b), limit)?;
        let mut lines = first_difference(&read(&a)?, &read(&b)?, ["seq", "seq again"]);
        lines.push(
            "  likely cause: the model is not deterministic: two sequential runs with one seed \
             differ (randomness outside ctx.rng() such as thread_rng or the clock, HashMap \
             iteration order, or state that outlives a run)"
                .to_string(),
        );
        let cmd = runner.command_line(model, &r.flags, &seq(), None);
        lines.push(format!("  reproduce: {cmd} --trace seq1.trace"));
        lines.push(format!("  and again: {cmd} --trace seq2.trace"));
        lines.push("  compare:   diff seq1.trace seq2.trace | head".to_string());
        return Ok((lines, true));
    }
    let end = first["config"]["end"].as_f64();
    let (r, changes) = shrink(runner, r, end);
    let (flags, exec) = (&r.flags, &r.exec);
    let (a, b) = (runner.scratch("seq.trace"), runner.scratch("par.trace"));
    runner.report_of(model, flags, &with_trace(&seq(), &a), limit)?;
    let ta = read(&a)?;
    // A mismatch that depends on timing may not show at once.
    let mut tb = Trace::new();
    for _ in 0..2 * TRIES {
        runner.report_of(model, flags, &with_trace(exec, &b), limit)?;
        tb = read(&b)?;
        if tb != ta {
            break;
        }
    }
    if tb == ta {
        return Err(
            "the traced rerun did not differ from seq (a mismatch that comes and goes with timing)"
                .into(),
        );
    }
    let mut lines = first_difference(&ta, &tb, ["seq", "parallel"]);
    let undo = reverse_suspect(runner, &r, flags, reverse);
    lines.push(format!("  likely cause: {}", cause(undo, &ta, &tb)));
    if !changes.is_empty() {
        lines.push(format!("  shrunk:    {}", changes.join(", ")));
    }
    lines.push(format!(
        "  reproduce: {} --trace seq.trace",
        runner.command_line(model, flags, &seq(), None)
    ));
    lines.push(format!(
        "  and:       {} --trace par.trace",
        runner.command_line(model, flags, exec, None)
    ));
    lines.push("  compare:   diff seq.trace par.trace | head".to_string());
    Ok((lines, false))
}

/// The configuration shrunk while the mismatch stays, within `SHRINK_BUDGET`: `--lps` halved
/// (when the model has the flag), the end time halved and bisected, then executor flags a
/// reproduction does without (a checkpoint directory in check's scratch space, `--procs`,
/// `--pin`) left out. Returns the shrunk run and what changed (`--lps 16 -> 4`).
fn shrink(runner: &mut Runner, r: &Rerun, end: Option<f64>) -> (Rerun, Vec<String>) {
    let started = Instant::now();
    let left = || started.elapsed() < SHRINK_BUDGET;
    let mut r = r.clone();
    let mut changes = Vec::new();
    if let Some(i) = r.flags.iter().position(|f| f == "--lps") {
        let was = r.flags.get(i + 1).cloned().unwrap_or_default();
        while let Some(n) = r.flags.get(i + 1).and_then(|v| v.parse::<u64>().ok()) {
            if n / 2 < 2 || !left() {
                break;
            }
            let mut f = r.flags.clone();
            f[i + 1] = (n / 2).to_string();
            if !reproduces(runner, &r, &f, &r.exec) {
                break;
            }
            r.flags = f;
        }
        if r.flags[i + 1] != was {
            changes.push(format!("--lps {was} -> {}", r.flags[i + 1]));
        }
    }
    if let Some(end) = end {
        let good = shrink_end(runner, &r, end, &left);
        if good < end {
            r.flags = with_end(&r.flags, good);
            changes.push(format!("--end {end} -> {good}"));
        }
    }
    // Executor flags a reproduction may do without: (flag, words it takes).
    for (flag, words) in [
        ("--checkpoint-every", 1),
        ("--checkpoint-dir", 1),
        ("--procs", 1),
        ("--pin", 1),
    ] {
        let Some(i) = r.exec.iter().position(|a| a == flag) else {
            continue;
        };
        let mut e = r.exec.clone();
        e.drain(i..(i + 1 + words).min(e.len()));
        if flag == "--checkpoint-every" {
            if let Some(j) = e.iter().position(|a| a == "--checkpoint-dir") {
                e.drain(j..(j + 2).min(e.len()));
            }
        }
        if left() && reproduces(runner, &r, &r.flags, &e) {
            r.exec = e;
            changes.push(format!("no {flag}"));
        }
    }
    (r, changes)
}

/// The shortest end time found (halving, then three bisections) at which `r` still differs
/// from seq; `end` when none shorter does.
fn shrink_end(runner: &mut Runner, r: &Rerun, end: f64, left: &dyn Fn() -> bool) -> f64 {
    // `good`: an end that reproduces; `bad`: a shorter one that does not.
    let (mut good, mut bad) = (end, 0.0);
    while left() && good > 1e-9 {
        let next = good / 2.0;
        if reproduces(runner, r, &with_end(&r.flags, next), &r.exec) {
            good = next;
        } else {
            bad = next;
            break;
        }
    }
    for _ in 0..3 {
        if bad <= 0.0 || !left() {
            break;
        }
        let mid = (good + bad) / 2.0;
        if reproduces(runner, r, &with_end(&r.flags, mid), &r.exec) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    good
}

/// Runs of the parallel side for a shrunk configuration: it reproduces the mismatch when every
/// one differs from seq (one that depends on timing does not show every time, and a shrunk
/// configuration that shows it now and then would be a poor reproduction).
const TRIES: usize = 3;

/// Whether `model` with `flags` under the executor flags `exec` differs from seq (see `TRIES`).
fn reproduces(runner: &mut Runner, r: &Rerun, flags: &[String], exec: &[String]) -> bool {
    let (model, limit) = (r.model.as_str(), r.limit.max(RUN_LIMIT));
    let Ok(a) = runner.report_of(model, flags, &seq(), limit) else {
        return false;
    };
    (0..TRIES).all(|_| {
        runner
            .report_of(model, flags, exec, limit)
            .is_ok_and(|b| !differences(&b, &a).is_empty())
    })
}

/// Reads a trace file (`run --trace`).
fn read(path: &Path) -> Result<Trace, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the trace {}: {e}", path.display()))?;
    let mut t = Trace::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let w: Vec<&str> = line.split(' ').collect();
        let parsed = (w.len() == 6)
            .then(|| {
                Some((
                    w[0].parse().ok()?,
                    (w[2].parse().ok()?, w[3].parse().ok()?, w[4].parse().ok()?),
                ))
            })
            .flatten();
        let Some((lp, key)) = parsed else {
            return Err(format!(
                "the trace {} has a bad line: {line}",
                path.display()
            ));
        };
        t.entry(lp).or_default().push(key);
    }
    Ok(t)
}

/// The first difference between two traces: per LP, the first position where they differ;
/// of those, the earliest in simulated time (so every LP's history agrees before it).
fn first_at(a: &Trace, b: &Trace) -> Option<(u64, usize, f64)> {
    let lps: std::collections::BTreeSet<&u64> = a.keys().chain(b.keys()).collect();
    let none = Vec::new();
    lps.into_iter()
        .filter_map(|lp| {
            let (x, y) = (a.get(lp).unwrap_or(&none), b.get(lp).unwrap_or(&none));
            let i = (0..x.len().max(y.len())).find(|&i| x.get(i) != y.get(i))?;
            let t = [x.get(i), y.get(i)]
                .into_iter()
                .flatten()
                .map(|k| k.0)
                .fold(f64::INFINITY, f64::min);
            Some((*lp, i, t))
        })
        .min_by(|p, q| p.2.total_cmp(&q.2).then(p.0.cmp(&q.0)))
}

/// The lines naming the first differing LP and event, both sides (`names`).
fn first_difference(a: &Trace, b: &Trace, names: [&str; 2]) -> Vec<String> {
    let Some((lp, i, t)) = first_at(a, b) else {
        return vec!["  the traces agree (the difference is in figures, not events)".to_string()];
    };
    let none = Vec::new();
    let side = |tr: &Trace| match tr.get(&lp).unwrap_or(&none).get(i) {
        Some((time, src, seq)) => format!("t={time} from LP {src} (its send #{seq})"),
        None => format!("none (the LP committed {i} events)"),
    };
    let w = names[0].len().max(names[1].len()) + 1;
    vec![
        format!(
            "  first difference: LP {lp}, its committed event #{i} (pos {i} in the traces; every LP agrees before t={t})"
        ),
        format!("    {:<w$} {}", format!("{}:", names[0]), side(a)),
        format!("    {:<w$} {}", format!("{}:", names[1]), side(b)),
    ]
}

/// Whether the mismatch goes with reverse computation: the run is Time Warp with this
/// configuration's reverse handler in use, and the same run with `--state-saving copy` matches
/// seq every time (`TRIES`).
fn reverse_suspect(
    runner: &mut Runner,
    r: &Rerun,
    flags: &[String],
    reverse: HasReverse<'_>,
) -> bool {
    let value = |f: &str| {
        r.exec
            .iter()
            .position(|a| a == f)
            .and_then(|i| r.exec.get(i + 1))
    };
    let timewarp = value("--sync").is_some_and(|s| s == "timewarp");
    let saving = value("--state-saving").map_or("auto", String::as_str);
    let reverses = saving == "reverse" || (saving == "auto" && reverse(&r.model, flags));
    if !timewarp || !reverses {
        return false;
    }
    let mut copy: Vec<String> = Vec::new();
    let mut it = r.exec.iter();
    while let Some(x) = it.next() {
        match x.as_str() {
            "--state-saving" => {
                it.next();
            }
            "--check-reverse" => {}
            _ => copy.push(x.clone()),
        }
    }
    copy.extend(["--state-saving".to_string(), "copy".to_string()]);
    let limit = r.limit.max(RUN_LIMIT);
    let Ok(s) = runner.report_of(&r.model, flags, &seq(), limit) else {
        return false;
    };
    (0..TRIES).all(|_| {
        runner
            .report_of(&r.model, flags, &copy, limit)
            .is_ok_and(|c| differences(&c, &s).is_empty())
    })
}

/// The likely class of cause of a parallel run whose trace `b` differs from the trace `a` of a
/// sequential run that repeats itself; `undo`: the mismatch goes with reverse computation.
fn cause(undo: bool, a: &Trace, b: &Trace) -> String {
    if undo {
        return "a reverse handler that does not undo its event: the same run with \
                --state-saving copy matches seq (add --check-reverse to the parallel line to \
                name the event)"
            .to_string();
    }
    let Some((lp, i, t)) = first_at(a, b) else {
        return "unknown (the committed events agree; a statistic differs: look at finish and \
                the model's counters)"
            .to_string();
    };
    let none = Vec::new();
    let (x, y) = (a.get(&lp).unwrap_or(&none), b.get(&lp).unwrap_or(&none));
    let tie = |tr: &Vec<Key>| {
        let at = |j: usize| tr.get(j).map(|k| k.0);
        at(i).is_some() && (at(i) == at(i + 1) || (i > 0 && at(i) == at(i - 1)))
    };
    if x.get(i).zip(y.get(i)).is_some_and(|(p, q)| p.0 == q.0) || tie(x) || tie(y) {
        return format!(
            "order dependence among same-time events: the first differing events share time {t} \
             (the outcome depends on which of several events at one time runs first)"
        );
    }
    format!(
        "state outside the LP (a static, a global counter, memory shared between LPs): every \
         LP's committed history agrees before t={t}, yet LP {lp} commits another event there, \
         so a handler read more than its LP's state, its event and ctx.rng()"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(lps: &[(u64, &[Key])]) -> Trace {
        lps.iter().map(|(lp, k)| (*lp, k.to_vec())).collect()
    }

    #[test]
    fn the_first_difference_is_the_earliest_in_time_and_names_its_class() {
        let a = trace(&[
            (0, &[(1.0, 0, 0), (2.0, 1, 0), (5.0, 1, 1)]),
            (1, &[(1.0, 1, 0), (3.0, 0, 1)]),
        ]);
        // LP 0 differs at #2 (t=4), LP 1 at #1 (t=3.5 on the parallel side, 3 on seq's).
        let b = trace(&[
            (0, &[(1.0, 0, 0), (2.0, 1, 0), (4.0, 1, 1)]),
            (1, &[(1.0, 1, 0), (3.5, 0, 1)]),
        ]);
        assert_eq!(first_at(&a, &b), Some((1, 1, 3.0)));
        let lines = first_difference(&a, &b, ["seq", "parallel"]);
        assert!(
            lines[0].contains("LP 1, its committed event #1"),
            "{lines:?}"
        );
        assert!(
            lines[1].ends_with("t=3 from LP 0 (its send #1)"),
            "{lines:?}"
        );
        assert!(
            lines[2].ends_with("t=3.5 from LP 0 (its send #1)"),
            "{lines:?}"
        );
        assert!(cause(false, &a, &b).starts_with("state outside the LP"));
        assert!(cause(true, &a, &b).starts_with("a reverse handler"));
        // The same time on both sides, other senders: order among same-time events.
        let c = trace(&[
            (0, &[(1.0, 0, 0), (2.0, 1, 0), (5.0, 1, 1)]),
            (1, &[(1.0, 1, 0), (3.0, 2, 7)]),
        ]);
        assert!(cause(false, &a, &c).starts_with("order dependence among same-time events"));
        // A missing event: the other side's time, and "none".
        let d = trace(&[
            (0, &[(1.0, 0, 0), (2.0, 1, 0), (5.0, 1, 1)]),
            (1, &[(1.0, 1, 0)]),
        ]);
        assert_eq!(first_at(&a, &d), Some((1, 1, 3.0)));
        assert!(first_difference(&a, &d, ["seq", "parallel"])[2]
            .contains("none (the LP committed 1 events)"));
        assert_eq!(first_at(&a, &a), None);
    }

    #[test]
    fn a_trace_file_reads_back() {
        let dir = std::env::temp_dir().join(format!("chronon-diagnose-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.trace");
        std::fs::write(&p, "# chronon trace: lp pos time src seq digest\n0 0 1.5 3 7 00ff\n2 0 0.25 4294967295 0 0a\n").unwrap();
        let t = read(&p).unwrap();
        assert_eq!(t[&0], vec![(1.5, 3, 7)]);
        assert_eq!(t[&2], vec![(0.25, 4294967295, 0)]);
        std::fs::write(&p, "0 0 x 3 7 00ff\n").unwrap();
        assert!(read(&p).unwrap_err().contains("bad line"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
