//! The real binary: the conservative executors' flags, good and bad.

mod common;

use common::{chronon, fingerprint};

fn bad(args: &[&str], needle: &str) {
    let (code, stdout, stderr) = chronon(args);
    assert_eq!(code, 2, "{args:?}: {stderr}");
    assert!(stdout.is_empty(), "{args:?}: {stdout}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
}

const BASE: &[&str] = &[
    "run",
    "phold",
    "--lps",
    "32",
    "--end",
    "10",
    "--start-events",
    "2",
];

fn with(extra: &[&str]) -> Vec<String> {
    BASE.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn run_ok(extra: &[&str]) -> String {
    let args = with(extra);
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let (code, stdout, stderr) = chronon(&refs);
    assert_eq!(code, 0, "{extra:?}: {stderr}");
    fingerprint(&stdout)
}

#[test]
fn every_sync_and_barrier_prints_the_sequential_fingerprint() {
    let seq = run_ok(&[]);
    for threads in ["2", "3", "4"] {
        let fp = run_ok(&["--sync", "null-message", "--threads", threads]);
        assert_eq!(fp, seq, "null-message x{threads}");
    }
    for sync in ["window", "lockstep"] {
        for (barrier, threads) in [
            ("tree", "3"),
            ("spin", "2"),
            ("semaphore", "4"),
            ("std", "2"),
        ] {
            let mut args = vec!["--sync", sync, "--threads", threads, "--barrier", barrier];
            if barrier == "tree" {
                args.extend(["--fan-in", "2"]);
            }
            let fp = run_ok(&args);
            assert_eq!(fp, seq, "{sync} {barrier} x{threads}");
        }
    }
    let mesh = run_ok(&["--topology", "mesh2d"]);
    assert_eq!(
        run_ok(&[
            "--topology",
            "mesh2d",
            "--sync",
            "null-message",
            "--threads",
            "4",
            "--mapping",
            "round-robin"
        ]),
        mesh
    );
}

#[test]
fn bad_conservative_flags_exit_2_with_one_line() {
    let args = |extra: &[&str]| with(extra);
    let check = |extra: &[&str], needle: &str| {
        let a = args(extra);
        let refs: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        bad(&refs, needle);
    };
    check(&["--sync", "window", "--threads", "0"], "--threads is 0");
    check(&["--sync", "lockstep", "--threads", "0"], "--threads is 0");
    check(
        &["--sync", "optimistic"],
        "allowed: seq, window, null-message, lockstep",
    );
    check(
        &["--sync", "window", "--threads", "2", "--barrier", "posix"],
        "allowed: std, semaphore, spin, tree",
    );
    check(
        &["--sync", "window", "--threads", "2", "--fan-in", "0"],
        "--fan-in is 0",
    );
    check(
        &["--sync", "window", "--threads", "2", "--mapping", "random"],
        "allowed: block, round-robin",
    );
    check(&["--topology", "ring"], "allowed: mesh, mesh2d");
    check(
        &[
            "--sync",
            "null-message",
            "--threads",
            "2",
            "--lookahead",
            "0",
        ],
        "cycle of zero-lookahead links",
    );
}

#[test]
fn bench_barriers_prints_both_tables() {
    let (code, stdout, stderr) = chronon(&[
        "bench",
        "barriers",
        "--threads",
        "1,2",
        "--m",
        "1,4",
        "--waits",
        "2000",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Table 1"), "{stdout}");
    assert!(stdout.contains("Table 2"), "{stdout}");
    assert!(stdout.contains("2 threads"), "{stdout}");
    bad(&["bench", "barriers", "--threads", "0"], "at least 1");
    bad(&["bench", "barriers", "--fan-in", "0"], "--fan-in is 0");
}

#[test]
fn load_balancing_flags_and_config_keys() {
    let seq = run_ok(&["--hot-lps", "4", "--remote", "1.0"]);
    for (d, n, t) in [("0.5", "2", "2"), ("0", "1", "3"), ("0.25", "3", "2")] {
        let fp = run_ok(&[
            "--hot-lps",
            "4",
            "--remote",
            "1.0",
            "--sync",
            "window",
            "--threads",
            t,
            "--dedicated",
            d,
            "--shared-sets",
            n,
        ]);
        assert_eq!(fp, seq, "--dedicated {d} --shared-sets {n} x{t}");
    }
    let dir = std::env::temp_dir().join(format!("chronon-lb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("lb.toml");
    std::fs::write(&cfg, "sync = \"window\"\nthreads = 2\ndedicated = 0.5\nshared-sets = 2\nhot-lps = 4\nremote = 1.0\n").unwrap();
    let fp = run_ok(&["--config", cfg.to_str().unwrap()]);
    assert_eq!(fp, seq, "from the config file");
    std::fs::write(&cfg, "sync = \"lockstep\"\ndedicated = 0.5\n").unwrap();
    bad(
        &["run", "phold", "--config", cfg.to_str().unwrap()],
        "window only",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_load_balancing_flags_exit_2_with_one_line() {
    let w = ["--sync", "window", "--threads", "2"];
    let cases: &[(&[&str], &str)] = &[
        (
            &["--sync", "lockstep", "--dedicated", "0.5"],
            "--dedicated applies to --sync window only",
        ),
        (
            &["--sync", "null-message", "--shared-sets", "2"],
            "--shared-sets applies to --sync window only",
        ),
        (&["--dedicated", "0.5"], "window only"),
        (
            &[w[0], w[1], w[2], w[3], "--dedicated", "1.5"],
            "--dedicated is 1.5; it must be in [0, 1]",
        ),
        (
            &[w[0], w[1], w[2], w[3], "--dedicated", "-0.1"],
            "it must be in [0, 1]",
        ),
        (
            &[
                w[0],
                w[1],
                w[2],
                w[3],
                "--dedicated",
                "0.5",
                "--shared-sets",
                "0",
            ],
            "--shared-sets is 0",
        ),
        (
            &[w[0], w[1], w[2], w[3], "--shared-sets", "2"],
            "--shared-sets applies only with --dedicated below 1",
        ),
        (
            &[w[0], w[1], "--dedicated", "1", "--shared-sets", "2"],
            "--shared-sets applies only with --dedicated below 1",
        ),
        (
            &[
                "--sync",
                "null-message",
                "--threads",
                "2",
                "--barrier",
                "spin",
            ],
            "--barrier applies to --sync window or lockstep only",
        ),
        (
            &["--sync", "null-message", "--threads", "2", "--fan-in", "2"],
            "--fan-in applies to --sync window or lockstep only",
        ),
        (
            &[w[0], w[1], "--barrier", "spin", "--fan-in", "2"],
            "--fan-in applies to --barrier tree only; got --barrier spin",
        ),
        (&[w[0], w[1], "--hot-lps", "99"], "hot-lps is 99"),
        (&[w[0], w[1], "--hot-work-us", "-1"], "hot-work-us"),
    ];
    for (extra, needle) in cases {
        let args = with(extra);
        let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        bad(&refs, needle);
    }
}

/// The runs that lost events under null messages when a worker started with nothing before
/// the end (it saw the others as idle before they had published, and left): each, repeated,
/// must commit the sequential history.
#[test]
fn null_messages_with_workers_that_start_idle_commit_the_sequential_history() {
    let cases: &[&[&str]] = &[
        &[
            "run",
            "campus",
            "--campuses",
            "1",
            "--servers",
            "2",
            "--lans-per-net",
            "1",
            "--clients-per-lan",
            "2",
            "--end",
            "0.3",
            "--seed",
            "5",
        ],
        &[
            "run",
            "star-clique",
            "--stars",
            "2",
            "--end",
            "0.3",
            "--seed",
            "3",
        ],
        &[
            "run",
            "manufacturing",
            "--lines",
            "1",
            "--stations-per-line",
            "3",
            "--end",
            "200",
            "--seed",
            "3",
        ],
    ];
    for case in cases {
        let (code, stdout, stderr) = chronon(case);
        assert_eq!(code, 0, "{case:?}: {stderr}");
        let seq = fingerprint(&stdout);
        for threads in ["2", "3", "4"] {
            for _ in 0..3 {
                let mut args = case.to_vec();
                args.extend(["--sync", "null-message", "--threads", threads]);
                let (code, stdout, stderr) = chronon(&args);
                assert_eq!(code, 0, "{args:?}: {stderr}");
                assert_eq!(fingerprint(&stdout), seq, "{args:?}");
            }
        }
    }
}

#[test]
fn bench_refcount_prints_tables_3_to_8_with_one_history() {
    let (code, stdout, stderr) = chronon(&[
        "bench",
        "refcount",
        "--threads",
        "1,2",
        "--ops",
        "2000",
        "--lps",
        "64",
        "--end",
        "20",
        "--reps",
        "1",
    ]);
    assert_eq!(code, 0, "{stderr}");
    for table in 3..=8 {
        assert!(stdout.contains(&format!("Table {table}")), "{stdout}");
    }
    // Raw counts are single-threaded only; every scheme's column has a figure at 2 threads.
    let two = stdout
        .lines()
        .find(|l| l.starts_with("2 threads"))
        .expect("a 2-thread row");
    assert!(two.contains("unsafe"), "{two}");
    assert!(
        two.split_whitespace()
            .filter(|w| w.parse::<f64>().is_ok())
            .count()
            >= 4,
        "{two}"
    );
    // The scheme never changes the relay model's history (the bench fails otherwise).
    assert!(
        stdout.contains("Every relay run committed the same history"),
        "{stdout}"
    );
    bad(&["bench", "refcount", "--threads", "0"], "at least 1");
    bad(
        &["bench", "refcount", "--end=-1"],
        "--end must be a positive number",
    );
}

#[test]
fn the_work_stealing_and_active_threads_runtimes_print_the_sequential_fingerprint() {
    let seq = run_ok(&[]);
    for runtime in ["work-stealing", "active-threads"] {
        for (threads, threshold) in [("1", "1"), ("2", "7"), ("3", "50"), ("4", "3")] {
            let fp = run_ok(&[
                "--sync",
                "lockstep",
                "--runtime",
                runtime,
                "--threshold",
                threshold,
                "--threads",
                threads,
            ]);
            assert_eq!(fp, seq, "{runtime} x{threads}, threshold {threshold}");
        }
    }
    // The default runtime, named.
    let fp = run_ok(&[
        "--sync",
        "lockstep",
        "--runtime",
        "threads",
        "--threads",
        "2",
    ]);
    assert_eq!(fp, seq);
}

#[test]
fn bad_runtime_flags_are_one_line_errors() {
    let ls = ["--sync", "lockstep", "--threads", "2"];
    let cases: &[(&[&str], &str)] = &[
        (
            &["--runtime", "bsp", "--procs", "2"],
            "--runtime bsp starts one single-threaded process per --threads",
        ),
        (
            &["--runtime", "work-stealing", "--threshold", "0"],
            "--threshold is 0",
        ),
        (
            &["--runtime", "active-threads", "--threshold", "0"],
            "--threshold is 0",
        ),
        (
            &["--runtime", "active-threads", "--barrier", "std"],
            "--barrier applies to --runtime threads only",
        ),
        (
            &["--runtime", "active-threads", "--mapping", "block"],
            "--mapping applies to --runtime threads only",
        ),
        (&["--runtime", "fibers"], "unknown --runtime 'fibers'"),
        (
            &["--threshold", "5"],
            "--threshold applies to --runtime work-stealing and active-threads only",
        ),
        (
            &["--runtime", "work-stealing", "--mapping", "round-robin"],
            "--mapping applies to --runtime threads only",
        ),
        (
            &["--runtime", "work-stealing", "--barrier", "spin"],
            "--barrier applies to --runtime threads only",
        ),
    ];
    for (extra, needle) in cases {
        let args = with(&[&ls[..], extra].concat());
        let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        bad(&refs, needle);
    }
    for runtime in ["work-stealing", "active-threads"] {
        for sync in ["window", "null-message", "timewarp", "seq"] {
            let threads = if sync == "seq" { "1" } else { "2" };
            let args = with(&["--sync", sync, "--threads", threads, "--runtime", runtime]);
            let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
            bad(&refs, "applies to --sync lockstep only");
        }
    }
}

/// Worker processes and MPI ranks meet at their transport's own barrier: `--barrier` and
/// `--fan-in` with them are one line and exit 2, before any process starts or MPI is set up
/// (so in a build without the `mpi` feature too), and from a config file as from the flags.
#[test]
fn barrier_flags_across_processes_or_ranks_exit_2_with_one_line() {
    let procs = "worker processes (--procs) meet at their own shared-memory barrier";
    let ranks = "MPI ranks meet at their own barrier";
    let bsp = "the worker processes of --runtime bsp meet at their own shared-memory barrier";
    let cases: &[(&[&str], &str)] = &[
        (
            &["--sync", "window", "--procs", "2", "--barrier", "spin"],
            "--barrier applies to the threads of one process; ",
        ),
        (
            &["--sync", "lockstep", "--procs", "2", "--barrier", "tree"],
            procs,
        ),
        (
            &["--sync", "window", "--procs", "2", "--fan-in", "2"],
            procs,
        ),
        (
            &["--sync", "window", "--ranks", "2", "--barrier", "std"],
            ranks,
        ),
        (
            &["--sync", "lockstep", "--ranks", "2", "--fan-in", "2"],
            ranks,
        ),
        (
            &[
                "--sync",
                "lockstep",
                "--runtime",
                "bsp",
                "--threads",
                "2",
                "--barrier",
                "spin",
            ],
            bsp,
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["run", "phold", "--lps", "8", "--end", "5"];
        args.extend_from_slice(extra);
        bad(&args, needle);
    }
    let dir = std::env::temp_dir().join(format!("chronon-barrier-procs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("procs.toml");
    std::fs::write(
        &cfg,
        "sync = \"window\"\nprocs = 2\nbarrier = \"semaphore\"\n",
    )
    .unwrap();
    bad(
        &[
            "run",
            "phold",
            "--end",
            "5",
            "--config",
            cfg.to_str().unwrap(),
        ],
        "--barrier applies to the threads of one process; worker processes (--procs)",
    );
    let _ = std::fs::remove_dir_all(&dir);
}
