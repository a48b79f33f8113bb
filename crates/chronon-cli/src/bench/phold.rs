//! `chronon bench phold`: executors against the bare heap loop, side by side in one run, so that
//! the ratios hold even on a noisy machine. Each measurement runs in a child process (`chronon
//! run phold ... --output`), so that the peak RSS it reports is that run's alone.

use chronon::QueueKind;
use chronon_models::phold::{bare_heap_loop, Phold};

use crate::{sys, Failure};

/// `chronon bench phold`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct PholdBench {
    /// Configurations: std (1024 LPs, end 1000), big (16384 LPs, end 100), huge (65536 LPs,
    /// 100 start events, end 10), work (1024 LPs, end 20, --work-us 10).
    #[arg(long, value_delimiter = ',', default_value = "std,big,huge")]
    pub configs: Vec<String>,
    /// Executors (`--sync` values), each run at every thread count that it accepts.
    #[arg(long, value_delimiter = ',', default_value = "seq")]
    pub sync: Vec<String>,
    /// Thread counts.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub threads: Vec<usize>,
    /// Worker process counts for window, lockstep and null-message (each also at every thread
    /// count, as `--procs P --threads W`); none by default.
    #[arg(long, value_delimiter = ',')]
    pub procs: Vec<usize>,
    /// Pending-event sets for the sequential executor.
    #[arg(long, value_delimiter = ',', default_value = "heap,ladder")]
    pub queues: Vec<String>,
    /// Skip the bare heap loop (it takes minutes on `huge`).
    #[arg(long)]
    pub no_bare: bool,
    /// Repetitions of each measurement (the fastest is kept).
    #[arg(long, default_value_t = 1)]
    pub reps: u32,
}

struct Config {
    name: &'static str,
    phold: Phold,
    end: f64,
}

fn config(name: &str) -> Result<Config, Failure> {
    let std = Phold::default();
    Ok(match name {
        "std" => Config {
            name: "std",
            phold: std,
            end: 1000.0,
        },
        "big" => Config {
            name: "big",
            phold: Phold { lps: 16384, ..std },
            end: 100.0,
        },
        "huge" => Config {
            name: "huge",
            phold: Phold {
                lps: 65536,
                start_events: 100,
                ..std
            },
            end: 10.0,
        },
        "work" => Config {
            name: "work",
            phold: Phold {
                work_us: 10.0,
                ..std
            },
            end: 20.0,
        },
        other => {
            return Err(Failure::bad_input(format!(
                "unknown benchmark configuration '{other}' (allowed: std, big, huge, work)"
            )))
        }
    })
}

struct Row {
    what: String,
    events: u64,
    secs: f64,
    peak_rss: u64,
    /// User + system CPU seconds of the whole child process (init included).
    cpu: f64,
}

/// One measured runner: a label and the arguments of the child process that measures it.
struct Runner {
    label: String,
    args: Vec<String>,
}

fn runners(b: &PholdBench) -> Result<Vec<Runner>, Failure> {
    let mut out = Vec::new();
    if !b.no_bare {
        out.push(Runner {
            label: "bare heap".into(),
            args: vec!["bench".into(), "bare-loop".into()],
        });
    }
    for sync in &b.sync {
        if sync == "seq" {
            for q in &b.queues {
                let q: QueueKind = q.parse().map_err(Failure::bad_input)?;
                out.push(Runner {
                    label: format!("seq {}", q.name()),
                    args: vec![
                        "run".into(),
                        "phold".into(),
                        "--queue".into(),
                        q.name().into(),
                    ],
                });
            }
            continue;
        }
        for &t in &b.threads {
            // Rejects an unknown executor or thread count before anything runs.
            crate::run::executor(Some(sync), Some(t))?;
            out.push(Runner {
                label: format!("{sync} x{t}"),
                args: ["run", "phold", "--sync", sync, "--threads", &t.to_string()]
                    .map(String::from)
                    .to_vec(),
            });
            if !matches!(sync.as_str(), "window" | "lockstep" | "null-message") {
                continue;
            }
            for &p in &b.procs {
                if p == 0 {
                    return Err(Failure::bad_input(
                        "--procs 0: a process count must be at least 1",
                    ));
                }
                out.push(Runner {
                    label: format!("{sync} {p}p x{t}"),
                    args: [
                        "run",
                        "phold",
                        "--sync",
                        sync,
                        "--procs",
                        &p.to_string(),
                        "--threads",
                        &t.to_string(),
                    ]
                    .map(String::from)
                    .to_vec(),
                });
            }
        }
    }
    Ok(out)
}

