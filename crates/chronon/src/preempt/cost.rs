//! What a tick costs the thread it interrupts (seed 003 Fig. 5, side by side with preemption):
//! a tick that only raises the flag (the thread in platform mode), a tick that interrupts
//! application mode and goes through the trampoline's check without switching, and a tick
//! whose check switches the context off the CPU and back (two context switches).

use std::cell::Cell;
use std::time::Instant;

use corosensei::stack::Stack;

use super::interrupt::{self, Arm};
use super::ticks::{work_rate, Flag, Timer};
use super::{BhMin, Context, StackPool, Step, Switch};
use crate::types::Time;

/// What [`preemption_cost`] measured: the thread's work lost per delivered tick, in
/// microseconds, in each of three situations, and the ticks each saw.
#[derive(Clone, Copy, Debug)]
pub struct PreemptionCost {
    /// A tick in platform mode: the handler raises the flag and returns.
    pub flag_us: f64,
    /// A tick in application mode whose check finds nothing earlier: the handler, the
    /// trampoline (every register saved and restored) and the check.
    pub interrupt_us: f64,
    /// A tick in application mode whose check switches the context off the CPU; the platform
    /// resumes it at once.
    pub switch_us: f64,
    /// Ticks delivered in each situation (flag, interrupt, switch).
    pub delivered: [u64; 3],
    /// Switches made in the third situation.
    pub switches: u64,
}

struct Reg(Cell<Time>);

impl BhMin for Reg {
    fn bh_min(&self) -> Time {
        self.0.get()
    }
}

/// Microseconds lost per tick: the work rate fell from `base` to `with` over `secs` seconds in
/// which `ticks` ticks came.
fn per_tick(base: f64, with: f64, secs: f64, ticks: u64) -> f64 {
    if ticks == 0 {
        return f64::NAN;
    }
    (1.0 - with / base) * secs * 1e6 / ticks as f64
}

/// One situation: the busy loop for `millis` ms under ticks every `period_us`, in a context
/// armed for interrupts whose register reads `bh_min` (`None`: outside any context).
fn ticked(
    period_us: f64,
    millis: u64,
    bh_min: Option<Time>,
) -> std::io::Result<(f64, f64, u64, u64)> {
    let flag = Flag::default();
    let mut timer = Timer::new(&flag, period_us)?;
    let start = Instant::now();
    timer.set(true);
    let (rate, switches) = match bh_min {
        None => (work_rate(millis), 0),
        Some(t) => {
            let reg = Reg(Cell::new(t));
            let mut pool = StackPool::default();
            let stack = pool.get()?;
            let limit = stack.limit().get();
            let mut ctx = Context::new(stack, |y| {
                let sw = Switch::new(&reg, y, None, 1.0);
                let _armed = Arm::new(&sw, limit);
                work_rate(millis)
            });
            let mut switches = 0;
            loop {
                match ctx.resume() {
                    Step::Suspended { .. } => switches += 1,
                    Step::Done(r) => break (r, switches),
                }
            }
        }
    };
    timer.set(false);
    Ok((
        rate,
        start.elapsed().as_secs_f64(),
        flag.delivered(),
        switches,
    ))
}

/// The work a thread loses per tick every `period_us` microseconds, measured on the calling
/// thread over busy loops of `millis` ms: ticks in platform mode, ticks that interrupt and do
/// not switch, and ticks that switch. Needs preemption by interrupt (x86-64 Linux, a program
/// that installs [`PlatformAlloc`](crate::PlatformAlloc)).
pub fn preemption_cost(period_us: f64, millis: u64) -> std::io::Result<PreemptionCost> {
    if !interrupt::available() {
        return Err(std::io::Error::other(
            "ticks cannot preempt by interrupt here (x86-64 Linux and chronon::PlatformAlloc needed)",
        ));
    }
    let base = work_rate(millis);
    let (flag_rate, flag_s, flag_n, _) = ticked(period_us, millis, None)?;
    let (int_rate, int_s, int_n, _) = ticked(period_us, millis, Some(Time::INFINITY))?;
    let (sw_rate, sw_s, sw_n, switches) = ticked(period_us, millis, Some(f64::NEG_INFINITY))?;
    let base = (base + work_rate(millis)) / 2.0;
    Ok(PreemptionCost {
        flag_us: per_tick(base, flag_rate, flag_s, flag_n),
        interrupt_us: per_tick(base, int_rate, int_s, int_n),
        switch_us: per_tick(base, sw_rate, sw_s, sw_n),
        delivered: [flag_n, int_n, sw_n],
        switches,
    })
}
