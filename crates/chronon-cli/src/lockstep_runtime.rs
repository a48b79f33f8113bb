//! `--runtime` and `--threshold`: the lock-step runtime system (seed 002).

use chronon::Runtime;

use crate::args::CommonArgs;
use crate::choices::{self, Sync};
use crate::Failure;

/// The lock-step runtime from `--runtime` and `--threshold` (checked against `--sync`).
pub(crate) fn runtime(sync: Sync, common: &CommonArgs) -> Result<Runtime, Failure> {
    let chosen = common.runtime.unwrap_or(choices::Runtime::Threads);
    let name = chosen.name();
    let rt = match chosen {
        choices::Runtime::Threads => Runtime::Threads,
        choices::Runtime::WorkStealing => Runtime::WorkStealing {
            threshold: common.threshold.unwrap_or(50),
        },
        choices::Runtime::ActiveThreads => Runtime::ActiveThreads {
            threshold: common.threshold.unwrap_or(50),
        },
        // BSP is lock-step on threads, over single-threaded worker processes
        // (`run::checks::bsp_processes`).
        choices::Runtime::Bsp => Runtime::Threads,
    };
    if name != "threads" && sync != Sync::Lockstep {
        return Err(Failure::bad_input(format!(
            "--runtime {name} applies to --sync lockstep only; got --sync {sync}"
        )));
    }
    let tasks = rt.threshold().is_some();
    if tasks {
        let given = [
            ("--mapping", common.mapping.is_some()),
            ("--barrier", common.barrier.is_some()),
            ("--fan-in", common.fan_in.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            return Err(Failure::bad_input(format!(
                "{flag} applies to --runtime threads only (the {name} runtime places its LPs \
                 itself and has no --barrier)"
            )));
        }
    }
    match common.threshold {
        Some(_) if !tasks => Err(Failure::bad_input(
            "--threshold applies to --runtime work-stealing and active-threads only",
        )),
        Some(0) => Err(Failure::bad_input(
            "--threshold is 0; it must be at least 1 LP per task",
        )),
        _ => Ok(rt),
    }
}
