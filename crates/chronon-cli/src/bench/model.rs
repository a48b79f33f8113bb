//! `bench` for any model (`chronon bench model MODEL ...`, or `prog bench ...` in a program of
//! one's own): the model's run under each chosen executor, thread and process count, side by
//! side in one invocation so that the ratios hold on a noisy machine. Each measurement is a
//! child process (`run ... --output`), so its peak RSS is its own; the fingerprints are compared
//! too, so a benchmark never reports the speed of a wrong run.

use std::path::Path;
use std::process::Stdio;

use clap::Args;

use crate::registry::Models;
use crate::Failure;

/// `bench` of a registered model.
#[derive(Debug, Args)]
pub(crate) struct ModelBench {
    /// Executors (`--sync` values), each at every thread count (seq once).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "seq,window,null-message,lockstep,timewarp"
    )]
    sync: Vec<String>,
    /// Thread counts of the parallel executors.
    #[arg(long, value_delimiter = ',', default_value = "2")]
    threads: Vec<usize>,
    /// Worker process counts, each also at every thread count (`--procs P --threads W`) for
    /// every parallel executor; none by default.
    #[arg(long, value_delimiter = ',')]
    procs: Vec<usize>,
    /// Repetitions of each measurement, interleaved; the fastest is kept.
    #[arg(long, default_value_t = 1)]
    reps: u32,
    /// The model (a program with one model takes none), then its run options (`--end`,
    /// model flags, ...), the same for every measurement.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "MODEL RUN OPTIONS"
    )]
    args: Vec<String>,
}

/// One measured configuration: a label and its executor flags.
struct Runner {
    label: String,
    flags: Vec<String>,
}

struct Row {
    events: u64,
    secs: f64,
    peak_rss: u64,
    fingerprint: String,
    /// The run's workers (threads × processes).
    workers: usize,
    /// The run's advice line, if it had one (`run/advice.rs`).
    advice: Option<String>,
}

impl Row {
    /// Events per wall second.
    fn rate(&self) -> f64 {
        self.events as f64 / self.secs
    }
}

const TAKEN: &[&str] = &["sync", "threads", "procs", "output"];

pub(crate) fn run(b: ModelBench, models: &Models) -> Result<u8, Failure> {
    let (model, rest) = models.model_and_args(&b.args, "bench")?;
    if let Some(f) = rest.iter().find(|a| {
        let name = a.strip_prefix("--").unwrap_or("");
        TAKEN.contains(&name.split_once('=').map_or(name, |(n, _)| n))
    }) {
        return Err(Failure::bad_input(format!(
            "{f} is the benchmark's to set; give --sync, --threads and --procs before the run options"
        )));
    }
    if b.reps == 0 {
        return Err(Failure::bad_input("--reps is 0; it must be at least 1"));
    }
    let runners = runners(&b)?;
    let mut base = models.run_args(&model);
    base.extend(rest.iter().cloned());
    models.parses(&base)?;
    let dir = std::env::temp_dir().join(format!("chronon-bench-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", dir.display())))?;
    let measured = measure_all(&runners, &base, b.reps, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    let rows = measured?;
    print(&model, &runners, &rows)
}

fn runners(b: &ModelBench) -> Result<Vec<Runner>, Failure> {
    let mut out = Vec::new();
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for sync in &b.sync {
        crate::run::executor(Some(sync), Some(1))?;
        if sync == "seq" {
            out.push(Runner {
                label: "seq".into(),
                flags: owned(&["--sync", "seq"]),
            });
            continue;
        }
        for &t in &b.threads {
            crate::run::executor(Some(sync), Some(t))?;
            let t = t.to_string();
            out.push(Runner {
                label: format!("{sync} x{t}"),
                flags: owned(&["--sync", sync, "--threads", &t]),
            });
            for &p in &b.procs {
                if p == 0 {
                    return Err(Failure::bad_input(
                        "--procs has 0; every count must be at least 1",
                    ));
                }
                let p = p.to_string();
                out.push(Runner {
                    label: format!("{sync} {p}p x{t}"),
                    flags: owned(&["--sync", sync, "--threads", &t, "--procs", &p]),
                });
            }
        }
    }
    if out.is_empty() {
        return Err(Failure::bad_input("--sync names no executor"));
    }
    Ok(out)
}

