//! `run --trace FILE`: every LP's committed events, identical under every executor (threads,
//! Time Warp's rollbacks, worker processes), restricted with `--trace-lps`; bad input gets one
//! line and exit 2.

mod common;

use common::chronon;

/// A small PHOLD configuration (8 LPs, end 20, about 1600 events).
const MODEL: &[&str] = &["run", "phold", "--lps", "8", "--end", "20", "--seed", "3"];

fn scratch(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("chronon-trace-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The trace of MODEL under `exec`.
fn trace(dir: &std::path::Path, tag: &str, exec: &[&str]) -> String {
    let path = dir.join(format!("{tag}.trace"));
    let p = path.to_str().unwrap();
    let mut args = MODEL.to_vec();
    args.extend_from_slice(exec);
    args.extend(["--trace", p]);
    let (code, _, err) = chronon(&args);
    assert_eq!(code, 0, "{exec:?}: {err}");
    std::fs::read_to_string(&path).unwrap()
}

#[test]
fn the_trace_is_the_same_under_every_executor() {
    let dir = scratch("executors");
    let seq = trace(&dir, "seq", &["--sync", "seq"]);
    let lines: Vec<&str> = seq.lines().collect();
    assert!(lines[0].starts_with("# chronon trace: lp pos time src seq digest"));
    assert!(lines.len() > 1000, "{} lines", lines.len());
    // Sorted by (LP, position), each LP's positions 0, 1, 2, ... and its times not decreasing.
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(' ').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 6));
    for w in rows.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if a[0] == b[0] {
            assert_eq!(
                b[1].parse::<u64>().unwrap(),
                a[1].parse::<u64>().unwrap() + 1
            );
            assert!(b[2].parse::<f64>().unwrap() >= a[2].parse::<f64>().unwrap());
        } else {
            assert!(b[0].parse::<u32>().unwrap() > a[0].parse::<u32>().unwrap());
            assert_eq!(b[1], "0");
        }
    }
    for (i, exec) in [
        &["--sync", "window", "--threads", "2"][..],
        &["--sync", "null-message", "--threads", "3"],
        &[
            "--sync",
            "lockstep",
            "--threads",
            "2",
            "--runtime",
            "work-stealing",
        ],
        &["--sync", "timewarp", "--threads", "2"],
        &[
            "--sync",
            "timewarp",
            "--threads",
            "3",
            "--state-saving",
            "copy",
        ],
        &["--sync", "window", "--threads", "1", "--procs", "2"],
        &["--sync", "timewarp", "--threads", "2", "--procs", "2"],
    ]
    .iter()
    .enumerate()
    {
        let t = trace(&dir, &format!("par{i}"), exec);
        assert!(t == seq, "{exec:?}: the trace differs from seq's");
    }
    // --trace-lps: those LPs' lines only, as in the full trace.
    let some = trace(&dir, "some", &["--trace-lps", "2,5"]);
    let want: Vec<&str> = lines[1..]
        .iter()
        .copied()
        .filter(|l| l.starts_with("2 ") || l.starts_with("5 "))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(some.lines().skip(1).collect::<Vec<_>>(), want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_trace_arguments_get_one_line() {
    let dir = scratch("bad");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("t.trace");
    let ok = dir.join("ok.trace");
    for (extra, words) in [
        (vec!["--trace", under_file.to_str().unwrap()], "is a file"),
        (vec!["--trace", dir.to_str().unwrap()], "is a directory"),
        (
            vec!["--trace", ok.to_str().unwrap(), "--trace-lps", "8"],
            "LP 8 is out of range",
        ),
        (vec!["--trace-lps", "1"], "give --trace FILE"),
        (
            vec!["--trace", ok.to_str().unwrap(), "--trace-lps", "x"],
            "--trace-lps",
        ),
    ] {
        let mut args = MODEL.to_vec();
        args.extend(extra.iter().copied());
        let (code, _, err) = chronon(&args);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains(words), "{extra:?}: {err}");
    }
    assert!(!ok.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
