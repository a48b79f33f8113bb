//! `chronon experiment` end to end with the real binary: a representative subset of the
//! experiments at `--quick` size (CSV columns, Markdown table, a well-formed SVG with the
//! expected series), `--list`, and every available experiment (ignored; `.ci/run` runs it with
//! the release binary). Bad arguments: experiment_args_cli.rs; `chronon report` and the time
//! series of `--output DIR/`: report_cli.rs.

mod common;
mod experiment_common;

use common::chronon;
use experiment_common::{col, quick, read, scratch, svg_texts, Row};

#[test]
fn barriers_measure_every_kind_and_fan_in() {
    let (rows, md, texts) = quick("001-barriers", &["--threads", "1,2"]);
    // 5 fan-ins of the tree and 3 other barriers, at 2 thread counts.
    assert_eq!(rows.len(), 16);
    for r in &rows {
        let ns: f64 = col(r, "ns_per_wait").parse().unwrap();
        assert!(ns > 0.0 && ns.is_finite(), "{r:?}");
    }
    assert!(md.contains("Table 1") && md.contains("Table 2"), "{md}");
    assert!(md.contains("| 2 threads |"), "{md}");
    for s in ["std", "semaphore", "spin", "tree", "2 threads"] {
        assert!(
            texts.iter().any(|t| t == s),
            "series {s} missing: {texts:?}"
        );
    }
}

#[test]
fn campus_speedup_has_every_executor_and_the_same_committed_count() {
    let (rows, md, texts) = quick("001-campus", &["--threads", "2"]);
    assert_eq!(rows.len(), 5, "seq and four parallel executors");
    let committed: Vec<&str> = rows.iter().map(|r| col(r, "committed")).collect();
    assert!(
        committed.iter().all(|c| *c == committed[0]),
        "every executor commits the same events: {committed:?}"
    );
    for sync in ["window", "lockstep", "null-message", "timewarp"] {
        assert!(md.contains(&format!("| {sync} |")), "{md}");
        assert!(texts.iter().any(|t| t == sync), "{sync} missing: {texts:?}");
    }
}

#[test]
fn phold_phases_compares_time_sharing_with_traditional_time_warp() {
    let (rows, md, _) = quick("003-phold-phases", &["--threads", "2"]);
    // seq, Time Warp x2 and time-sharing Time Warp x2, each run to the end of phases A, B, C.
    assert_eq!(rows.len(), 9);
    for r in &rows[1..3] {
        let eff: f64 = col(r, "efficiency").parse().unwrap();
        assert!(eff > 0.0 && eff <= 1.0, "{eff}");
    }
    assert!(md.contains("| A |") && md.contains("| C |"), "{md}");
    assert!(md.contains("time-sharing ×2"), "{md}");
    // The phases' busy work makes no engine call: ticks (on by the alpha rule for long events)
    // act by interrupting it, and the report counts those preemptions.
    let sharing: Vec<&Row> = rows
        .iter()
        .filter(|r| col(r, "sync") == "timewarp-preempt")
        .collect();
    assert_eq!(sharing.len(), 3, "{rows:?}");
    let mut acted = 0.0;
    for r in &sharing {
        let i: f64 = col(r, "preempt_interrupts").parse().unwrap();
        let n: f64 = col(r, "preemptions").parse().unwrap();
        assert!((0.0..=n).contains(&i), "{r:?}");
        acted += col(r, "ticks_acted_on").parse::<f64>().unwrap();
    }
    assert!(acted > 0.0, "ticks interrupted the busy work: {rows:?}");
    assert!(md.contains("by a tick's interrupt"), "{md}");
    // Every part of the seed's layout is measured: no "Not measured yet" note.
    assert!(!md.contains("Not measured yet"), "{md}");
}

