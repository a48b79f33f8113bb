//! Checkpoint and restart from the command line: saved under one executor, restored under
//! another (threads and worker processes), a run killed with SIGKILL restored from its last
//! checkpoint, and every bad input refused in one line with nothing half-written left.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_chronon");

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("run")
        .args(args)
        .output()
        .expect("chronon runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fingerprint(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("fingerprint  "))
        .unwrap_or_else(|| panic!("no fingerprint in {stdout}"))
        .to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chronon-ckcli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

const PHOLD: &[&str] = &["phold", "--lps", "64", "--end", "30", "--seed", "4"];

fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

fn one_line_error(code: i32, stdout: &str, stderr: &str, expect: &str) {
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(expect), "{stderr}");
}

#[test]
fn saved_under_one_executor_restored_under_any_other() {
    let (code, out, err) = run(PHOLD);
    assert_eq!(code, 0, "{err}");
    let whole = fingerprint(&out);
    let dir = tmp("any");
    let d = dir.to_str().unwrap();
    let (code, out, err) = run(&with(
        PHOLD,
        &[
            "--sync",
            "window",
            "--threads",
            "2",
            "--checkpoint-every",
            "10",
            "--checkpoint-dir",
            d,
        ],
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(fingerprint(&out), whole);
    assert!(out.contains("checkpoint   t = 20"), "{out}");
    let t10 = dir.join("t10");
    let t10 = t10.to_str().unwrap();
    for more in [
        &["--sync", "seq"][..],
        &["--sync", "timewarp", "--threads", "2"],
        &["--sync", "null-message", "--threads", "2", "--procs", "2"],
        &["--sync", "timewarp", "--threads", "1", "--procs", "2"],
    ] {
        let (code, out, err) = run(&with(&with(PHOLD, &["--restore", t10]), more));
        assert_eq!(code, 0, "{more:?}: {err}");
        assert_eq!(fingerprint(&out), whole, "{more:?}");
        assert!(out.contains("restored     from"), "{out}");
    }
    // Saved by worker processes (conservative and Time Warp): one part each, restored by
    // threads.
    for (sync, part) in [("lockstep", "part-1.bin"), ("timewarp", "part-2.bin")] {
        let procs = tmp(&format!("procs-{sync}"));
        let p = procs.to_str().unwrap();
        let (code, out, err) = run(&with(
            PHOLD,
            &[
                "--sync",
                sync,
                "--threads",
                "2",
                "--procs",
                "2",
                "--checkpoint-every",
                "10",
                "--checkpoint-dir",
                p,
            ],
        ));
        assert_eq!(code, 0, "{sync}: {err}");
        assert_eq!(fingerprint(&out), whole, "{sync}");
        let t20 = procs.join("t20");
        assert!(t20.join(part).exists(), "{sync}");
        let (code, out, err) = run(&with(
            PHOLD,
            &[
                "--sync",
                "timewarp",
                "--threads",
                "2",
                "--restore",
                t20.to_str().unwrap(),
            ],
        ));
        assert_eq!(code, 0, "{err}");
        assert_eq!(fingerprint(&out), whole, "{sync}");
        std::fs::remove_dir_all(&procs).unwrap();
    }
}

#[test]
fn a_run_killed_after_its_second_checkpoint_continues_from_it() {
    let long = ["phold", "--lps", "512", "--end", "400", "--seed", "9"];
    let dir = tmp("kill");
    let d = dir.to_str().unwrap();
    let mut child = Command::new(BIN)
        .arg("run")
        .args(long)
        .args(["--checkpoint-every", "10", "--checkpoint-dir", d])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chronon starts");
    let second = dir.join("t20");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !second.join("manifest.json").exists() {
        assert!(std::time::Instant::now() < deadline, "no second checkpoint");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (code, out, err) = run(&with(
        &long,
        &[
            "--sync",
            "window",
            "--threads",
            "2",
            "--restore",
            second.to_str().unwrap(),
        ],
    ));
    assert_eq!(code, 0, "{err}");
    let (_, whole, _) = run(&long);
    assert_eq!(fingerprint(&out), fingerprint(&whole));
    // The next run in the directory removes what the killed one was writing.
    let (code, _, err) = run(&with(
        PHOLD,
        &["--checkpoint-at", "5", "--checkpoint-dir", d],
    ));
    assert_eq!(code, 0, "{err}");
    let hidden: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn saved(name: &str, extra: &[&str]) -> PathBuf {
    let dir = tmp(name);
    let d = dir.to_str().unwrap().to_string();
    let args = with(
        &with(PHOLD, extra),
        &["--checkpoint-at", "10", "--checkpoint-dir"],
    );
    let (code, _, err) = run(&with(&args, &[&d]));
    assert_eq!(code, 0, "{err}");
    dir
}

#[test]
fn bad_options_and_bad_checkpoints_are_refused_in_one_line() {
    let (c, o, e) = run(&with(PHOLD, &["--checkpoint-every", "5"]));
    one_line_error(c, &o, &e, "--checkpoint-every needs --checkpoint-dir");
    let (c, o, e) = run(&with(PHOLD, &["--checkpoint-dir", "/tmp/x"]));
    one_line_error(c, &o, &e, "--checkpoint-dir needs --checkpoint-every");
    let (c, o, e) = run(&with(PHOLD, &["--reseed", "3"]));
    one_line_error(c, &o, &e, "--reseed needs --restore");
    let (c, o, e) = run(&with(
        PHOLD,
        &["--checkpoint-every", "0", "--checkpoint-dir", "/tmp"],
    ));
    one_line_error(c, &o, &e, "--checkpoint-every is 0");
    let (c, o, e) = run(&with(PHOLD, &["--restore", "/nonexistent/t10"]));
    one_line_error(c, &o, &e, "/nonexistent/t10");
    let file = tmp("file");
    std::fs::write(&file, "x").unwrap();
    let (c, o, e) = run(&with(
        PHOLD,
        &[
            "--checkpoint-every",
            "5",
            "--checkpoint-dir",
            file.to_str().unwrap(),
        ],
    ));
    one_line_error(c, &o, &e, "cannot create it");
    std::fs::remove_file(&file).unwrap();

    let dir = saved("bad", &[]);
    let ck = dir.join("t10");
    let t10 = ck.to_str().unwrap();
    // Another configuration; a changeable parameter is accepted and recorded.
    let (c, o, e) = run(&["phold", "--lps", "65", "--end", "30", "--restore", t10]);
    one_line_error(c, &o, &e, "saved with --lps 64; this run has --lps 65");
    let report = dir.join("r.json");
    let (c, _, e) = run(&with(
        PHOLD,
        &[
            "--remote",
            "0.5",
            "--restore",
            t10,
            "--output",
            report.to_str().unwrap(),
        ],
    ));
    assert_eq!(c, 0, "{e}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["restored"]["changed"], serde_json::json!(["remote"]));
    // Another model.
    let (c, o, e) = run(&["pcs", "--end", "30", "--restore", t10]);
    one_line_error(c, &o, &e, "a checkpoint of the model phold, not pcs");
    // A corrupted part, a truncated manifest, a missing manifest.
    let part = ck.join("part-0.bin");
    let mut bytes = std::fs::read(&part).unwrap();
    let n = bytes.len();
    bytes[n / 3] ^= 0x40;
    std::fs::write(&part, &bytes).unwrap();
    let (c, o, e) = run(&with(PHOLD, &["--restore", t10]));
    one_line_error(c, &o, &e, "fails its checksum");
    let manifest = ck.join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, &text[..text.len() / 2]).unwrap();
    let (c, o, e) = run(&with(PHOLD, &["--restore", t10]));
    one_line_error(c, &o, &e, "truncated or corrupted");
    std::fs::remove_file(&manifest).unwrap();
    let (c, o, e) = run(&with(PHOLD, &["--restore", t10]));
    one_line_error(c, &o, &e, "is not a checkpoint");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files larger than `kb` KiB cannot be written (as on a full disk: the write fails with
/// EFBIG instead of ENOSPC).
fn limited(kb: u32, args: &[&str]) -> (i32, String, String) {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let script = format!(
        "trap '' XFSZ; ulimit -f {kb}; exec '{BIN}' run {}",
        quoted.join(" ")
    );
    let out = Command::new("bash").arg("-c").arg(script).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_checkpoint_that_cannot_be_written_stops_the_run_cleanly_with_its_report() {
    let dir = tmp("full");
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("report.json");
    let ck = dir.join("ck");
    let (code, out, err) = limited(
        64,
        &[
            "phold",
            "--lps",
            "4096",
            "--end",
            "6",
            "--checkpoint-every",
            "2",
            "--checkpoint-dir",
            ck.to_str().unwrap(),
            "--output",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("the checkpoint at 2 was not saved"), "{err}");
    assert!(out.contains("INCOMPLETE"), "{out}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["complete"], false);
    assert!(r["checkpoint_error"]
        .as_str()
        .unwrap()
        .contains("not saved"));
    assert!(entries(&ck).is_empty(), "{:?}", entries(&ck));
    std::fs::remove_dir_all(&dir).unwrap();
}
