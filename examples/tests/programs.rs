//! The example programs driven through their binaries, as a user runs them: `run` under every
//! executor and across processes with one fingerprint, `--config` files, `--output DIR/`,
//! `check` passing on a correct model and failing, with a reproduction line, on a model with a
//! planted bug, `sweep`, the tandem queue against queueing theory and its time averages closed
//! at the end time (and at a checkpoint's cut), and the reversible example's exact statistics
//! under reverse computation. The tutorial's and the README's code is the `ring` example's,
//! checked here word for word.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::example;

fn run(name: &str, args: &[&str]) -> Output {
    Command::new(example(name))
        .args(args)
        .output()
        .expect("the example starts")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chronon-examples-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// Runs `name` with `args` and `--output`, and returns its report.
fn report(name: &str, args: &[&str], dir: &Path, tag: &str) -> Value {
    let out = dir.join(format!("{tag}.json"));
    let mut all: Vec<&str> = args.to_vec();
    let o = out.to_str().expect("a UTF-8 path");
    all.extend(["--output", o]);
    let r = run(name, &all);
    assert!(r.status.success(), "{name} {args:?} failed: {}", stderr(&r));
    serde_json::from_str(&std::fs::read_to_string(&out).expect("the report")).expect("JSON")
}

#[test]
fn the_ring_commits_one_history_under_every_executor_and_across_processes() {
    let dir = scratch("ring-executors");
    let model = [
        "run", "--lps", "24", "--tokens", "3", "--end", "60", "--seed", "7",
    ];
    let seq = report("ring", &model, &dir, "seq");
    assert_eq!(seq["complete"], true);
    assert!(seq["committed"].as_u64().unwrap() > 1000, "{seq}");
    let runs: &[&[&str]] = &[
        &["--sync", "window", "--threads", "2"],
        &["--sync", "null-message", "--threads", "3"],
        &["--sync", "lockstep", "--threads", "2"],
        &["--sync", "timewarp", "--threads", "2"],
        &["--sync", "window", "--threads", "1", "--procs", "2"],
        &["--sync", "timewarp", "--threads", "1", "--procs", "2"],
    ];
    for (i, exec) in runs.iter().enumerate() {
        let mut args = model.to_vec();
        args.extend_from_slice(exec);
        let r = report("ring", &args, &dir, &format!("par{i}"));
        assert_eq!(r["fingerprint"], seq["fingerprint"], "{exec:?}");
        assert_eq!(r["committed"], seq["committed"], "{exec:?}");
        assert_eq!(r["model_stats"], seq["model_stats"], "{exec:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_ring_reads_a_config_file_under_its_flags() {
    let dir = scratch("ring-config");
    let cfg = dir.join("ring.toml");
    std::fs::write(
        &cfg,
        "lps = 10\ntokens = 2\nsync = \"window\"\nthreads = 2\nend = 30\n",
    )
    .unwrap();
    let c = cfg.to_str().unwrap();
    let r = report(
        "ring",
        &["run", "--config", c, "--tokens", "5"],
        &dir,
        "cfg",
    );
    let config = &r["config"];
    assert_eq!(config["lps"], 10, "{config}");
    assert_eq!(config["tokens"], 5, "the flag wins over the file: {config}");
    assert_eq!(config["mean"], 1.0, "the default: {config}");
    assert_eq!(config["sync"], "window", "{config}");
    assert_eq!(config["end"], 30.0, "{config}");
    // The report's config reruns the same simulation.
    let again = dir.join("again.toml");
    let mut toml = String::new();
    for (k, v) in config.as_object().unwrap() {
        toml.push_str(&format!("{k} = {v}\n"));
    }
    std::fs::write(&again, toml).unwrap();
    let r2 = report(
        "ring",
        &["run", "--config", again.to_str().unwrap()],
        &dir,
        "again",
    );
    assert_eq!(r2["fingerprint"], r["fingerprint"]);

    // A key that is neither a model flag nor a run option; a value of the wrong type.
    std::fs::write(&cfg, "lps = 10\ntokenz = 2\n").unwrap();
    let bad = run("ring", &["run", "--config", c]);
    assert_eq!(bad.status.code(), Some(2));
    let e = stderr(&bad);
    assert!(
        e.contains("unknown key 'tokenz'") && e.contains("tokens"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
    std::fs::write(&cfg, "tokens = \"many\"\n").unwrap();
    let bad = run("ring", &["run", "--config", c]);
    assert_eq!(bad.status.code(), Some(2));
    let e = stderr(&bad);
    assert!(e.contains("key 'tokens'"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_ring_writes_its_outputs_to_a_directory() {
    let dir = scratch("ring-output");
    let out = format!("{}/", dir.join("out").display());
    let r = run(
        "ring",
        &[
            "run",
            "--end",
            "40",
            "--sync",
            "timewarp",
            "--threads",
            "2",
            "--output",
            &out,
        ],
    );
    assert!(r.status.success(), "{}", stderr(&r));
    for f in ["report.json", "progress.csv", "series.csv", "gvt.csv"] {
        assert!(dir.join("out").join(f).exists(), "{f} missing");
    }
    let rep: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/report.json")).unwrap())
            .unwrap();
    assert_eq!(rep["model"], "ring");
    assert!(
        rep["model_stats"]["tokens_passed"].as_f64().unwrap() > 0.0,
        "{rep}"
    );
    // The summary names the model's figures too.
    assert!(stdout(&r).contains("fingerprint"), "{}", stdout(&r));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_parameters_and_flags_are_one_line_errors() {
    let r = run("ring", &["run", "--lps", "0"]);
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(stderr(&r).trim(), "error: --lps must be at least 1");
    let r = run("ring", &["run", "--tokenz", "3"]);
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(stderr(&r).lines().count(), 1, "{}", stderr(&r));
    // A model with no default end needs --end.
    let r = run("links", &["run"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(
        stderr(&r).contains("no default end time: give --end"),
        "{}",
        stderr(&r)
    );
    // One model: `run` takes no model name.
    let r = run("ring", &["run", "ring"]);
    assert_eq!(r.status.code(), Some(2));
}

#[test]
fn check_passes_on_a_correct_model() {
    let r = run("ring", &["check", "--runs", "3", "--seed", "11"]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(stdout(&r).contains(" 0 failed"), "{}", stdout(&r));
    let r = run(
        "reversible",
        &["check", "--runs", "2", "--seed", "3", "--sync", "timewarp"],
    );
    assert!(r.status.success(), "{}", stderr(&r));
}

#[test]
fn check_finds_the_planted_bug_and_points_at_the_first_differing_event() {
    let started = std::time::Instant::now();
    let r = run(
        "order-bug",
        &["check", "--runs", "3", "--per-config", "3", "--seed", "1"],
    );
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    let e = stderr(&r);
    // One failure, diagnosed, in a screen.
    assert_eq!(e.matches("FAILED").count(), 1, "{e}");
    assert!(e.lines().count() <= 40, "{} lines:\n{e}", e.lines().count());
    assert!(e.contains("likely cause: state outside the LP"), "{e}");
    assert!(e.contains("stopped after the first failure"), "{e}");
    assert!(secs < 60.0, "{secs} s");
    let after = |p: &str| {
        e.lines()
            .find_map(|l| l.split(p).nth(1))
            .unwrap_or_else(|| panic!("no '{p}' line: {e}"))
            .to_string()
    };
    // "first difference: LP 3, its committed event #7 (...)" and the sequential side's event.
    let first = after("first difference: LP ");
    let (lp, rest) = first
        .split_once(", its committed event #")
        .expect("an event");
    let pos = rest.split_whitespace().next().unwrap();
    let seq_side = after("check:     seq:");
    // The reproduction lines run as printed (one model: no model name after `run`), with the
    // traces in a scratch directory; the sequential trace holds the event named.
    let dir = scratch("order-bug-check");
    let traced = |line: &str, name: &str| -> String {
        let path = dir.join(name);
        let mut args: Vec<String> = line.split_whitespace().skip(1).map(String::from).collect();
        assert_eq!(args.pop().as_deref(), Some(name), "{line}");
        args.push(path.display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let again = run("order-bug", &args);
        assert!(again.status.success(), "{}", stderr(&again));
        std::fs::read_to_string(&path).expect("the trace")
    };
    let seq_line = after("reproduce: ");
    assert!(seq_line.starts_with("order-bug run --lps "), "{seq_line}");
    let seq = traced(&seq_line, "seq.trace");
    let rows: Vec<&str> = seq
        .lines()
        .filter(|l| l.starts_with(&format!("{lp} ")))
        .collect();
    match rows.iter().find(|l| l.starts_with(&format!("{lp} {pos} "))) {
        Some(row) => {
            let cols: Vec<&str> = row.split(' ').collect();
            let event = format!("t={} from LP {} (its send #{})", cols[2], cols[3], cols[4]);
            assert!(seq_side.contains(&event), "{seq_side} vs {row}");
        }
        // The parallel run committed more events at this LP than the sequential one.
        None => assert!(
            seq_side.contains(&format!("none (the LP committed {pos} events)"))
                && rows.len().to_string() == pos,
            "{seq_side}: LP {lp} has {} events",
            rows.len()
        ),
    }
    // The parallel line commits another history (timing decides: up to five tries).
    let par_line = after("and:       ");
    assert!(
        (0..5).any(|_| traced(&par_line, "par.trace") != seq),
        "{par_line} matched seq five times"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_draws_reverse_computation_per_configuration() {
    // `reversible` has a reverse handler unless its plain bool `--copy-states` is given: check
    // draws the switch, asks each configuration's model, and draws `--check-reverse` where its
    // handler runs. No false failure.
    let r = run(
        "reversible",
        &[
            "check",
            "--runs",
            "8",
            "--seed",
            "4",
            "--sync",
            "timewarp",
            "--verbose",
        ],
    );
    let e = stderr(&r);
    assert!(r.status.success(), "{e}");
    assert!(stdout(&r).contains(" 0 failed"), "{}", stdout(&r));
    let runs: Vec<&str> = e.lines().filter(|l| l.contains(" run --lps ")).collect();
    assert!(
        runs.iter()
            .any(|l| l.contains("--copy-states") && l.contains("--state-saving auto")),
        "{e}"
    );
    assert!(
        runs.iter()
            .any(|l| !l.contains("--copy-states") && l.contains("--check-reverse")),
        "{e}"
    );
    assert!(
        !runs
            .iter()
            .any(|l| l.contains("--copy-states") && l.contains("--state-saving reverse")),
        "{e}"
    );
}

#[test]
fn the_tandem_queue_matches_queueing_theory_under_every_executor() {
    let dir = scratch("tandem");
    let model = ["run", "--end", "20000", "--seed", "3"];
    let seq = report("tandem", &model, &dir, "seq");
    let stats = &seq["model_stats"];
    // λ = 1, μ = 2 at every station: L = ρ/(1-ρ) = 1 customer, W = 1/(μ-λ) = 1 time unit.
    for k in 0..4 {
        let l = stats[format!("in_system{k}.mean")].as_f64().unwrap();
        let w = stats[format!("sojourn{k}.mean")].as_f64().unwrap();
        assert!((l - 1.0).abs() < 0.12, "station {k}: L = {l}");
        assert!((w - 1.0).abs() < 0.12, "station {k}: W = {w}");
    }
    for exec in [["--sync", "null-message"], ["--sync", "timewarp"]] {
        let mut args = model.to_vec();
        args.extend_from_slice(&exec);
        args.extend(["--threads", "2"]);
        let r = report("tandem", &args, &dir, exec[1]);
        assert_eq!(r["fingerprint"], seq["fingerprint"], "{exec:?}");
        assert_eq!(r["model_stats"], seq["model_stats"], "{exec:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `in_system<k>.time` of the tandem queue's report: each station's time average, one LP.
fn observed(r: &Value) -> Vec<f64> {
    (0..4)
        .map(|k| {
            r["model_stats"][format!("in_system{k}.time")]
                .as_f64()
                .unwrap()
        })
        .collect()
}

#[test]
fn time_averages_close_at_the_end_time_under_every_executor_and_at_a_cut() {
    let dir = scratch("tandem-end");
    let model = ["run", "--end", "500", "--seed", "4"];
    let seq = report("tandem", &model, &dir, "seq");
    // Every station observed the whole run, not up to its last event.
    assert_eq!(observed(&seq), [500.0; 4]);
    let runs: &[&[&str]] = &[
        &["--sync", "window", "--threads", "2"],
        &["--sync", "lockstep", "--threads", "2"],
        &["--sync", "timewarp", "--threads", "2"],
        &["--sync", "window", "--threads", "1", "--procs", "2"],
        &["--sync", "timewarp", "--threads", "1", "--procs", "2"],
    ];
    for (i, exec) in runs.iter().enumerate() {
        let mut args = model.to_vec();
        args.extend_from_slice(exec);
        let r = report("tandem", &args, &dir, &format!("par{i}"));
        assert_eq!(r["fingerprint"], seq["fingerprint"], "{exec:?}");
        assert_eq!(r["model_stats"], seq["model_stats"], "{exec:?}");
    }
    // A run that ends at a checkpoint's cut closes there; its continuation ends with the
    // uninterrupted run's statistics.
    let ck = dir.join("ck");
    let c = ck.to_str().expect("a UTF-8 path");
    let cut = report(
        "tandem",
        &[
            "run",
            "--end",
            "200",
            "--seed",
            "4",
            "--sync",
            "timewarp",
            "--threads",
            "2",
            "--checkpoint-at",
            "200",
            "--checkpoint-dir",
            c,
        ],
        &dir,
        "cut",
    );
    assert_eq!(observed(&cut), [200.0; 4]);
    let t200 = ck.join("t200");
    let t200 = t200.to_str().expect("a UTF-8 path");
    for exec in [
        &["--sync", "seq"][..],
        &["--sync", "window", "--threads", "1", "--procs", "2"],
    ] {
        let mut args = model.to_vec();
        args.extend(["--restore", t200]);
        args.extend_from_slice(exec);
        let r = report("tandem", &args, &dir, "restored");
        assert_eq!(r["fingerprint"], seq["fingerprint"], "{exec:?}");
        assert_eq!(r["model_stats"], seq["model_stats"], "{exec:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reverse_computation_restores_every_state_under_time_warp() {
    let dir = scratch("reversible");
    let model = ["run", "--end", "80", "--seed", "5"];
    let seq = report("reversible", &model, &dir, "seq");
    let mut args = model.to_vec();
    args.extend([
        "--sync",
        "timewarp",
        "--threads",
        "2",
        "--state-saving",
        "reverse",
        "--check-reverse",
    ]);
    let tw = report("reversible", &args, &dir, "tw");
    assert_eq!(tw["fingerprint"], seq["fingerprint"]);
    // Its exact statistics, updated forward and taken back in reverse, are the sequential
    // run's, bit for bit, with and without the forward-reverse check of every event.
    let stats = &seq["model_stats"];
    assert_eq!(stats["value.n"], stats["caught"], "{stats}");
    assert!(stats["value.n"].as_f64().unwrap() > 1000.0, "{stats}");
    // 32 LPs, each observed from 0 to the end time 80.
    assert_eq!(stats["level.time"].as_f64(), Some(32.0 * 80.0), "{stats}");
    assert_eq!(tw["model_stats"], seq["model_stats"]);
    args.pop();
    let plain = report("reversible", &args, &dir, "tw-plain");
    assert_eq!(plain["fingerprint"], seq["fingerprint"]);
    assert_eq!(plain["model_stats"], seq["model_stats"]);
    // A model without `check_reverse` refuses the flag in one line.
    let r = run("ring", &["run", "--sync", "timewarp", "--check-reverse"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("--check-reverse"), "{}", stderr(&r));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn per_link_lookaheads_are_used_and_enforced() {
    let dir = scratch("links");
    let model = ["run", "--end", "100", "--cities", "12"];
    let seq = report("links", &model, &dir, "seq");
    for exec in [["--sync", "null-message"], ["--sync", "window"]] {
        let mut args = model.to_vec();
        args.extend_from_slice(&exec);
        args.extend(["--threads", "3"]);
        let r = report("links", &args, &dir, exec[1]);
        assert_eq!(r["fingerprint"], seq["fingerprint"], "{exec:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweep_of_the_ring_summarizes_every_point() {
    let dir = scratch("sweep");
    let out = dir.join("study");
    let r = run(
        "ring",
        &[
            "sweep",
            "--tokens",
            "1,2",
            "--end",
            "20",
            "--replications",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(r.status.success(), "{}", stderr(&r));
    let summary = std::fs::read_to_string(out.join("summary.csv")).expect("summary.csv");
    assert!(summary.contains("tokens_passed"), "{summary}");
    let runs = std::fs::read_to_string(out.join("runs.csv")).expect("runs.csv");
    assert_eq!(runs.lines().count(), 1 + 4, "{runs}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fenced blocks of `lang` in a Markdown file.
fn blocks(markdown: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in markdown.lines() {
        match &mut cur {
            None if line.trim_start() == format!("```{lang}") => cur = Some(String::new()),
            Some(b) if line.trim_start() == "```" => {
                out.push(std::mem::take(b));
                cur = None;
            }
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn the_tutorial_and_the_readme_show_the_ring_example_as_it_is() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let ring = std::fs::read_to_string(root.join("examples/ring.rs")).unwrap();
    let tutorial = std::fs::read_to_string(root.join("docs/tutorial.md")).unwrap();
    let code = blocks(&tutorial, "rust,ignore");
    assert!(!code.is_empty(), "the tutorial has Rust code");
    // Each runner block of the tutorial (`rust,ignore`: its plain `rust` blocks are chronon's
    // doctests) is a piece of the ring example, and the last one is all of it.
    for b in &code {
        assert!(
            ring.contains(b.trim()),
            "a tutorial block is not in examples/ring.rs:\n{b}"
        );
    }
    assert!(
        code.iter().any(|b| b.trim() == ring.trim()),
        "the tutorial shows the whole of examples/ring.rs"
    );
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for b in blocks(&readme, "rust,ignore") {
        assert!(
            ring.contains(b.trim()),
            "a README block is not in examples/ring.rs:\n{b}"
        );
    }
}

#[test]
fn bench_compares_the_executors_on_the_model() {
    let r = run(
        "ring",
        &[
            "bench",
            "--sync",
            "seq,window,timewarp",
            "--threads",
            "2",
            "--procs",
            "2",
            "--end",
            "30",
        ],
    );
    assert!(r.status.success(), "{}", stderr(&r));
    let table = stdout(&r);
    for label in ["seq", "window x2", "window 2p x2", "timewarp x2"] {
        assert!(table.contains(label), "{label} missing: {table}");
    }
    assert!(!table.contains("DIFFERS"), "{table}");
    // It ends with its recommendation: one of the runners, and on a machine with fewer than
    // 4 cores the runner that put 4 workers on it is named.
    let last = table.lines().last().unwrap_or_default();
    assert!(
        [
            "seq",
            "window x2",
            "window 2p x2",
            "timewarp x2",
            "timewarp 2p x2"
        ]
        .iter()
        .any(|l| last.starts_with(&format!("recommendation: {l}"))),
        "{table}"
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        last.contains("2p x2 put more workers than this machine's"),
        cores < 4,
        "{table}"
    );
    // The planted bug shows in a benchmark too: a parallel run commits another history.
    let r = run(
        "order-bug",
        &["bench", "--sync", "seq,window", "--threads", "2"],
    );
    assert_eq!(r.status.code(), Some(1), "{}", stdout(&r));
    assert!(stdout(&r).contains("DIFFERS"), "{}", stdout(&r));
    assert!(
        stderr(&r).contains("committed another history"),
        "{}",
        stderr(&r)
    );
}

/// A model's own program says in `--help` what the model is and where the runner is
/// documented (chronon's docs/, which the program does not ship), and `run --help` names the
/// model.
#[test]
fn help_names_the_model_and_the_docs() {
    let r = run("ring", &["--help"]);
    assert!(r.status.success(), "{}", stderr(&r));
    let help = stdout(&r);
    let first = help.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("ring: A token ring. A simulation on chronon"),
        "{help}"
    );
    assert!(
        first.contains("cli.md") && first.contains("tutorial.md"),
        "{help}"
    );
    assert!(!help.contains("(see docs/"), "{help}");
    let r = run("ring", &["run", "--help"]);
    assert!(
        stdout(&r)
            .lines()
            .next()
            .unwrap_or_default()
            .contains("A token ring"),
        "{}",
        stdout(&r)
    );
}