#[test]
fn refcount_measures_every_scheme_and_every_relay_run_commits_the_same_history() {
    let (rows, md, texts) = quick("001-refcount", &["--threads", "1,2"]);
    // Clone + drop: 7 schemes on 1 thread, 6 on 2 (no raw); relay: 12 cells on 1 thread, 11 on
    // 2; campus: 13 cells on each.
    assert_eq!(rows.len(), 36 + 26);
    let pairs: Vec<&Row> = rows
        .iter()
        .filter(|r| col(r, "measure") == "pair")
        .collect();
    assert_eq!(pairs.len(), 13);
    for r in &pairs {
        let ns: f64 = col(r, "ns_per_pair").parse().unwrap();
        assert!(ns > 0.0 && ns.is_finite(), "{r:?}");
    }
    let fps: Vec<&str> = rows
        .iter()
        .filter(|r| col(r, "measure") == "model")
        .map(|r| col(r, "fingerprint48"))
        .collect();
    assert_eq!(fps.len(), 23);
    assert!(
        !fps[0].is_empty() && fps.iter().all(|f| *f == fps[0]),
        "one history whatever the scheme: {fps:?}"
    );
    // The campus ring with packet bodies, under every scheme and without bodies: one history.
    let campus: Vec<&str> = rows
        .iter()
        .filter(|r| col(r, "measure") == "campus")
        .map(|r| col(r, "fingerprint48"))
        .collect();
    assert_eq!(campus.len(), 26);
    assert!(
        !campus[0].is_empty() && campus.iter().all(|f| *f == campus[0]),
        "one campus history whatever the scheme: {campus:?}"
    );
    for t in 3..=8 {
        assert!(md.contains(&format!("Table {t}:")), "Table {t}: {md}");
    }
    for t in 5..=8 {
        assert!(
            md.contains(&format!("Campus Table {t}:")),
            "Campus Table {t}: {md}"
        );
    }
    assert!(
        md.contains("Every campus run (26) committed the same history"),
        "{md}"
    );
    assert!(md.contains("committed the same history"), "{md}");
    assert!(md.contains("| 2 threads | unsafe |"), "{md}");
    for s in ["locked", "xadd", "per-thread", "B-I 1k", "B-T ×2", "100k"] {
        assert!(texts.iter().any(|t| t == s), "{s} missing: {texts:?}");
    }
}

/// The scaling experiment (its small `work` configuration): every executor at 1 and 2
/// threads and a 2x1 split commit one history; the table has speedups, both efficiencies,
/// placement and the machine; the figure a line per executor and one per split.
#[test]
fn scaling_measures_every_executor_and_a_split_and_records_the_machine() {
    let (rows, md, texts) = quick(
        "ours-scaling",
        &["--configs", "work", "--threads", "1,2", "--splits", "2x1"],
    );
    // seq, 4 executors x 2 thread counts, 2 split executors.
    assert_eq!(rows.len(), 11, "{rows:?}");
    let committed: Vec<&str> = rows.iter().map(|r| col(r, "committed")).collect();
    assert!(
        committed.iter().all(|c| *c == committed[0]),
        "{committed:?}"
    );
    for r in &rows {
        let workers: f64 = col(r, "workers").parse().unwrap();
        let (p, t): (f64, f64) = (
            col(r, "procs").parse().unwrap(),
            col(r, "threads").parse().unwrap(),
        );
        assert_eq!(workers, p * t, "{r:?}");
        assert!(col(r, "cores").parse::<f64>().unwrap() >= 1.0, "{r:?}");
        assert!(["0", "1"].contains(&col(r, "pinned")), "{r:?}");
    }
    assert!(
        md.contains("Machine: ") && md.contains("NUMA node(s)"),
        "{md}"
    );
    assert!(md.contains("| parallel efficiency |"), "{md}");
    assert!(
        md.contains("| window 2p×1t |") && md.contains("| timewarp 2p×1t |"),
        "{md}"
    );
    for s in [
        "window",
        "lockstep",
        "null-message",
        "timewarp",
        "window 2p×1t",
    ] {
        assert!(texts.iter().any(|t| t == s), "{s} missing: {texts:?}");
    }
}

