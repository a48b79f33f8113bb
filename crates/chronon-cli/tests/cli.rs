//! The `chronon` binary as a user runs it: summaries, reports, configs, bad input, Ctrl-C.

mod common;

use std::process::{Command, Output, Stdio};

use common::SMALL;

fn chronon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

fn tmp(name: &str) -> common::Scratch {
    common::scratch("chronon-cli", name)
}

fn with(extra: &[&str]) -> Vec<String> {
    SMALL.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn run_ok(args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = chronon(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?} failed: {stderr}");
    // Off a terminal, nothing but the summary: no progress output.
    assert!(stderr.is_empty(), "unexpected stderr: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

fn fingerprint(summary: &str) -> String {
    summary
        .lines()
        .find_map(|l| l.strip_prefix("fingerprint"))
        .expect("a fingerprint line")
        .trim()
        .to_string()
}

#[test]
fn summary_shows_committed_rate_and_fingerprint() {
    let s = run_ok(&with(&[]));
    for word in ["committed", "wall", "events/s", "fingerprint"] {
        assert!(s.contains(word), "{s}");
    }
    assert_eq!(fingerprint(&s).len(), 16);
    assert_eq!(fingerprint(&run_ok(&with(&[]))), fingerprint(&s));
    assert_ne!(
        fingerprint(&run_ok(&with(&["--seed", "2"]))),
        fingerprint(&s)
    );
    assert_eq!(
        fingerprint(&run_ok(&with(&[
            "--queue",
            "heap",
            "--sync",
            "seq",
            "--threads",
            "1"
        ]))),
        fingerprint(&s)
    );
}

#[test]
fn output_writes_the_report_json() {
    let path = tmp("report.json");
    let s = run_ok(&with(&["--output", path.to_str().unwrap()]));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for key in [
        "model",
        "sync",
        "threads",
        "config",
        "committed",
        "processed",
        "rolled_back",
        "wall_s",
        "events_per_s",
        "fingerprint",
        "peak_rss_bytes",
        "model_stats",
    ] {
        assert!(v.get(key).is_some(), "report lacks {key}: {v}");
    }
    assert_eq!(v["model"], "phold");
    assert_eq!(v["model_counters"], serde_json::json!(["remote_sends"]));
    assert_eq!(v["sync"], "seq");
    assert_eq!(v["complete"], true);
    assert_eq!(v["config"]["lps"], 32);
    assert_eq!(v["fingerprint"].as_str().unwrap(), fingerprint(&s));
    assert!(v["peak_rss_bytes"].as_u64().unwrap() > 0);
    assert!(v["committed"].as_u64().unwrap() > 500);
}

#[test]
fn config_file_takes_the_same_keys_and_flags_override_it() {
    let cfg = tmp("run.toml");
    std::fs::write(
        &cfg,
        "lps = 32\nstart-events = 2\nend = 20.0\nseed = 5\nqueue = \"heap\"\nremote = 0.1\n",
    )
    .unwrap();
    let from_file = run_ok(&["run", "phold", "--config", cfg.to_str().unwrap()].map(String::from));
    let from_flags = run_ok(&with(&["--seed", "5"]));
    assert_eq!(fingerprint(&from_file), fingerprint(&from_flags));
    let overridden = run_ok(
        &[
            "run",
            "phold",
            "--config",
            cfg.to_str().unwrap(),
            "--seed",
            "6",
        ]
        .map(String::from),
    );
    assert_eq!(
        fingerprint(&overridden),
        fingerprint(&run_ok(&with(&["--seed", "6"])))
    );
}

/// Runs with bad input: exit code 2, one line on stderr mentioning `words`, no panic.
fn bad(args: &[&str], words: &str) {
    let out = chronon(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains(words),
        "{args:?}: expected '{words}' in {stderr}"
    );
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"));
}

#[test]
fn bad_flags_exit_2_with_one_line() {
    fn p<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec!["run", "phold", "--end", "5"];
        v.extend_from_slice(extra);
        v
    }
    bad(&p(&["--lps", "0"]), "lps is 0");
    bad(
        &p(&["--remote", "1.5"]),
        "remote is 1.5; it must be in [0, 1]",
    );
    bad(&p(&["--remote", "-0.1"]), "remote");
    bad(&p(&["--mean", "-1"]), "mean is -1");
    bad(&p(&["--mean", "NaN"]), "mean is NaN");
    bad(
        &p(&["--lookahead", "2", "--mean", "1"]),
        "greater than mean",
    );
    bad(&["run", "phold", "--end", "0"], "--end is 0");
    bad(&["run", "phold", "--end", "-3"], "--end is -3");
    bad(
        &p(&["--queue", "splay"]),
        "unknown --queue 'splay' (allowed: heap, ladder)",
    );
    bad(&p(&["--sync", "magic"]), "unknown --sync 'magic'");
    bad(&p(&["--threads", "0"]), "--threads is 0");
    bad(
        &p(&["--threads", "2"]),
        "--sync seq runs on exactly 1 thread",
    );
    bad(
        &p(&["--barrier", "spin"]),
        "--barrier applies to --sync window",
    );
    bad(
        &p(&["--sync", "timewarp", "--threads", "2", "--fan-in", "3"]),
        "--fan-in applies to --sync window",
    );
    bad(&p(&["--mapping", "round-robin"]), "--mapping applies");
    bad(&p(&["--lps", "abc"]), "invalid value 'abc'");
    bad(&p(&["--no-such-flag"]), "--no-such-flag");
    bad(&["run", "nosuchmodel"], "nosuchmodel");
    bad(
        &p(&["--config", "/nonexistent/run.toml"]),
        "cannot read config file",
    );
}

#[test]
fn bad_config_files_exit_2_with_one_line() {
    let unknown = tmp("unknown.toml");
    std::fs::write(&unknown, "lps = 8\nspeed = 3\n").unwrap();
    bad(
        &["run", "phold", "--config", unknown.to_str().unwrap()],
        "unknown key 'speed'",
    );
    let typed = tmp("typed.toml");
    std::fs::write(&typed, "lps = \"many\"\n").unwrap();
    bad(
        &["run", "phold", "--config", typed.to_str().unwrap()],
        "invalid type",
    );
    let broken = tmp("broken.toml");
    std::fs::write(&broken, "lps = = 3\n").unwrap();
    bad(
        &["run", "phold", "--config", broken.to_str().unwrap()],
        "not valid TOML",
    );
    let range = tmp("range.toml");
    std::fs::write(&range, "remote = 3.0\n").unwrap();
    bad(
        &["run", "phold", "--config", range.to_str().unwrap()],
        "remote is 3",
    );
    // A number that is not finite is refused as the flag refuses it, never replaced by the
    // default: the model's keys (phold's `mean`, pcs's `call-interarrival`) and the runner's.
    for (model, key, value, says) in [
        (
            "phold",
            "mean",
            "nan",
            "key 'mean': NaN is not a finite number",
        ),
        (
            "phold",
            "mean",
            "inf",
            "key 'mean': inf is not a finite number",
        ),
        (
            "phold",
            "remote",
            "-inf",
            "key 'remote': -inf is not a finite number",
        ),
        (
            "pcs",
            "call-interarrival",
            "nan",
            "key 'call-interarrival': NaN is not a finite number",
        ),
        ("phold", "end", "nan", "--end is NaN"),
    ] {
        let file = tmp(&format!("nonfinite-{model}-{key}-{value}.toml"));
        std::fs::write(&file, format!("{key} = {value}\n")).unwrap();
        bad(&["run", model, "--config", file.to_str().unwrap()], says);
    }
}

#[test]
fn model_faults_exit_2_with_one_line() {
    fn f(fault: &str) -> [&str; 6] {
        ["run", "faulty", "--fault", fault, "--end", "10"]
    }
    bad(
        &f("bad-destination"),
        "sent an event to LP 8, but the simulation has 8 LPs",
    );
    bad(&f("negative-delay"), "delay -1");
    bad(&f("nan-delay"), "delay NaN");
    bad(
        &f("below-lookahead"),
        "below the model's declared lookahead",
    );
    // A panic is not bad input: exit 1, still one line, naming the LP and time.
    let out = chronon(&f("panic"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("LP 1 at time 3") && stderr.contains("on purpose"),
        "{stderr}"
    );
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_cleanly_and_writes_an_incomplete_report() {
    let path = tmp("interrupted.json");
    let child = Command::new(env!("CARGO_BIN_EXE_chronon"))
        .args(["run", "phold", "--lps", "64", "--end", "1e9", "--output"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("INCOMPLETE"), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    assert!(v["committed"].as_u64().unwrap() > 0);
}

#[test]
fn help_and_version_exit_0() {
    assert!(chronon(&["--help"]).status.success());
    assert!(chronon(&["--version"]).status.success());
    assert!(chronon(&["run", "phold", "--help"]).status.success());
}

/// A parallel run says how much parallelism it had, in the summary and the report, and gives
/// one line of advice where it had a reason: more workers than cores, or less than one core's
/// worth of event work (a tiny PHOLD whose rounds hold a few dozen events each).
/// Also: hot LPs that the block mapping puts on one worker show as an imbalance (the busiest
/// worker's busy time over the mean), which the advice names.
#[test]
fn a_parallel_run_reports_its_parallelism_and_advice() {
    let path = tmp("parallelism.json");
    let out = run_ok(&with(&[
        "--sync",
        "window",
        "--threads",
        "2",
        "--output",
        path.to_str().unwrap(),
    ]));
    assert!(out.contains("\nparallelism  "), "{out}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let p = &r["parallelism"];
    assert_eq!(p["workers"], 2, "{p}");
    let busy = p["busy_workers"].as_f64().unwrap();
    assert!(busy > 0.0 && busy <= 2.0, "{p}");
    assert!(
        p["events_per_sync_per_worker"].as_f64().unwrap() > 0.0,
        "{p}"
    );
    assert_eq!(p["sync"], "round", "{p}");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if busy < 1.0 && cores >= 2 {
        let advice = p["advice"].as_str().unwrap();
        assert!(advice.contains("slower than --sync seq"), "{advice}");
        assert!(out.contains("\nadvice       "), "{out}");
    }
    // Eight LPs with 200 µs of extra work each, all on worker 0 (block mapping): worker 1's
    // events are a thousand times cheaper.
    let out = run_ok(&owned(&[
        "run",
        "phold",
        "--lps",
        "64",
        "--hot-lps",
        "8",
        "--hot-work-us",
        "200",
        "--end",
        "10",
        "--sync",
        "window",
        "--threads",
        "2",
        "--output",
        path.to_str().unwrap(),
    ]));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let p = &r["parallelism"];
    let imbalance = p["imbalance"].as_f64().unwrap();
    assert!(imbalance > 1.5 && imbalance <= 2.0, "{p}");
    assert!(out.contains("; imbalance "), "{out}");
    if cores >= 2 {
        let advice = p["advice"].as_str().unwrap();
        assert!(advice.contains("the load is uneven"), "{advice}");
    }
    // More workers than cores: the advice says so, whatever else it could say.
    let threads = (cores + 1).to_string();
    let out = run_ok(&with(&[
        "--sync",
        "timewarp",
        "--threads",
        &threads,
        "--output",
        path.to_str().unwrap(),
    ]));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let advice = r["parallelism"]["advice"].as_str().unwrap();
    assert!(
        advice.starts_with(&format!("{threads} workers on {cores} cores")),
        "{advice}"
    );
    assert!(out.contains(advice), "{out}");
    // The sequential run has neither line.
    let out = run_ok(&with(&[]));
    assert!(
        !out.contains("parallelism") && !out.contains("advice"),
        "{out}"
    );
}
