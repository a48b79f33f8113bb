//! The open Jackson network (`examples/jackson.rs`) in the study it was written for: one
//! warm-up saved as a checkpoint, then replications branched from it at two arrival scales,
//! whose 95 % intervals hold the product-form values.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::example;

fn jackson(args: &[&str]) -> Output {
    Command::new(example("jackson"))
        .args(args)
        .output()
        .expect("the example starts")
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn fingerprint(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("fingerprint"))
        .unwrap_or_else(|| panic!("no fingerprint in {stdout}"))
        .trim()
        .to_string()
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chronon-jackson-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .map(|h| h.to_string())
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

/// The product-form values at `scale`: per station (L, W) = (ρ/(1−ρ), 1/(μ−λ)), λ solving
/// λ = γ·scale + λ·P (the example's constants).
fn theory(scale: f64) -> Vec<(f64, f64)> {
    let gamma = [1.0, 0.5, 0.0];
    let mu = [4.0, 3.0, 2.0];
    let p = [[0.0, 0.5, 0.3], [0.2, 0.0, 0.5], [0.1, 0.0, 0.0]];
    let mut lambda = gamma.map(|g| g * scale);
    for _ in 0..500 {
        lambda = std::array::from_fn(|j| {
            gamma[j] * scale + (0..3).map(|i| lambda[i] * p[i][j]).sum::<f64>()
        });
    }
    (0..3)
        .map(|k| {
            let rho = lambda[k] / mu[k];
            (rho / (1.0 - rho), 1.0 / (mu[k] - lambda[k]))
        })
        .collect()
}

/// One warm-up to 1000, saved; a branch with a new seed commits one history under every
/// executor; 10 replications at each of two arrival scales, 5000 time units each, branched
/// from the warm-up with no model flag repeated. Every mean is within 6 % of the product-form
/// value, and at least 10 of the 12 intervals hold it (each does with probability 0.95; with
/// these fixed seeds the count is fixed too, and printed). Plots are drawn of the means only.
#[test]
fn replications_branched_from_a_warm_up_hold_the_product_form_values() {
    let dir = scratch("study");
    let ck_dir = dir.join("ck");
    ok(&jackson(&[
        "run",
        "--end",
        "1000",
        "--warmup",
        "1000",
        "--checkpoint-at",
        "1000",
        "--checkpoint-dir",
        ck_dir.to_str().unwrap(),
    ]));
    let ck = ck_dir.join("t1000");
    let ck = ck.to_str().unwrap();
    let branch = ["run", "--restore", ck, "--end", "1500", "--seed", "5"];
    let seq = fingerprint(&ok(&jackson(&branch)));
    for exec in [
        ["--sync", "window"],
        ["--sync", "null-message"],
        ["--sync", "timewarp"],
    ] {
        let mut args = branch.to_vec();
        args.extend_from_slice(&exec);
        args.extend(["--threads", "2"]);
        assert_eq!(fingerprint(&ok(&jackson(&args))), seq, "{exec:?}");
    }
    let out = dir.join("sb");
    ok(&jackson(&[
        "sweep",
        "--restore",
        ck,
        "--end",
        "6000",
        "--arrival-scale",
        "0.8,1.2",
        "--replications",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]));
    let runs = csv(&out.join("runs.csv"));
    let mut prints: Vec<&String> = runs.iter().map(|r| &r["fingerprint"]).collect();
    prints.sort();
    prints.dedup();
    assert_eq!(prints.len(), 20, "every replication its own history");
    let summary = csv(&out.join("summary.csv"));
    let mut covered = 0;
    for (point, scale) in [("0", 0.8), ("1", 1.2)] {
        for (k, (l, w)) in theory(scale).into_iter().enumerate() {
            for (stat, want) in [
                (format!("in_system{k}.mean"), l),
                (format!("sojourn{k}.mean"), w),
            ] {
                let s = summary
                    .iter()
                    .find(|s| s["point"] == point && s["statistic"] == stat)
                    .unwrap_or_else(|| panic!("no {stat} at point {point}"));
                let num = |c: &str| s[c].parse::<f64>().unwrap();
                let (mean, lo, hi) = (num("mean"), num("ci95_low"), num("ci95_high"));
                eprintln!("scale {scale} {stat}: {mean:.4} [{lo:.4}, {hi:.4}], theory {want:.4}");
                assert_eq!(s["n"], "10");
                assert!(hi > lo, "{stat}: a zero-width interval");
                assert!(
                    (mean - want).abs() < 0.06 * want,
                    "{stat}: {mean} vs {want}"
                );
                if lo <= want && want <= hi {
                    covered += 1;
                }
            }
        }
    }
    eprintln!("coverage: {covered} of 12 intervals hold the product-form value");
    assert!(covered >= 10, "{covered} of 12 intervals hold the value");
    let plots: Vec<String> = std::fs::read_dir(out.join("plots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        plots.contains(&"in_system2_mean-vs-arrival-scale.svg".to_string()),
        "{plots:?}"
    );
    assert!(
        plots
            .iter()
            .all(|p| !p.contains("sum_sq") && !p.contains("_n-")),
        "{plots:?}"
    );
    // The same study again with --plot all: nothing to run, every part plotted.
    let again = ok(&jackson(&[
        "sweep",
        "--restore",
        ck,
        "--end",
        "6000",
        "--arrival-scale",
        "0.8,1.2",
        "--replications",
        "10",
        "--out",
        out.to_str().unwrap(),
        "--plot",
        "all",
    ]));
    assert!(again.contains("20 from before"), "{again}");
    assert!(out
        .join("plots/sojourn0_sum_sq-vs-arrival-scale.svg")
        .exists());
    let _ = std::fs::remove_dir_all(&dir);
}
