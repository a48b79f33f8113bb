//! Studies that branch from a warm-up checkpoint: a restored run takes the checkpoint's
//! parameters, seed and end; `--seed` on a restored run draws the streams anew (the same
//! history under every executor); `sweep --restore --replications N` gives N independent
//! replications whose intervals hold the M/M/1 values; the manifest spells parameters as the
//! flags do and one of the old spelling is still read.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{chronon, fingerprint, scratch};

const MM1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/manufacturing-mm1.toml"
);

/// M/M/1 at rho = 0.5 (20 lines), warmed up to 100 and saved there: the checkpoint's path.
fn warmed_up(dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let ck = dir.join("ck");
    let (code, out, err) = chronon(&[
        "run",
        "manufacturing",
        "--config",
        MM1,
        "--lines",
        "20",
        "--end",
        "100",
        "--checkpoint-at",
        "100",
        "--checkpoint-dir",
        ck.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    ck.join("t100").to_str().unwrap().to_string()
}

fn run(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["run", "manufacturing"];
    all.extend_from_slice(args);
    chronon(&all)
}

fn refused(r: (i32, String, String), expect: &str) {
    let (code, out, err) = r;
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(expect), "{err}");
}

fn csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    common::csv_rows(&std::fs::read_to_string(path).unwrap())
}