/// Every runner `reps` times, interleaved (A, B, C, A, B, C, ...), the fastest of each kept.
fn measure_all(
    runners: &[Runner],
    base: &[String],
    reps: u32,
    dir: &Path,
) -> Result<Vec<Row>, Failure> {
    let exe = crate::sys::SelfCommand::this()?;
    let mut best: Vec<Option<Row>> = runners.iter().map(|_| None).collect();
    for _ in 0..reps {
        for (i, r) in runners.iter().enumerate() {
            let report = dir.join("report.json");
            let _ = std::fs::remove_file(&report);
            let out = exe
                .command()
                .args(base)
                .args(&r.flags)
                .args(["--pin", "off", "--output"])
                .arg(&report)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .map_err(|e| Failure::runtime(format!("cannot start a benchmark run: {e}")))?;
            if !out.status.success() {
                let err = String::from_utf8_lossy(&out.stderr);
                return Err(Failure {
                    code: out.status.code().map_or(1, |c| c.clamp(1, 255) as u8),
                    message: format!(
                        "benchmark run '{}' failed: {}",
                        r.label,
                        crate::one_line(&err)
                    ),
                });
            }
            let v: serde_json::Value = std::fs::read_to_string(&report)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .ok_or_else(|| Failure::runtime(format!("no report from run '{}'", r.label)))?;
            let row = Row {
                events: v["committed"].as_u64().unwrap_or(0),
                secs: v["wall_s"].as_f64().unwrap_or(f64::NAN),
                peak_rss: v["peak_rss_bytes"].as_u64().unwrap_or(0),
                fingerprint: v["fingerprint"].as_str().unwrap_or("").to_string(),
                workers: v["parallelism"]["workers"].as_u64().unwrap_or(1) as usize,
                advice: v["parallelism"]["advice"].as_str().map(str::to_string),
            };
            if best[i].as_ref().is_none_or(|b| row.secs < b.secs) {
                best[i] = Some(row);
            }
        }
    }
    Ok(best.into_iter().flatten().collect())
}

fn print(model: &str, runners: &[Runner], rows: &[Row]) -> Result<u8, Failure> {
    println!("{model}: {} events per run", rows[0].events);
    println!(
        "{:<22} {:>12} {:>9} {:>12} {:>8} {:>11}  fingerprint",
        "runner", "events", "wall s", "events/s", "x first", "peak RSS"
    );
    let first = rows[0].rate();
    let mut differ = Vec::new();
    for (r, row) in runners.iter().zip(rows) {
        let same = row.fingerprint == rows[0].fingerprint;
        if !same {
            differ.push(r.label.clone());
        }
        println!(
            "{:<22} {:>12} {:>9.3} {:>12.0} {:>8.2} {:>7.1} MiB  {}{}",
            r.label,
            row.events,
            row.secs,
            row.rate(),
            row.rate() / first,
            row.peak_rss as f64 / (1u64 << 20) as f64,
            row.fingerprint,
            if same { "" } else { " DIFFERS" }
        );
    }
    if differ.is_empty() {
        println!("{}", recommend(runners, rows));
        Ok(0)
    } else {
        Err(Failure::runtime(format!(
            "{} committed another history than '{}' (run `check` on this model)",
            differ.join(", "),
            runners[0].label
        )))
    }
}

/// The benchmark's closing line: the fastest runner, and why the parallel ones lost where
/// none beat the sequential run.
fn recommend(runners: &[Runner], rows: &[Row]) -> String {
    let best = (0..rows.len())
        .max_by(|&a, &b| rows[a].rate().total_cmp(&rows[b].rate()))
        .expect("at least one runner");
    let cores = crate::sys::cores();
    let crowded: Vec<&str> = runners
        .iter()
        .zip(rows)
        .filter(|(_, r)| r.workers > cores)
        .map(|(r, _)| r.label.as_str())
        .collect();
    let mut line = format!("recommendation: {}", runners[best].label);
    let seq = runners.iter().position(|r| r.label == "seq");
    match seq {
        Some(s) if s == best => {
            line += " (no parallel runner was faster here";
            // Why the best parallel runner lost, in its own run's words.
            let parallel = (0..rows.len())
                .filter(|&i| i != s)
                .max_by(|&a, &b| rows[a].rate().total_cmp(&rows[b].rate()));
            if let Some(why) = parallel.and_then(|p| {
                rows[p]
                    .advice
                    .as_ref()
                    .map(|a| format!("; {}: {a}", runners[p].label))
            }) {
                line += &why;
            }
            line += ")";
        }
        Some(s) => {
            line += &format!(" ({:.2} x seq)", rows[best].rate() / rows[s].rate());
        }
        None => {}
    }
    if !crowded.is_empty() {
        line += &format!(
            "; {} put more workers than this machine's {cores} cores",
            crowded.join(", ")
        );
    }
    line
}
