//! The summary a run prints on stdout.

use chronon::Report;

/// Prints the summary on stdout, with `extra` lines (parallelism and advice) after the
/// executor's own. A closed stdout (`chronon run ... | head -1`) is not an error: the report
/// is still written.
pub(super) fn print_summary(name: &str, r: &Report, extra: &[String]) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // Write errors are ignored: see above.
    macro_rules! println {
        ($($t:tt)*) => {{ let _ = writeln!(out, $($t)*); }};
    }
    let procs = match (r.executor_stats.get("procs"), r.executor_stats.get("ranks")) {
        (Some(p), _) => format!(" in each of {p} processes"),
        (None, Some(n)) => format!(" on each of {n} MPI ranks"),
        (None, None) => String::new(),
    };
    println!(
        "{name}: sync {} ({} thread{}{procs}), queue {}, {} LPs, end {}",
        r.sync,
        r.threads,
        if r.threads == 1 { "" } else { "s" },
        r.queue,
        r.lps,
        r.end_time
    );
    println!("committed    {}", r.committed);
    if r.rolled_back > 0 {
        println!(
            "processed    {} ({} rolled back)",
            r.processed, r.rolled_back
        );
    }
    if let Some(eff) = r.executor_stats.get("efficiency") {
        println!("efficiency   {:.3}", eff);
    }
    for line in time_warp_lines(r).iter().chain(extra) {
        println!("{line}");
    }
    if let Some(line) = costliest(r) {
        println!("{line}");
    }
    println!("wall         {:.3} s", r.wall_s);
    println!("events/s     {:.0}", r.events_per_s);
    println!("fingerprint  {}", r.fingerprint);
    if let Some(f) = &r.restored {
        println!(
            "restored     from {} (cut {}, saved by {}{})",
            f.path,
            f.cut,
            f.saved_by,
            f.reseed
                .map_or(String::new(), |s| format!("; reseeded {s}"))
        );
    }
    for c in &r.checkpoints {
        println!(
            "checkpoint   t = {}: {} ({} bytes, {:.3} s)",
            c.cut, c.path, c.bytes, c.seconds
        );
    }
    if !r.complete {
        println!("INCOMPLETE   stopped at t = {}", r.last_time);
    }
}

/// The three costliest LPs and their shares of the handlers' time (the report's `top_lps`
/// lists ten).
fn costliest(r: &Report) -> Option<String> {
    let total: u64 = r.lp_costs.iter().map(|c| c.ns).sum();
    let top = chronon::lp_cost::top(&r.lp_costs, 3);
    if total == 0 || top.is_empty() {
        return None;
    }
    let list: Vec<String> = top
        .iter()
        .map(|(lp, c)| format!("LP {lp} {:.1} %", 100.0 * c.ns as f64 / total as f64))
        .collect();
    Some(format!(
        "costliest    {} of the handlers' time ({:.3} s in all, sampled)",
        list.join(", "),
        total as f64 * 1e-9
    ))
}

/// Time Warp's rollback and preemption lines of the summary (the same figures, per worker
/// too, are in the report's `executor_stats` and `workers`).
fn time_warp_lines(r: &Report) -> Vec<String> {
    let es = &r.executor_stats;
    let get = |k: &str| es.get(k).copied().unwrap_or(0.0);
    let mut lines = Vec::new();
    if get("rollbacks") > 0.0 {
        lines.push(format!(
            "rollbacks    {} (mean {:.1} events, longest {}; {:.3} s rolling back, {:.1} us each)",
            get("rollbacks"),
            get("rollback_length_mean"),
            get("rollback_length_max"),
            get("rollback_wall_s"),
            get("rollback_wall_mean_us")
        ));
    }
    if es.contains_key("preemptions") {
        lines.push(format!(
            "preemption   {} started, {} preempted, {} resumed, {} discarded, {} ran unpreemptible",
            get("preempt_started"),
            get("preemptions"),
            get("preempt_resumed"),
            get("preempt_discarded"),
            get("preempt_fallbacks")
        ));
    }
    if es.contains_key("ticks_delivered") {
        let rule: Vec<String> = r
            .workers
            .iter()
            .enumerate()
            .map(|(w, m)| {
                let f = |k: &str| m.get(k).copied().unwrap_or(0.0);
                format!("w{w} {:.1} us / {:.2}", f("delta_e_us"), f("apms"))
            })
            .collect();
        lines.push(format!(
            "ticks        {} delivered, {} acted on, on for {:.3} s; Δe / APMS: {}",
            get("ticks_delivered"),
            get("ticks_acted_on"),
            get("ticks_on_s"),
            rule.join(", ")
        ));
    }
    lines
}