#[test]
fn list_names_every_experiment_and_its_status() {
    let (code, out, _) = chronon(&["experiment", "--list"]);
    assert_eq!(code, 0);
    let line = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing: {out}"))
            .to_string()
    };
    // Every experiment with no MPI part is available.
    for name in [
        "001-barriers",
        "001-refcount",
        "001-balance",
        "001-campus",
        "002-graph1",
        "002-graph2",
        "003-phold-phases",
        "003-datastore",
        "003-pcs",
        "ours-phold",
        "ours-scaling",
    ] {
        assert!(line(name).contains(" available"), "{}", line(name));
    }
    assert!(
        line("003-fig5").contains(" available"),
        "{}",
        line("003-fig5")
    );
    // The MPI parts say what they need; a build without the feature says they are not here.
    for name in ["000-gsu", "000-fig7", "000-fig8", "000-fig9"] {
        let l = line(name);
        assert!(
            l.contains("MPI: feature mpi") && l.contains(" available"),
            "{l}"
        );
        assert_eq!(
            l.contains("MPI part not here: needs --features mpi"),
            !cfg!(feature = "mpi"),
            "{l}"
        );
    }
    // A part not measured yet is named beside "available".
    assert!(
        line("000-fig7").contains(" available; Boost version"),
        "{}",
        line("000-fig7")
    );
    // Every entry's status renders: one line each after the header, each available.
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 16, "{out}");
    for l in rows {
        assert!(l.contains(" available"), "{l}");
    }
}

/// Without the `mpi` feature Fig. 8 has its zero-copy and copy lines and says, in its table
/// and figure, that the MPI line needs the feature.
#[cfg(not(feature = "mpi"))]
#[test]
fn fig8_without_the_feature_says_the_mpi_line_needs_it() {
    let (rows, md, texts) = quick("000-fig8", &[]);
    // Two process counts, two transports, no MPI point.
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert!(rows.iter().all(|r| col(r, "transport") != "mpi"));
    // Both lines of a process count commit the same history.
    for p in ["2", "4"] {
        let fp: Vec<&str> = rows
            .iter()
            .filter(|r| col(r, "procs") == p)
            .map(|r| col(r, "fingerprint48"))
            .collect();
        assert!(
            fp.len() == 2 && !fp[0].is_empty() && fp[0] == fp[1],
            "{fp:?}"
        );
    }
    assert!(md.contains("| MPI s | MPI / zero copy |"), "{md}");
    assert!(
        md.contains("| needs --features mpi | needs --features mpi |"),
        "{md}"
    );
    assert!(
        md.contains("The MPI line is not measured here: it needs --features mpi."),
        "{md}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("MPI line: needs --features mpi")),
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t.starts_with("MPI (")), "{texts:?}");
}

