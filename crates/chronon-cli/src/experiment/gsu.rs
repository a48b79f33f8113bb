//! Seed 000 §3.1: the cost of an LBTS computation with the GSU against one by message exchange,
//! as far as software allows. The seed's GSU is hardware (register files and comparators, LBTS
//! in a few cycles); chronon's is the software unit of `chronon::gsu` (the MOE/MOM/TMC
//! registers as atomics, read by a seqlock snapshot). What is compared, per thread count:
//!
//! * `gsu`: a worker publishes its MOE and takes a snapshot (`Gsu::publish` + `Gsu::snapshot`
//!   reading every MOE, MOM and TMC), the LBTS read of the window and lock-step executors; no
//!   worker waits for another.
//! * `gsu-shm`: the same on the shared control segment (`chronon::shm::Control`), the registers
//!   of the executors across processes, mapped by the threads of one process;
//! * `gsu-procs`: the same segment mapped by N worker processes of one thread each (started by
//!   `chronon::shm::Launcher`, as `--procs` runs are); MOM is not read there (the transport's
//!   rings hold it; here there are none), so a snapshot reads N fewer words.
//! * `message`: the message-based LBTS of [`super::msg_lbts`] (a reduction of (MOE, sent,
//!   received) up a binary tree of channels and the outcome back down), every worker taking
//!   part in every computation, as a distributed simulator computes it.
//! * `window`: the window executor's round (`round_us` of its report: barrier, LBTS snapshot
//!   and the round's events) on a small PHOLD, for scale.
//! * `mpi`: the LBTS reduction of the MPI transport's barrier (`chronon::mpi::lbts_gather_secs`:
//!   one non-blocking all-gather of every rank's barrier record, then the minimum MOE and the
//!   sent = received check) over N ranks of one thread (`mpirun -n N chronon bench lbts-once
//!   --method mpi`), where this binary has `--features mpi` and `mpirun` is on PATH; the
//!   column says what it needs otherwise.
//!
//! Each measurement is a child: `chronon bench lbts-once` for the GSU, message and MPI
//! methods (the MPI one under `mpirun`), `chronon run` for the window executor.

use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use chronon::comm::Mailbox;
use chronon::gsu::{Gsu, Published, Snapshot};
use chronon::EventKey;
use serde_json::Value;

use super::msg_lbts::{self, Contribution};
use super::{md_table, mpi_missing, num, run_metrics, Metrics, Point, Rendered, Results, Settings};
use crate::report::plot::{figure, Panel, Series};
use crate::Failure;

const METHODS: [&str; 4] = ["gsu", "gsu-shm", "gsu-procs", "message"];

fn threads(s: &Settings) -> Vec<usize> {
    match &s.threads {
        Some(t) => t.clone(),
        None if s.quick => vec![1, 2, 4],
        None => vec![1, 2, 4, 8],
    }
}

/// LBTS computations per thread in one measurement.
fn rounds(s: &Settings, method: &str) -> &'static str {
    match (method, s.quick) {
        ("message", true) => "5000",
        ("message", false) => "50000",
        (_, true) => "200000",
        (_, false) => "2000000",
    }
}

/// LBTS computations in one MPI measurement over `ranks` ranks: fewer beyond the 2 cores,
/// where ranks that poll while they wait take milliseconds per computation.
fn mpi_rounds(s: &Settings, ranks: usize) -> &'static str {
    match (ranks <= 2, s.quick) {
        (true, true) => "2000",
        (true, false) => "20000",
        (false, true) => "200",
        (false, false) => "1000",
    }
}

pub(super) fn plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let end = if s.quick { "20" } else { "100" };
    let mut out = Vec::new();
    for t in threads(s) {
        let ts = t.to_string();
        for m in METHODS {
            out.push(Point::new(
                &[("threads", &ts), ("method", m)],
                &[
                    "bench",
                    "lbts-once",
                    "--method",
                    m,
                    "--threads",
                    &ts,
                    "--rounds",
                    rounds(s, m),
                ],
            ));
        }
        if mpi_missing().is_none() {
            out.push(
                Point::new(
                    &[("threads", &ts), ("method", "mpi")],
                    &[
                        "bench",
                        "lbts-once",
                        "--method",
                        "mpi",
                        "--threads",
                        &ts,
                        "--rounds",
                        mpi_rounds(s, t),
                    ],
                )
                .under_mpirun(t),
            );
        }
        out.push(Point::new(
            &[("threads", &ts), ("method", "window")],
            &[
                "run",
                "phold",
                "--lps",
                "256",
                "--end",
                end,
                "--sync",
                "window",
                "--threads",
                &ts,
                "--stall-secs",
                "0",
            ],
        ));
    }
    Ok(out)
}

