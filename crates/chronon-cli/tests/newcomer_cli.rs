//! What a newcomer meets: every default in `--help`, options grouped under headings, rejected
//! combinations that suggest the fix, config errors naming the key and file, sizes with or
//! without a suffix, short errors for huge numbers, and a report whose `config` reruns the run.

mod common;

use common::{chronon, fingerprint};

/// Every model `chronon run --help` lists (so a new model is covered without editing this test).
fn models() -> Vec<String> {
    let (code, help, _) = chronon(&["run", "--help"]);
    assert_eq!(code, 0);
    let list: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|m| *m != "help")
        .map(str::to_string)
        .collect();
    assert!(
        list.len() >= 9,
        "too few models in `chronon run --help`: {list:?}"
    );
    list
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("chronon-newcomer-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The help text of `flag` in `help` (its line and the next, for wrapped layouts).
fn flag_help<'a>(help: &'a str, flag: &str) -> String {
    let lines: Vec<&'a str> = help.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.trim_start().starts_with(&format!("{flag} ")))
        .unwrap_or_else(|| panic!("no {flag} in {help}"));
    lines[i..(i + 2).min(lines.len())].join(" ")
}

#[test]
fn help_shows_every_default_under_headings() {
    for model in &models() {
        let (code, help, _) = chronon(&["run", model, "--help"]);
        assert_eq!(code, 0);
        for flag in ["--end", "--seed", "--queue", "--sync", "--threads"] {
            assert!(
                flag_help(&help, flag).contains("[default: "),
                "{model} {flag}: {help}"
            );
        }
        for heading in [
            "Model options:",
            "Run options:",
            "Executor options:",
            "Time Warp options",
        ] {
            assert!(help.contains(heading), "{model}: {help}");
        }
        // Model options come first, then the run, executor and Time Warp options.
        let at = |s: &str| help.find(s).unwrap();
        assert!(at("Model options:") < at("Run options:"));
        assert!(at("Run options:") < at("Executor options:"));
        assert!(at("Executor options:") < at("Time Warp options"));
    }
    // Each model has its own default end time.
    let (_, help, _) = chronon(&["run", "campus", "--help"]);
    assert!(flag_help(&help, "--end").contains("[default: 2]"), "{help}");
    let (_, help, _) = chronon(&["run", "phold", "--help"]);
    assert!(
        flag_help(&help, "--end").contains("[default: 1000]"),
        "{help}"
    );
}

#[test]
fn a_rejected_combination_suggests_the_fix() {
    let (code, _, err) = chronon(&["run", "phold", "--lps", "8", "--threads", "2"]);
    assert_eq!(code, 2);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--threads 2") && err.contains("window, null-message, lockstep or timewarp"),
        "{err}"
    );
}