#[test]
fn a_restored_run_needs_no_model_flags_and_its_seed_draws_new_streams() {
    let dir = scratch("chronon-restore", "seed");
    let ck = warmed_up(&dir);
    // No model flag: the checkpoint's are the defaults, and its seed (1): the run never
    // interrupted.
    let (code, whole, err) = chronon(&[
        "run",
        "manufacturing",
        "--config",
        MM1,
        "--lines",
        "20",
        "--end",
        "300",
    ]);
    assert_eq!(code, 0, "{err}");
    let report = dir.join("r.json");
    let (code, cont, err) = run(&[
        "--restore",
        &ck,
        "--end",
        "300",
        "--output",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fingerprint(&cont), fingerprint(&whole));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["config"]["lines"], 20);
    assert_eq!(r["config"]["seed"], 1);
    assert_eq!(r["restored"]["reseed"], serde_json::Value::Null);
    // The checkpoint's seed given again: the same continuation.
    let (_, same, _) = run(&["--restore", &ck, "--end", "300", "--seed", "1"]);
    assert_eq!(fingerprint(&same), fingerprint(&whole));
    // Another seed: new streams at the cut, exactly those of --reseed with it, under every
    // executor; the report says so.
    let (code, s5, err) = run(&[
        "--restore",
        &ck,
        "--end",
        "300",
        "--seed",
        "5",
        "--output",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_ne!(fingerprint(&s5), fingerprint(&whole));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["config"]["seed"], 5);
    assert_eq!(r["restored"]["reseed"], 5);
    for exec in [
        &["--reseed", "5"][..],
        &["--seed", "5", "--sync", "window", "--threads", "2"],
        &["--seed", "5", "--sync", "timewarp", "--threads", "2"],
    ] {
        let mut args = vec!["--restore", ck.as_str(), "--end", "300"];
        args.extend_from_slice(exec);
        let (code, o, err) = run(&args);
        assert_eq!(code, 0, "{exec:?}: {err}");
        assert_eq!(fingerprint(&o), fingerprint(&s5), "{exec:?}");
    }
    // Refused in one line: two ways of drawing the streams, no end after the cut, a
    // parameter the checkpoint cannot honour.
    refused(
        run(&[
            "--restore",
            &ck,
            "--end",
            "300",
            "--seed",
            "5",
            "--reseed",
            "6",
        ]),
        "--seed 5 and --reseed 6: give one",
    );
    refused(
        run(&["--restore", &ck]),
        "give --end, a time after the cut 100",
    );
    refused(
        run(&["--restore", &ck, "--end", "300", "--lines", "21"]),
        "saved with --lines 20; this run has --lines 21",
    );
}

#[test]
fn the_manifest_spells_parameters_as_flags_and_the_old_spelling_still_reads() {
    let dir = scratch("chronon-restore", "spelling");
    let ck = warmed_up(&dir);
    let manifest = Path::new(&ck).join("manifest.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(m["config"]["stations-per-line"], 1, "{text}");
    assert!(m["config"].get("stations_per_line").is_none(), "{text}");
    assert_eq!(m["end"], 100.0);
    let (_, want, _) = run(&["--restore", &ck, "--end", "300"]);
    // A manifest as chronon wrote it before (field spelling, no end), checksum made anew.
    let old = text
        .replace("\"stations-per-line\"", "\"stations_per_line\"")
        .replace("\"processing-mean\"", "\"processing_mean\"")
        .replace("  \"end\": 100.0,\n", "");
    assert_ne!(old, text);
    std::fs::write(&manifest, with_checksum(&old)).unwrap();
    let (code, got, err) = run(&["--restore", &ck, "--end", "300"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fingerprint(&got), fingerprint(&want));
    refused(
        run(&["--restore", &ck]),
        "the checkpoint records no end time",
    );
}

/// The manifest `text` with its checksum field made right (CRC-32 of the text with
/// `"checksum": 0`).
fn with_checksum(text: &str) -> String {
    let at = text.rfind("\"checksum\": ").unwrap();
    let end = at + text[at..].find(['\n', ',', '}']).unwrap();
    let zero = format!("{}\"checksum\": 0{}", &text[..at], &text[end..]);
    format!(
        "{}\"checksum\": {}{}",
        &text[..at],
        crc32(zero.as_bytes()),
        &text[end..]
    )
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for b in bytes {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// One warm-up, then 20 studies of 5 replications each branched from it (`--seed 1..20`, 500
/// time units a run): every run has its own seed and history, and the 95 % intervals of the
/// mean number in the station hold the M/M/1 value L = 1 (rho = 0.5) in about 19 of the 20
/// studies. The seeds are fixed, so the count is too; a correct t interval gives 16 or more
/// with probability above 0.99, while replications that share one history (sd 0, the interval
/// a point) would give about none.
#[test]
fn replications_branched_from_a_warm_up_hold_the_mm1_values() {
    let dir = scratch("chronon-restore", "study");
    let ck = warmed_up(&dir);
    let out = dir.join("study");
    let (code, stdout, err) = chronon(&[
        "sweep",
        "manufacturing",
        "--restore",
        &ck,
        "--end",
        "600",
        "--seed",
        "1..20",
        "--replications",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}{err}");
    let runs = csv(&out.join("runs.csv"));
    assert_eq!(runs.len(), 100);
    let mut prints: Vec<&String> = runs.iter().map(|r| &r["fingerprint"]).collect();
    prints.sort();
    prints.dedup();
    assert_eq!(prints.len(), 100, "every replication its own history");
    let summary = csv(&out.join("summary.csv"));
    let mut covered = 0;
    let mut grand = 0.0;
    for s in summary
        .iter()
        .filter(|s| s["statistic"] == "processing_mean_in_station")
    {
        let (lo, hi): (f64, f64) = (
            s["ci95_low"].parse().unwrap(),
            s["ci95_high"].parse().unwrap(),
        );
        assert!(hi - lo > 0.0 && hi - lo < 0.5, "{s:?}");
        grand += s["mean"].parse::<f64>().unwrap() / 20.0;
        if lo <= 1.0 && 1.0 <= hi {
            covered += 1;
        }
    }
    eprintln!("coverage: {covered} of 20 intervals hold L = 1; grand mean {grand:.4}");
    assert!(covered >= 16, "{covered} of 20 intervals hold L = 1");
    assert!((grand - 1.0).abs() < 0.03, "grand mean {grand}");
    // A study whose runs all fail (the end is not after the cut) leaves nothing behind.
    let bad = dir.join("bad");
    let (code, _, err) = chronon(&[
        "sweep",
        "manufacturing",
        "--restore",
        &ck,
        "--end",
        "50",
        "--out",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not after the checkpoint's cut"), "{err}");
    assert!(!bad.exists());
    // --reseed with replications: each replication is reseeded already.
    let (code, _, err) = chronon(&[
        "sweep",
        "manufacturing",
        "--restore",
        &ck,
        "--end",
        "600",
        "--reseed",
        "1..3",
        "--replications",
        "2",
        "--out",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("drop --reseed"), "{err}");
}
