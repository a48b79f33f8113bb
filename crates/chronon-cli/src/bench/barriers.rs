//! `chronon bench barriers`: the average cost of one barrier wait, in the layout of seed 001
//! Tables 1 (tree barrier, per fan-in) and 2 (the four barriers).

use std::sync::Arc;
use std::time::Instant;

use chronon::barrier::{Barrier, BarrierKind};

use super::tsc::tsc;
use crate::Failure;

/// `chronon bench barriers`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct BarrierBench {
    /// Thread counts (rows).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4")]
    pub threads: Vec<usize>,
    /// Fan-ins of the tree barrier (Table 1's columns).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5")]
    pub m: Vec<usize>,
    /// The tree's fan-in in Table 2.
    #[arg(long, default_value_t = 4)]
    pub fan_in: usize,
    /// Waits per thread per measurement.
    #[arg(long, default_value_t = 100_000)]
    pub waits: u64,
}

/// Average (ns, TSC ticks) per wait over `waits` waits of `threads` threads.
fn measure(kind: BarrierKind, threads: usize, waits: u64) -> (f64, Option<f64>) {
    let b: Arc<dyn Barrier> = Arc::from(kind.build(threads));
    let handles: Vec<_> = (0..threads)
        .map(|me| {
            let b = b.clone();
            std::thread::spawn(move || {
                b.wait(me); // start together
                let (t0, c0) = (Instant::now(), tsc());
                for _ in 0..waits {
                    b.wait(me);
                }
                let ns = t0.elapsed().as_nanos() as f64 / waits as f64;
                let cycles = tsc()
                    .zip(c0)
                    .map(|(c1, c0)| (c1 - c0) as f64 / waits as f64);
                (ns, cycles)
            })
        })
        .collect();
    let all: Vec<(f64, Option<f64>)> = handles
        .into_iter()
        .map(|h| h.join().expect("a benchmark thread panicked"))
        .collect();
    let n = all.len() as f64;
    let ns = all.iter().map(|x| x.0).sum::<f64>() / n;
    let cycles = all
        .iter()
        .map(|x| x.1)
        .collect::<Option<Vec<f64>>>()
        .map(|v| v.iter().sum::<f64>() / n);
    (ns, cycles)
}

fn cell((ns, cycles): (f64, Option<f64>)) -> String {
    match cycles {
        Some(c) => format!("{ns:.0} ({c:.0})"),
        None => format!("{ns:.0}"),
    }
}

fn label(t: usize) -> String {
    format!("{t} thread{}", if t == 1 { "" } else { "s" })
}

pub(crate) fn run(b: BarrierBench) -> Result<u8, Failure> {
    if b.threads.contains(&0) {
        return Err(Failure::bad_input(
            "--threads has a 0; every count must be at least 1",
        ));
    }
    if b.m.contains(&0) {
        return Err(Failure::bad_input(
            "--m has a 0; every fan-in must be at least 1",
        ));
    }
    if b.waits == 0 {
        return Err(Failure::bad_input("--waits is 0; it must be at least 1"));
    }
    if b.fan_in == 0 {
        return Err(Failure::bad_input(
            "--fan-in is 0; the tree barrier's fan-in must be at least 1",
        ));
    }
    let unit = if tsc().is_some() {
        "ns (TSC ticks from rdtsc: the constant-rate time-stamp counter, not core clock cycles)"
    } else {
        "ns (no cycle counter on this architecture)"
    };
    println!(
        "Average barrier wait() cost over {} waits per thread, in {unit}; {} cores available",
        b.waits,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    println!("Table 1: tree barrier, by fan-in m");
    print!("{:<12}", "m value");
    for m in &b.m {
        print!("{m:>16}");
    }
    println!();
    for &t in &b.threads {
        print!("{:<12}", label(t));
        for &m in &b.m {
            print!(
                "{:>16}",
                cell(measure(BarrierKind::Tree { fan_in: m }, t, b.waits))
            );
        }
        println!();
    }
    println!();
    println!("Table 2: the four barriers (tree with m = {})", b.fan_in);
    let kinds = [
        ("std", BarrierKind::Std),
        ("semaphore", BarrierKind::Semaphore),
        ("spin", BarrierKind::Spin),
        ("tree", BarrierKind::Tree { fan_in: b.fan_in }),
    ];
    print!("{:<12}", "");
    for (name, _) in &kinds {
        print!("{name:>16}");
    }
    println!();
    for &t in &b.threads {
        print!("{:<12}", label(t));
        for (_, k) in &kinds {
            print!("{:>16}", cell(measure(*k, t, b.waits)));
        }
        println!();
    }
    Ok(0)
}

/// Flags of `chronon bench barrier-once`.
#[derive(Debug, clap::Args)]
pub(crate) struct OnceArgs {
    /// std, semaphore, spin or tree.
    #[arg(long)]
    kind: String,
    /// Fan-in of the tree barrier.
    #[arg(long, default_value_t = 4)]
    fan_in: usize,
    #[arg(long)]
    threads: usize,
    #[arg(long)]
    waits: u64,
    /// Where to write the JSON result.
    #[arg(long)]
    output: std::path::PathBuf,
}

/// `chronon bench barrier-once`: one barrier measurement, written as JSON (`ns` and `ticks` per
/// wait, `wall_s` of the whole measurement).
pub(crate) fn once(a: OnceArgs) -> Result<u8, Failure> {
    if a.threads == 0 || a.waits == 0 || a.fan_in == 0 {
        return Err(Failure::bad_input(
            "--threads, --waits and --fan-in must be at least 1",
        ));
    }
    let kind = BarrierKind::parse(&a.kind, a.fan_in).map_err(Failure::bad_input)?;
    let outputs = crate::output::Outputs::plan(&[("--output", a.output.clone())], &[])?;
    let t0 = Instant::now();
    let (ns, ticks) = measure(kind, a.threads, a.waits);
    let v = serde_json::json!({
        "ns": ns,
        "ticks": ticks,
        "wall_s": t0.elapsed().as_secs_f64(),
    });
    if let Some(p) = outputs.path("--output") {
        crate::output::write_or_rescue("--output", p, v.to_string().as_bytes())?;
    }
    Ok(0)
}
