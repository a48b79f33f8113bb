//! `chronon calibrate ticks`: the overhead of fine-grain ticks against their period on this
//! machine (seed 003 Fig. 5 layout), and the smallest period under a threshold — the value to
//! give `--tick-us`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::Failure;

#[derive(Debug, Args)]
pub(crate) struct CalibrateCmd {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Tick overhead vs period: a busy loop with and without a per-thread tick timer.
    Ticks(TicksArgs),
    /// What a tick costs the thread it interrupts: in platform mode (flag only), interrupting
    /// application mode without a switch, and with a switch off the CPU and back.
    Preemption(PreemptionArgs),
}

#[derive(Debug, Args)]
struct PreemptionArgs {
    /// Tick periods to measure, in microseconds, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "50,100,200,500")]
    periods: Vec<f64>,
    /// Milliseconds of work per measurement (four per period).
    #[arg(long, default_value_t = 300)]
    ms: u64,
}

#[derive(Debug, Args)]
struct TicksArgs {
    /// Tick periods to measure, in microseconds, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10,20,50,100,200,500,1000"
    )]
    periods: Vec<f64>,
    /// Milliseconds of work per measurement.
    #[arg(long, default_value_t = 300)]
    ms: u64,
    /// Largest acceptable overhead (fraction of the work lost).
    #[arg(long, default_value_t = 0.04)]
    threshold: f64,
    /// Write the table as CSV here (period_us,overhead,ticks).
    #[arg(long)]
    output: Option<PathBuf>,
}

pub(crate) fn run(cmd: CalibrateCmd) -> Result<u8, Failure> {
    match cmd.what {
        What::Ticks(a) => ticks(a),
        What::Preemption(a) => preemption(a),
    }
}

/// `--periods` and `--ms`, checked.
fn check_periods(periods: &[f64], ms: u64) -> Result<(), Failure> {
    if periods.is_empty()
        || periods
            .iter()
            .any(|p| !(*p >= chronon::MIN_TICK_US && p.is_finite()))
    {
        return Err(Failure::bad_input(format!(
            "--periods must be numbers of at least {} µs",
            chronon::MIN_TICK_US
        )));
    }
    if ms == 0 || ms > 60_000 {
        return Err(Failure::bad_input("--ms must be between 1 and 60000"));
    }
    Ok(())
}

fn preemption(a: PreemptionArgs) -> Result<u8, Failure> {
    check_periods(&a.periods, a.ms)?;
    println!(
        "{:>10} {:>12} {:>14} {:>12} {:>9}",
        "period µs", "flag µs/tick", "interrupt µs/t", "switch µs/t", "switches"
    );
    for &p in &a.periods {
        let c = chronon::preemption_cost(p, a.ms).map_err(|e| Failure::bad_input(e.to_string()))?;
        println!(
            "{p:>10} {:>12.2} {:>14.2} {:>12.2} {:>9}",
            c.flag_us, c.interrupt_us, c.switch_us, c.switches
        );
    }
    Ok(0)
}

fn ticks(a: TicksArgs) -> Result<u8, Failure> {
    check_periods(&a.periods, a.ms)?;
    if !(a.threshold > 0.0 && a.threshold < 1.0) {
        return Err(Failure::bad_input("--threshold must be between 0 and 1"));
    }
    let mut csv = String::from("period_us,overhead,ticks\n");
    println!("{:>10} {:>9} {:>8}", "period µs", "overhead", "ticks");
    let mut best: Option<f64> = None;
    let mut periods = a.periods.clone();
    periods.sort_by(f64::total_cmp);
    for &p in &periods {
        let m = chronon::tick_overhead(p, a.ms)
            .map_err(|e| Failure::bad_input(format!("cannot create a tick timer: {e}")))?;
        let (o, n) = (m.overhead, m.delivered);
        println!("{p:>10} {:>8.1}% {n:>8}", o * 100.0);
        csv.push_str(&format!("{p},{o},{n}\n"));
        if o <= a.threshold && best.is_none() {
            best = Some(p);
        }
    }
    match best {
        Some(p) => println!(
            "smallest period with overhead <= {:.1}%: {p} µs (use --tick-us {p})",
            a.threshold * 100.0
        ),
        None => println!(
            "no period measured keeps the overhead under {:.1}%",
            a.threshold * 100.0
        ),
    }
    if let Some(path) = a.output {
        std::fs::write(&path, csv)
            .map_err(|e| Failure::bad_input(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(0)
}