/// Fig. 8 and Table II: the heavy configuration's two allocation patterns run time-sharing
/// with ticks; each run's preemptions split into those on a tick and the rest; the table and
/// the figure have both.
#[test]
fn datastore_splits_preemptions_by_cause_and_compares_allocation_patterns() {
    let (rows, md, texts) = quick("003-datastore", &["--reps", "1"]);
    // Every time-sharing run is `timewarp-preempt` (ticking as the seed's); Fig. 8's rows are
    // those with an allocation pattern, Fig. 7's have none.
    let sharing = |r: &&Row| col(r, "sync") == "timewarp-preempt";
    let ticked: Vec<&Row> = rows
        .iter()
        .filter(sharing)
        .filter(|r| !col(r, "alloc").is_empty())
        .collect();
    let mut allocs: Vec<&str> = ticked.iter().map(|r| col(r, "alloc")).collect();
    allocs.sort_unstable();
    assert_eq!(allocs, ["round-robin", "upfront"], "{rows:?}");
    for r in &ticked {
        assert_eq!(col(r, "config"), "heavy");
        let n: f64 = col(r, "preemptions").parse().unwrap();
        let on_tick: f64 = col(r, "preempt_interrupts").parse().unwrap();
        assert!(n >= 0.0 && (0.0..=n).contains(&on_tick), "{r:?}");
        let delivered: f64 = col(r, "ticks_delivered").parse().unwrap();
        assert!(delivered.is_finite(), "ticks ran: {r:?}");
        // The same history as the sequential run of the heavy configuration.
        let seq = rows
            .iter()
            .find(|s| col(s, "config") == "heavy" && col(s, "sync") == "seq")
            .unwrap();
        assert_eq!(col(r, "committed"), col(seq, "committed"), "{r:?}");
    }
    // Fig. 7's time-sharing runs tick too (the seed's 50 µs, α −0.5): they report tick counts,
    // and the traditional runs report none.
    let fig7: Vec<&Row> = rows
        .iter()
        .filter(sharing)
        .filter(|r| col(r, "alloc").is_empty())
        .collect();
    let mut configs: Vec<&str> = fig7.iter().map(|r| col(r, "config")).collect();
    configs.dedup();
    assert_eq!(configs, ["light", "heavy"], "{rows:?}");
    assert!(
        !rows
            .iter()
            .any(|r| col(r, "sync").starts_with("timewarp-preempt-")),
        "one label for time-sharing: {rows:?}"
    );
    for r in fig7 {
        let n: f64 = col(r, "preemptions").parse().unwrap();
        let on_tick: f64 = col(r, "preempt_interrupts").parse().unwrap();
        assert!((0.0..=n).contains(&on_tick), "{r:?}");
        let delivered: f64 = col(r, "ticks_delivered").parse().unwrap();
        assert!(delivered.is_finite(), "ticks configured: {r:?}");
    }
    for r in rows.iter().filter(|r| col(r, "sync") == "timewarp") {
        assert_eq!(col(r, "ticks_delivered"), "NaN", "{r:?}");
    }
    assert!(md.contains("Fig. 8: preemptions per second"), "{md}");
    assert!(md.contains("| original / varied |"), "{md}");
    assert!(md.contains("| varied (upfront) | 2 |"), "{md}");
    for t in [
        "Fig. 8: preemptions / s (heavy)",
        "by a tick's interrupt",
        "at platform returns",
    ] {
        assert!(texts.iter().any(|x| x == t), "{t}: {texts:?}");
    }
}

#[test]
fn pcs_draws_fig9_to_fig11() {
    let (rows, md, texts) = quick("003-pcs", &["--reps", "1"]);
    // Per handoffs on/off and utilization: seq, Time Warp ×2, time-sharing ×2.
    assert_eq!(rows.len(), 2 * 3 * 3, "{rows:?}");
    for h in ["on", "off"] {
        assert_eq!(rows.iter().filter(|r| col(r, "handoffs") == h).count(), 9);
    }
    for r in rows.iter().filter(|r| col(r, "sync") == "timewarp-preempt") {
        let p: f64 = col(r, "preemptions").parse().unwrap();
        assert!(p.is_finite() && p >= 0.0, "{r:?}");
    }
    for r in rows.iter().filter(|r| col(r, "sync") == "timewarp") {
        assert_eq!(col(r, "preemptions"), "NaN", "{r:?}");
    }
    for want in [
        "Fig. 9:",
        "Fig. 10:",
        "Fig. 11:",
        "Table III:",
        "| overhead |",
    ] {
        assert!(md.contains(want), "{want}: {md}");
    }
    for want in [
        "no time-sharing ×2",
        "time-sharing ×2",
        "preemptions / s ×2",
        "Time Warp ×2",
    ] {
        assert!(texts.iter().any(|t| t == want), "{want}: {texts:?}");
    }
}