/// Runs one measurement in a child process (so that its peak RSS is its own) and reads its
/// JSON report.
fn measure(r: &Runner, c: &Config, out_dir: &std::path::Path) -> Result<Row, Failure> {
    let p = &c.phold;
    let report = out_dir.join("bench-report.json");
    let _ = std::fs::remove_file(&report);
    let status = crate::sys::SelfCommand::this()?
        .command()
        .args(&r.args)
        .args(["--lps", &p.lps.to_string()])
        .args(["--start-events", &p.start_events.to_string()])
        .args(["--remote", &p.remote.to_string()])
        .args(["--lookahead", &p.lookahead.to_string()])
        .args(["--mean", &p.mean.to_string()])
        .args(["--work-us", &p.work_us.to_string()])
        .args(["--end", &c.end.to_string(), "--seed", "1", "--output"])
        .arg(&report)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| Failure::runtime(format!("cannot start a benchmark run: {e}")))?;
    if !status.success() {
        return Err(Failure::runtime(format!(
            "benchmark run '{}' on {} failed ({status})",
            r.label, c.name
        )));
    }
    let text = std::fs::read_to_string(&report)
        .map_err(|e| Failure::runtime(format!("cannot read {}: {e}", report.display())))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Failure::runtime(format!("bad benchmark report: {e}")))?;
    Ok(Row {
        what: r.label.clone(),
        events: v["committed"].as_u64().unwrap_or(0),
        secs: v["wall_s"].as_f64().unwrap_or(f64::NAN),
        peak_rss: v["peak_rss_bytes"].as_u64().unwrap_or(0),
        cpu: v["process_cpu_s"].as_f64().unwrap_or(f64::NAN),
    })
}

pub(crate) fn run(b: PholdBench) -> Result<u8, Failure> {
    let configs = b
        .configs
        .iter()
        .map(|n| config(n))
        .collect::<Result<Vec<_>, _>>()?;
    let runners = runners(&b)?;
    let reps = b.reps.max(1);
    let out_dir = std::env::temp_dir().join(format!("chronon-bench-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| Failure::runtime(format!("cannot create {}: {e}", out_dir.display())))?;
    println!(
        "{:<6} {:<18} {:>12} {:>9} {:>8} {:>12} {:>8} {:>8} {:>11} {:>10}",
        "config",
        "runner",
        "events",
        "wall s",
        "cpu s",
        "events/s",
        "x bare",
        "x first",
        "peak RSS",
        "B/pending"
    );
    for c in &configs {
        let pending = u64::from(c.phold.lps) * u64::from(c.phold.start_events);
        // Repetitions are interleaved (bare, A, B, bare, A, B, ...) and the fastest of each is
        // kept, so a burst of load from elsewhere hits every runner alike.
        let mut rows: Vec<Option<Row>> = (0..runners.len()).map(|_| None).collect();
        for _ in 0..reps {
            for (i, r) in runners.iter().enumerate() {
                let row = measure(r, c, &out_dir)?;
                if rows[i].as_ref().is_none_or(|b| row.secs < b.secs) {
                    rows[i] = Some(row);
                }
            }
        }
        let rows: Vec<Row> = rows.into_iter().flatten().collect();
        let rate = |r: &Row| r.events as f64 / r.secs;
        let bare_rate = if b.no_bare { f64::NAN } else { rate(&rows[0]) };
        let first = usize::from(!b.no_bare);
        let first_rate = rows.get(first).map_or(f64::NAN, rate);
        for r in &rows {
            println!(
                "{:<6} {:<18} {:>12} {:>9.3} {:>8.2} {:>12.0} {:>8.2} {:>8.2} {:>7.1} MiB {:>10.1}",
                c.name,
                r.what,
                r.events,
                r.secs,
                r.cpu,
                rate(r),
                rate(r) / bare_rate,
                rate(r) / first_rate,
                r.peak_rss as f64 / (1 << 20) as f64,
                r.peak_rss as f64 / pending as f64
            );
        }
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    Ok(0)
}

/// `chronon bench bare-loop`: one run of the bare heap loop, reported like `chronon run`.
pub(crate) fn bare(a: BareArgs) -> Result<u8, Failure> {
    let p = Phold {
        lps: a.lps,
        start_events: a.start_events,
        remote: a.remote,
        lookahead: a.lookahead,
        mean: a.mean,
        work_us: a.work_us,
        state_bytes: 0,
        ..Phold::default()
    };
    p.validate().map_err(Failure::bad_input)?;
    let wanted: Vec<_> = a.output.iter().map(|p| ("--output", p.clone())).collect();
    let outputs = crate::output::Outputs::plan(&wanted, &[])?;
    let r = bare_heap_loop(&p, a.end, a.seed);
    let v = serde_json::json!({
        "model": "bare-heap-phold",
        "committed": r.events,
        "wall_s": r.wall_s,
        "events_per_s": r.events as f64 / r.wall_s,
        "peak_rss_bytes": sys::peak_rss_bytes(),
        "process_cpu_s": sys::cpu_seconds(),
    });
    println!("{} events in {:.3} s", r.events, r.wall_s);
    if let Some(path) = outputs.path("--output") {
        crate::output::write_or_rescue("--output", path, v.to_string().as_bytes())?;
    }
    Ok(0)
}

/// Flags of `chronon bench bare-loop` (the PHOLD flags, no engine).
#[derive(Debug, clap::Args)]
pub(crate) struct BareArgs {
    #[arg(long, default_value_t = 1024)]
    lps: u32,
    #[arg(long, default_value_t = 10)]
    start_events: u32,
    #[arg(long, default_value_t = 0.1)]
    remote: f64,
    #[arg(long, default_value_t = 0.1)]
    lookahead: f64,
    #[arg(long, default_value_t = 1.0)]
    mean: f64,
    /// Ignored: the bare loop does no work (accepted so that it takes PHOLD's flags).
    #[arg(long, default_value_t = 0.0)]
    work_us: f64,
    #[arg(long, default_value_t = 1000.0)]
    end: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    output: Option<std::path::PathBuf>,
}