/// `bench lbts-once` reports (`ns_per_lbts`) or `chronon run` reports (`round_us`).
pub(super) fn extract(v: &Value) -> Metrics {
    let f = |p: &str| v.pointer(p).and_then(Value::as_f64).unwrap_or(f64::NAN);
    if v.get("ns_per_lbts").is_some() {
        return vec![
            ("wall_s", f("/wall_s")),
            ("ns_per_lbts", f("/ns_per_lbts")),
            ("rounds", f("/rounds")),
        ];
    }
    let mut m = run_metrics(v);
    m.push(("round_us", f("/executor_stats/round_us")));
    m.push(("events_per_round", f("/executor_stats/events_per_round")));
    m
}

pub(super) fn render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let threads = r.values("threads");
    let header: Vec<String> = [
        "threads",
        "GSU ns",
        "GSU (shm segment) ns",
        "GSU (shm, processes) ns",
        "message tree ns",
        "message / GSU",
        "MPI all-gather ns",
        "window round µs",
        "events / round",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    // The GSU variants in ns; the message tree and the window round in µs (both a global
    // synchronization with every worker taking part); the ratio.
    let mut gsu: Vec<Series> = METHODS[..3]
        .iter()
        .map(|m| Series::new(*m, Vec::new()))
        .collect();
    let (mut msg_us, mut round, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    let mut mpi_us = Vec::new();
    let absent = mpi_missing().unwrap_or_else(|| "not measured in this sweep".into());
    for t in &threads {
        let x: f64 = t.parse().unwrap_or(f64::NAN);
        let ns = |m: &str| r.get(&[("threads", t), ("method", m)], "ns_per_lbts");
        let w = |k: &str| r.get(&[("threads", t), ("method", "window")], k);
        let (g, gs, gp, msg) = (ns("gsu"), ns("gsu-shm"), ns("gsu-procs"), ns("message"));
        rows.push(vec![
            t.clone(),
            num(g),
            num(gs),
            num(gp),
            num(msg),
            num(msg / g),
            if ns("mpi").is_nan() {
                absent.clone()
            } else {
                num(ns("mpi"))
            },
            num(w("round_us")),
            num(w("events_per_round")),
        ]);
        for (s, v) in gsu.iter_mut().zip([g, gs, gp]) {
            if v.is_finite() {
                s.points.push((x, v));
            }
        }
        msg_us.push((x, msg / 1000.0));
        if !ns("mpi").is_nan() {
            mpi_us.push((x, ns("mpi") / 1000.0));
        }
        // With one worker a window holds the whole run: not a synchronization round.
        if x > 1.0 {
            round.push((x, w("round_us")));
        }
        ratio.push((x, msg / g));
    }
    let mpi_note = if mpi_us.is_empty() {
        format!("not measured here: it {absent}.")
    } else {
        "beyond 2 ranks they oversubscribe the 2 cores as the threads do (MPICH's ranks poll \
         while they wait)."
            .to_string()
    };
    let table = format!(
        "Cost of one LBTS computation per worker thread (ns; fastest repetition). **GSU**: the \
         worker publishes its MOE and reads a consistent snapshot of every worker's MOE, MOM \
         and TMC registers (`chronon::gsu`, the software GSU; the window and lock-step \
         executors' LBTS read). **GSU (shm segment)**: the same protocol on the control \
         segment that processes share (`chronon::shm::Control`), here mapped by the threads of \
         one process. **GSU (shm, processes)**: the \
         same segment mapped by N worker processes of one thread each (MOM not read: no \
         rings). **Message tree**: every worker sends (MOE, messages sent, messages \
         received) up a binary tree of channels, the root takes the minimum and checks that \
         sent = received (no transient message), and the outcome comes back down: 2⌈log₂ N⌉ \
         message latencies, every worker taking part. **Window round**: the window \
         executor's `round_us` on PHOLD (256 LPs; barrier, GSU snapshot and the round's \
         events), for scale. Beyond 2 threads the threads outnumber this machine's 2 cores. \
         The seed's hardware GSU reads LBTS in a few cycles; no software unit can match that \
         — what is compared is the software GSU's shared registers against the message \
         exchange that it replaces. **MPI all-gather**: the MPI transport's LBTS reduction \
         (one `MPI_Iallgather` of every rank's barrier record, then the minimum MOE and the \
         sent = received check) over N ranks of one thread under `mpirun -n N`; {mpi_note}\n\n{}",
        md_table(&header, &rows)
    );
    let svg = figure(
        "Seed 000 §3.1: LBTS by the GSU vs by message exchange",
        &[
            Panel::Lines {
                title: "software GSU: publish + snapshot".into(),
                x: "threads".into(),
                y: "ns per LBTS".into(),
                series: gsu,
            },
            Panel::Lines {
                title: if mpi_note.starts_with("not") {
                    format!("message tree; window round (MPI: {absent})")
                } else {
                    "message tree; MPI all-gather; window executor round".into()
                },
                x: "threads".into(),
                y: "µs".into(),
                series: {
                    let mut v = vec![
                        Series::new("message tree, µs per LBTS", msg_us),
                        Series::new("window round_us (PHOLD)", round),
                    ];
                    if !mpi_us.is_empty() {
                        v.push(Series::new("MPI all-gather, µs per LBTS", mpi_us));
                    }
                    v
                },
            },
            Panel::Lines {
                title: "message tree / GSU".into(),
                x: "threads".into(),
                y: "ratio".into(),
                series: vec![Series::new("message / GSU", ratio)],
            },
        ],
    )?;
    Ok(Rendered { table, figure: svg })
}

/// Flags of `chronon bench lbts-once`.
#[derive(Debug, clap::Args)]
pub(crate) struct OnceArgs {
    /// gsu, gsu-shm, gsu-procs, message or mpi (under `mpirun -n THREADS`).
    #[arg(long)]
    method: String,
    /// Worker threads.
    #[arg(long)]
    threads: usize,
    /// LBTS computations per thread.
    #[arg(long)]
    rounds: u64,
    /// Where to write the JSON result.
    #[arg(long)]
    output: PathBuf,
}

/// Worker `w`'s MOE at computation `r`: rising with `r`, worker 0's the smallest.
fn moe(r: u64, w: usize, n: usize) -> f64 {
    (r * n as u64 + w as u64 + 1) as f64
}

fn key(time: f64, w: usize) -> Published {
    Published {
        moe: EventKey {
            time,
            seq: 0,
            src: w as u32,
        },
        bound: time,
        ..Published::IDLE
    }
}

/// One worker's loop: `rounds` LBTS computations; the seconds they took, or a wrong LBTS.
fn worker(
    method: &str,
    w: usize,
    n: usize,
    rounds: u64,
    regs: &Registers,
    node: Option<msg_lbts::Node>,
) -> Result<f64, String> {
    let mut snap = Snapshot::default();
    let t0 = Instant::now();
    for r in 0..rounds {
        let mine = moe(r, w, n);
        let lbts = match (method, regs, &node) {
            ("gsu", Registers::Threads(g, mb), _) => {
                g.publish(w, &key(mine, w));
                g.snapshot(|i| mb[i].min_time(), &mut snap);
                snap.lbts()
            }
            ("gsu-shm", Registers::Shm(c, mb), _) => {
                c.publish(w, &key(mine, w));
                c.snapshot(|i| mb[i].min_time(), &mut snap);
                snap.lbts()
            }
            ("gsu-procs", Registers::Shm(c, _), _) => {
                c.publish(w, &key(mine, w));
                c.snapshot(|_| f64::INFINITY, &mut snap);
                snap.lbts()
            }
            (_, _, Some(node)) => {
                let c = Contribution {
                    moe: mine,
                    sent: r,
                    received: r,
                };
                let o = node
                    .compute(c)
                    .ok_or("a worker of the tree stopped early")?;
                let want = moe(r, 0, n);
                if o.lbts() != Some(want) {
                    return Err(format!("message LBTS {:?}, expected {want}", o.lbts()));
                }
                want
            }
            _ => return Err(format!("unknown --method '{method}'")),
        };
        // Every worker publishes rising MOEs, so a true LBTS never exceeds this worker's own.
        if !(lbts <= mine) {
            return Err(format!("LBTS {lbts} above worker {w}'s MOE {mine}"));
        }
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// The shared registers the GSU methods read (MOM from one idle mailbox per worker).
enum Registers {
    Threads(Gsu, Vec<Mailbox<u64>>),
    Shm(chronon::shm::Control, Vec<Mailbox<u64>>),
    None,
}

/// `chronon bench lbts-once`: `threads` workers each compute the LBTS `rounds` times; writes
/// JSON (`ns_per_lbts`: mean over workers of their time per computation; `wall_s`; `rounds`).
pub(crate) fn once(a: OnceArgs) -> Result<u8, Failure> {
    if !METHODS.contains(&a.method.as_str()) && a.method != "mpi" {
        return Err(Failure::bad_input(format!(
            "unknown --method '{}': gsu, gsu-shm, gsu-procs, message or mpi",
            a.method
        )));
    }
    let max = chronon::shm::MAX_WORKERS;
    if a.threads == 0 || a.threads > max {
        return Err(Failure::bad_input(format!(
            "--threads must be between 1 and {max}"
        )));
    }
    if a.rounds == 0 {
        return Err(Failure::bad_input("--rounds must be at least 1"));
    }
    if let Some(me) = chronon::shm::Worker::from_env() {
        return procs_worker(me, &a);
    }
    if a.method == "mpi" {
        return mpi_once(&a);
    }
    let outputs = crate::output::Outputs::plan(&[("--output", a.output.clone())], &[])?;
    let n = a.threads;
    if a.method == "gsu-procs" {
        let secs = procs_parent(&a)?;
        return write(
            &outputs,
            &secs,
            a.rounds,
            secs.iter().copied().fold(0.0, f64::max),
        );
    }
    let mailboxes = || (0..n).map(|_| Mailbox::new()).collect::<Vec<_>>();
    let regs = Arc::new(match a.method.as_str() {
        "gsu" => Registers::Threads(Gsu::new(n), mailboxes()),
        "gsu-shm" => Registers::Shm(
            chronon::shm::Control::create(n)
                .map_err(|e| Failure::runtime(format!("cannot create a control segment: {e}")))?,
            mailboxes(),
        ),
        _ => Registers::None,
    });
    let mut nodes: Vec<Option<msg_lbts::Node>> = if a.method == "message" {
        msg_lbts::tree(n, msg_lbts::PATIENCE)
            .into_iter()
            .map(Some)
            .collect()
    } else {
        (0..n).map(|_| None).collect()
    };
    let start = Arc::new(Barrier::new(n));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|w| {
            let (regs, start, node) = (regs.clone(), start.clone(), nodes[w].take());
            let (method, rounds) = (a.method.clone(), a.rounds);
            std::thread::spawn(move || {
                start.wait();
                worker(&method, w, n, rounds, &regs, node)
            })
        })
        .collect();
    let mut secs = Vec::new();
    for h in handles {
        let r = h
            .join()
            .map_err(|_| Failure::runtime("an LBTS worker thread panicked"))?;
        secs.push(r.map_err(Failure::runtime)?);
    }
    write(&outputs, &secs, a.rounds, t0.elapsed().as_secs_f64())
}

/// `--method mpi`, on every rank of `mpirun -n THREADS`: the MPI transport's LBTS reduction
/// `rounds` times; rank 0 writes the result (its own time: the reduction keeps the ranks in
/// step).
#[cfg(feature = "mpi")]
fn mpi_once(a: &OnceArgs) -> Result<u8, Failure> {
    let mpi = chronon::mpi::Mpi::init().map_err(|e| Failure::runtime(e.to_string()))?;
    if mpi.size() != a.threads {
        return Err(Failure::bad_input(format!(
            "--method mpi --threads {} but mpirun started {} rank(s): run `mpirun -n {} chronon \
             bench lbts-once --method mpi ...`",
            a.threads,
            mpi.size(),
            a.threads
        )));
    }
    let t0 = Instant::now();
    let secs = chronon::mpi::lbts_gather_secs(&mpi, a.rounds).map_err(Failure::runtime)?;
    if mpi.rank() != 0 {
        return Ok(0);
    }
    let outputs = crate::output::Outputs::plan(&[("--output", a.output.clone())], &[])?;
    write(&outputs, &[secs], a.rounds, t0.elapsed().as_secs_f64())
}

/// `--method mpi` in a build without the feature.
#[cfg(not(feature = "mpi"))]
fn mpi_once(_: &OnceArgs) -> Result<u8, Failure> {
    Err(Failure::bad_input(chronon::mpi::NOT_COMPILED))
}

/// Writes the JSON result: the mean over workers of their seconds per computation, in ns.
fn write(
    outputs: &crate::output::Outputs,
    secs: &[f64],
    rounds: u64,
    wall: f64,
) -> Result<u8, Failure> {
    let ns = secs.iter().sum::<f64>() / secs.len() as f64 / rounds as f64 * 1e9;
    let v = serde_json::json!({ "ns_per_lbts": ns, "wall_s": wall, "rounds": rounds });
    if let Some(p) = outputs.path("--output") {
        crate::output::write_or_rescue("--output", p, v.to_string().as_bytes())?;
    }
    Ok(0)
}

/// Worker `index`'s result file beside the parent's `--output`.
fn worker_file(output: &std::path::Path, index: usize) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(format!(".w{index}"));
    PathBuf::from(name)
}

/// `gsu-procs`: a control segment for `threads` workers, one process each (this command
/// again, as a `chronon::shm::Launcher` worker); their seconds, read back from their files.
fn procs_parent(a: &OnceArgs) -> Result<Vec<f64>, Failure> {
    let n = a.threads;
    let control = chronon::shm::Control::create(n)
        .map_err(|e| Failure::runtime(format!("cannot create a control segment: {e}")))?;
    let files: Vec<PathBuf> = (0..n).map(|i| worker_file(&a.output, i)).collect();
    let args = [
        "bench".to_string(),
        "lbts-once".into(),
        "--method".into(),
        "gsu-procs".into(),
        "--threads".into(),
        n.to_string(),
        "--rounds".into(),
        a.rounds.to_string(),
        "--output".into(),
    ];
    let launched = chronon::shm::Launcher::new(n)
        .args(args)
        .arg(a.output.clone())
        .segment(control.segment())
        .run();
    let secs: Result<Vec<f64>, Failure> = match launched {
        Ok(()) => files
            .iter()
            .map(|f| {
                std::fs::read_to_string(f)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                    .ok_or_else(|| {
                        Failure::runtime(format!("no result from worker file {}", f.display()))
                    })
            })
            .collect(),
        Err(e) => Err(Failure::runtime(e.to_string())),
    };
    for f in &files {
        let _ = std::fs::remove_file(f);
    }
    secs
}

/// A `gsu-procs` worker process: maps the control segment, waits for every worker, computes
/// the LBTS `rounds` times and writes its seconds to its file. Exit code 1 on any failure (the
/// parent's launcher names the worker).
fn procs_worker(me: std::io::Result<chronon::shm::Worker>, a: &OnceArgs) -> Result<u8, Failure> {
    let fail = |e: String| Failure::runtime(format!("gsu-procs worker: {e}"));
    let mut me = me.map_err(|e| fail(e.to_string()))?;
    let seg = me.segment(0).map_err(|e| fail(e.to_string()))?;
    let control = chronon::shm::Control::attach(seg).map_err(|e| fail(e.to_string()))?;
    let timeout = std::time::Duration::from_secs(60);
    control
        .barrier(me.procs as u32, timeout)
        .map_err(|e| fail(format!("{e:?}")))?;
    let regs = Registers::Shm(control, Vec::new());
    let secs = worker("gsu-procs", me.index, me.procs, a.rounds, &regs, None).map_err(fail)?;
    std::fs::write(worker_file(&a.output, me.index), secs.to_string())
        .map_err(|e| fail(e.to_string()))?;
    Ok(0)
}