#[test]
fn tick_overhead_follows_fig5_layout() {
    let (rows, md, texts) = quick("003-fig5", &["--threads", "1"]);
    // Seven periods, one thread count.
    assert_eq!(rows.len(), 7);
    let periods: Vec<&str> = rows.iter().map(|r| col(r, "period_us")).collect();
    assert_eq!(periods, ["500", "250", "200", "100", "50", "20", "10"]);
    for r in &rows {
        let o: f64 = col(r, "overhead").parse().unwrap();
        assert!(o.is_finite() && o < 1.0, "{r:?}");
        let (ticks, want): (f64, f64) = (
            col(r, "ticks").parse().unwrap(),
            col(r, "expected_ticks").parse().unwrap(),
        );
        assert!(ticks > 0.0 && ticks <= want * 1.05 + 2.0, "{r:?}");
    }
    assert!(md.contains("| 50 | 20.0 |"), "{md}");
    assert!(md.contains("1 thr. T_base / T_ticks"), "{md}");
    for s in ["1 thread", "1 ms / ΔET", "T_base / T_ticks", "overhead %"] {
        assert!(texts.iter().any(|t| t == s), "{s} missing: {texts:?}");
    }
}

#[test]
fn gsu_lbts_is_compared_with_the_message_tree_and_mpi() {
    let (rows, md, texts) = quick("000-gsu", &["--threads", "1,2"]);
    // gsu, gsu-shm, gsu-procs, message and the window executor at 1 and 2 threads (and the
    // MPI all-gather in a build with the feature: experiment_mpi_cli checks it).
    let mpi = usize::from(cfg!(feature = "mpi"));
    assert_eq!(rows.len(), 10 + 2 * mpi);
    let ns = |t: &str, m: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| col(r, "threads") == t && col(r, "method") == m)
            .unwrap_or_else(|| panic!("no {m} x{t}"));
        col(r, "ns_per_lbts").parse().unwrap()
    };
    for t in ["1", "2"] {
        for m in ["gsu", "gsu-shm", "gsu-procs", "message"] {
            assert!(ns(t, m) > 0.0 && ns(t, m).is_finite(), "{m} x{t}");
        }
    }
    // Two threads exchanging messages and waking each other cost more than reading shared
    // registers.
    assert!(ns("2", "message") > ns("2", "gsu"), "{rows:?}");
    let window = rows
        .iter()
        .find(|r| col(r, "method") == "window" && col(r, "threads") == "2")
        .unwrap();
    let round: f64 = col(window, "round_us").parse().unwrap();
    assert!(round > 0.0, "{window:?}");
    assert!(md.contains("MPI all-gather ns"), "{md}");
    if !cfg!(feature = "mpi") {
        // No fake numbers: the MPI column says what it needs.
        assert!(md.contains("| needs --features mpi |"), "{md}");
        assert!(
            md.contains("not measured here: it needs --features mpi"),
            "{md}"
        );
    }
    assert!(md.contains("| 2 |"), "{md}");
    for s in [
        "gsu",
        "gsu-shm",
        "gsu-procs",
        "message tree, µs per LBTS",
        "message / GSU",
        "window round_us (PHOLD)",
    ] {
        assert!(texts.iter().any(|t| t == s), "{s} missing: {texts:?}");
    }
}

/// Every available experiment at `--quick` size with the binary named by `CHRONON_BIN` (the
/// release build: `.ci/run` runs this), checking the three files of each.
#[test]
#[ignore = "about two minutes with the release binary; .ci/run runs it"]
fn every_available_experiment_runs_quick() {
    let bin = std::env::var("CHRONON_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_chronon").into());
    let (code, list, _) = common::chronon_at(&bin, &["experiment", "--list"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = list
        .lines()
        .skip(1)
        .filter(|l| l.contains(" available"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.len() >= 9, "{list}");
    for name in names {
        let dir = scratch(&format!("all-{name}"));
        let t0 = std::time::Instant::now();
        let (code, _, err) = common::chronon_at(
            &bin,
            &[
                "experiment",
                name,
                "--quick",
                "--out",
                dir.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{name}: {err}");
        eprintln!("{name}: {:.1} s", t0.elapsed().as_secs_f64());
        let csv = read(&dir.join(format!("{name}.csv")));
        assert!(csv.lines().count() >= 2, "{name}: {csv}");
        assert!(
            read(&dir.join(format!("{name}.md"))).contains("| "),
            "{name}"
        );
        assert!(
            svg_texts(&dir.join(format!("{name}.svg"))).len() > 5,
            "{name}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