#[test]
fn a_config_type_error_names_the_key_and_the_file() {
    let d = scratch("types");
    for (model, text, key) in [
        ("phold", "lps = \"ten\"\n", "lps"),
        ("simplesim", "lps = \"ten\"\n", "lps"),
        ("manufacturing", "lines = 4\nrework = \"lots\"\n", "rework"),
        ("phold", "seed = 1\nend = \"ten\"\n", "end"),
        ("pcs", "threads = -1\n", "threads"),
    ] {
        let cfg = d.join(format!("{model}-{key}.toml"));
        std::fs::write(&cfg, text).unwrap();
        let (code, out, err) = chronon(&["run", model, "--config", cfg.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        assert!(out.is_empty());
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("key '{key}'")) && err.contains(cfg.to_str().unwrap()),
            "{model} {text}: {err}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn sizes_take_a_suffix_or_a_plain_number() {
    let d = scratch("sizes");
    let small = [
        "run", "phold", "--lps", "8", "--end", "5", "--sync", "timewarp",
    ];
    let mut prints = Vec::new();
    for mm in ["64M", "67108864"] {
        let mut a = small.to_vec();
        a.extend(["--max-memory", mm]);
        let (code, out, err) = chronon(&a);
        assert_eq!(code, 0, "{err}");
        prints.push(fingerprint(&out));
    }
    for text in ["max-memory = \"64M\"\n", "max-memory = 67108864\n"] {
        let cfg = d.join("mm.toml");
        std::fs::write(&cfg, text).unwrap();
        let mut a = small.to_vec();
        a.extend(["--config", cfg.to_str().unwrap()]);
        let (code, out, err) = chronon(&a);
        assert_eq!(code, 0, "{text}: {err}");
        prints.push(fingerprint(&out));
    }
    assert!(prints.windows(2).all(|w| w[0] == w[1]), "{prints:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn errors_with_huge_numbers_stay_short() {
    let huge = "9".repeat(5000);
    let d = scratch("huge");
    let cfg = d.join("huge.toml");
    std::fs::write(&cfg, format!("lps = \"{huge}\"\n")).unwrap();
    let cfg = cfg.to_str().unwrap().to_string();
    for args in [
        vec!["run", "phold", "--lps", huge.as_str()],
        vec!["run", "phold", "--end", huge.as_str()],
        vec![
            "run",
            "phold",
            "--sync",
            "timewarp",
            "--max-memory",
            huge.as_str(),
        ],
        vec!["run", "phold", "--config", cfg.as_str()],
    ] {
        let (code, _, err) = chronon(&args);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err.trim_end().lines().count(), 1);
        assert!(err.len() < 300, "{} characters: {err}", err.len());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Runs `args` with a report, writes the report's `config` as TOML, reruns from it alone and
/// checks the fingerprint and config are the same.
fn rerun_from_report(d: &std::path::Path, name: &str, args: &[&str]) {
    let report = d.join(format!("{name}.json"));
    let mut a = args.to_vec();
    a.extend(["--output", report.to_str().unwrap()]);
    let (code, out, err) = chronon(&a);
    assert_eq!(code, 0, "{args:?}: {err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let config = &v["config"];
    let toml_text = toml::to_string(config).unwrap();
    let cfg = d.join(format!("{name}.toml"));
    std::fs::write(&cfg, &toml_text).unwrap();
    let again = d.join(format!("{name}-again.json"));
    let (code, out2, err) = chronon(&[
        "run",
        args[1],
        "--config",
        cfg.to_str().unwrap(),
        "--output",
        again.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{toml_text}: {err}");
    assert_eq!(fingerprint(&out2), fingerprint(&out), "{toml_text}");
    let w: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
    assert_eq!(&w["config"], config);
    assert_eq!(w["sync"], v["sync"]);
    assert_eq!(w["threads"], v["threads"]);
}

#[test]
fn a_reports_config_reruns_the_same_simulation() {
    let d = scratch("rerun");
    let phold = [
        "run",
        "phold",
        "--lps",
        "16",
        "--start-events",
        "3",
        "--end",
        "20",
        "--seed",
        "7",
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        phold.iter().chain(extra).copied().collect()
    };
    rerun_from_report(&d, "seq", &with(&["--queue", "heap", "--remote", "0.3"]));
    rerun_from_report(
        &d,
        "window",
        &with(&[
            "--sync",
            "window",
            "--threads",
            "2",
            "--barrier",
            "spin",
            "--mapping",
            "round-robin",
            "--dedicated",
            "0.5",
            "--shared-sets",
            "2",
        ]),
    );
    rerun_from_report(
        &d,
        "lockstep",
        &with(&["--sync", "lockstep", "--threads", "2", "--fan-in", "2"]),
    );
    rerun_from_report(
        &d,
        "null",
        &with(&["--sync", "null-message", "--threads", "2"]),
    );
    rerun_from_report(
        &d,
        "timewarp",
        &with(&[
            "--sync",
            "timewarp",
            "--threads",
            "2",
            "--state-saving",
            "copy",
            "--save-every",
            "3",
            "--max-memory",
            "64M",
            "--window",
            "inf",
        ]),
    );
    rerun_from_report(
        &d,
        "manufacturing",
        &[
            "run",
            "manufacturing",
            "--lines",
            "2",
            "--assembly-stations",
            "0",
            "--end",
            "200",
        ],
    );
    rerun_from_report(
        &d,
        "phases",
        &[
            "run",
            "phold-phases",
            "--width",
            "4",
            "--height",
            "3",
            "--wrap",
            "true",
            "--end",
            "2",
        ],
    );
    std::fs::remove_dir_all(&d).unwrap();
}
