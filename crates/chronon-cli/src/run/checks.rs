//! The run options' checks: `--sync`/`--threads` and the executors' flags mapped onto an
//! executor, and every flag combination refused in one line before anything starts (Time Warp
//! settings, mapping, conservative settings, payloads and heaps, `--runtime bsp`, `--procs`,
//! `--barrier`/`--fan-in` across processes or ranks).

use chronon::partition::Mapping;
use chronon::{ConservativeConfig, Executor, StateSaving, Ticks, TimeWarpConfig};

use crate::args::CommonArgs;
use crate::choices::{self, Barrier, Payload, Sync};
use crate::lockstep_runtime::runtime;
use crate::Failure;

/// Maps `--sync` and `--threads` onto an executor.
pub(crate) fn executor(sync: Option<&str>, threads: Option<usize>) -> Result<Executor, Failure> {
    use clap::ValueEnum;
    let sync = sync
        .map(|s| {
            Sync::from_str(s, false).map_err(|_| {
                let allowed: Vec<&str> = Sync::value_variants().iter().map(|v| v.name()).collect();
                Failure::bad_input(format!(
                    "unknown --sync '{s}' (allowed: {})",
                    allowed.join(", ")
                ))
            })
        })
        .transpose()?;
    executor_with(sync, threads, &CommonArgs::default())
}

/// Maps `--sync`, `--threads` and the conservative executors' flags (`--barrier`, `--fan-in`,
/// `--mapping`) onto an executor.
pub(crate) fn executor_with(
    sync: Option<Sync>,
    threads: Option<usize>,
    common: &CommonArgs,
) -> Result<Executor, Failure> {
    let threads = threads.unwrap_or(1);
    let sync = sync.unwrap_or(Sync::Seq);
    let sync_name = sync.name();
    if sync != Sync::Window {
        let given = [
            ("--dedicated", common.dedicated.is_some()),
            ("--shared-sets", common.shared_sets.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            return Err(Failure::bad_input(format!(
                "{flag} applies to --sync window only; got --sync {sync_name}"
            )));
        }
    }
    if threads == 0 {
        return Err(Failure::bad_input("--threads is 0; it must be at least 1"));
    }
    runtime(sync, common)?;
    if matches!(sync, Sync::Seq | Sync::Timewarp | Sync::NullMessage) {
        let given = [
            ("--barrier", common.barrier.is_some()),
            ("--fan-in", common.fan_in.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            // Null messages synchronize through channel clocks, never at a barrier.
            let why = if sync == Sync::NullMessage {
                " (null messages use no barrier)"
            } else {
                ""
            };
            return Err(Failure::bad_input(format!(
                "{flag} applies to --sync window or lockstep only{why}; got --sync {sync}"
            )));
        }
    }
    if sync != Sync::NullMessage && common.max_null_messages.is_some() {
        return Err(Failure::bad_input(format!(
            "--max-null-messages applies to --sync null-message only; got --sync {sync}"
        )));
    }
    if sync == Sync::Seq && common.mapping.is_some() {
        return Err(Failure::bad_input(
            "--mapping applies to --sync window, null-message, lockstep or timewarp only; got --sync seq",
        ));
    }
    if let (Some(_), Some(b)) = (common.fan_in, common.barrier) {
        if b != Barrier::Tree {
            return Err(Failure::bad_input(format!(
                "--fan-in applies to --barrier tree only; got --barrier {}",
                b.name()
            )));
        }
    }
    if common.shared_sets.is_some() && common.dedicated.is_none_or(|d| d >= 1.0) {
        return Err(Failure::bad_input(
            "--shared-sets applies only with --dedicated below 1 (some LPs shared); give --dedicated F with F < 1",
        ));
    }
    match sync {
        Sync::Seq => {
            if threads != 1 {
                return Err(Failure::bad_input(format!(
                    "--sync seq runs on exactly 1 thread; got --threads {threads} (for {threads} \
                     threads give a parallel --sync: window, null-message, lockstep or timewarp)"
                )));
            }
            Ok(Executor::Sequential)
        }
        Sync::Window => Ok(Executor::Window(conservative(threads, common)?)),
        Sync::NullMessage => Ok(Executor::NullMessage(conservative(threads, common)?)),
        Sync::Lockstep => Ok(Executor::Lockstep(conservative(threads, common)?)),
        Sync::Timewarp => Ok(Executor::TimeWarp(TimeWarpConfig::new(threads))),
    }
}

/// Parses a byte count with an optional K, M or G suffix (powers of 1024).
fn parse_bytes(s: &str) -> Result<u64, Failure> {
    let t = s.trim();
    let (digits, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = digits.parse().map_err(|_| {
        Failure::bad_input(format!(
            "--max-memory is '{s}'; it must be a byte count like 1000000, 512M or 2G"
        ))
    })?;
    match n.checked_mul(mult) {
        Some(b) => Ok(b),
        None => Err(Failure::bad_input(format!(
            "--max-memory '{s}' is too large"
        ))),
    }
}

/// `executor` with the Time Warp settings from the common flags; an error when they are
/// given to another executor or out of range.
pub(super) fn time_warp_options(
    common: &CommonArgs,
    executor: Executor,
) -> Result<Executor, Failure> {
    let given = [
        ("--state-saving", common.state_saving.is_some()),
        ("--save-every", common.save_every.is_some()),
        ("--max-memory", common.max_memory.is_some()),
        ("--window", common.window.is_some()),
        ("--check-reverse", common.check_reverse == Some(true)),
        ("--gvt-csv", common.gvt_csv.is_some()),
        ("--safe-commit", common.safe_commit.is_some()),
        ("--gvt-every", common.gvt_every.is_some()),
        ("--preempt", common.preempt == Some(true)),
        ("--max-suspended", common.max_suspended.is_some()),
        ("--tick-us", common.tick_us.is_some()),
        ("--alpha", common.alpha.is_some()),
        ("--tick-interrupts", common.tick_interrupts.is_some()),
    ];
    let Executor::TimeWarp(tw) = executor else {
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            return Err(Failure::bad_input(format!(
                "{flag} applies to --sync timewarp only; got --sync {}",
                executor.name()
            )));
        }
        return Ok(executor);
    };
    let state_saving: StateSaving = common.state_saving.map_or(StateSaving::Auto, Into::into);
    // Values out of range (a state-saving period of 0, a negative window, ...) are the
    // library's to refuse (`TimeWarpConfig`); the CLI renders its typed error.
    let max_memory = common.max_memory.as_deref().map(parse_bytes).transpose()?;
    let preempt = common.preempt == Some(true);
    if !preempt {
        for (flag, g) in [
            ("--max-suspended", common.max_suspended.is_some()),
            ("--tick-us", common.tick_us.is_some()),
            ("--alpha", common.alpha.is_some()),
        ] {
            if g {
                return Err(Failure::bad_input(format!(
                    "{flag} applies to --preempt only"
                )));
            }
        }
    }
    let alpha = common.alpha.unwrap_or(0.5);
    for (flag, given) in [
        ("--alpha", common.alpha.is_some()),
        ("--tick-interrupts", common.tick_interrupts.is_some()),
    ] {
        if given && common.tick_us.is_none() {
            return Err(Failure::bad_input(format!(
                "{flag} applies to --tick-us only"
            )));
        }
    }
    let interrupts = common.tick_interrupts.unwrap_or(true);
    let gvt_every = common.gvt_every.unwrap_or(tw.gvt_every);
    Ok(Executor::TimeWarp(
        tw.preempt(preempt)
            .safe_commit(common.safe_commit.unwrap_or(true))
            .gvt_every(gvt_every)
            .max_suspended(common.max_suspended.unwrap_or(64))
            .ticks(
                common
                    .tick_us
                    .map(|t| Ticks::new(t, alpha).interrupts(interrupts)),
            )
            .state_saving(state_saving)
            .save_every(common.save_every)
            .max_memory(max_memory)
            .window(common.window)
            .mapping(mapping(common)?),
    ))
}

/// The LP-to-worker mapping from `--mapping` (a profile is read here).
pub(super) fn mapping(common: &CommonArgs) -> Result<Mapping, Failure> {
    use crate::choices::MappingArg;
    Ok(match &common.mapping {
        None | Some(MappingArg::Block) => Mapping::Block,
        Some(MappingArg::RoundRobin) => Mapping::RoundRobin,
        Some(MappingArg::Profile(p)) => Mapping::Costs(super::profile::read(p)?.ns),
    })
}

/// The conservative executors' settings from `--barrier`, `--fan-in` and `--mapping`.
pub(super) fn conservative(
    threads: usize,
    common: &CommonArgs,
) -> Result<ConservativeConfig, Failure> {
    let fan_in = common.fan_in.unwrap_or(4);
    if fan_in == 0 {
        return Err(Failure::bad_input("--fan-in is 0; it must be at least 1"));
    }
    let barrier = common.barrier.unwrap_or(Barrier::Tree).kind(fan_in);
    let mapping = mapping(common)?;
    let dedicated = common.dedicated.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&dedicated) {
        return Err(Failure::bad_input(format!(
            "--dedicated is {dedicated}; it must be in [0, 1]"
        )));
    }
    let shared_sets = match common.shared_sets {
        Some(0) if dedicated < 1.0 => {
            return Err(Failure::bad_input(format!(
                "--shared-sets is 0; it must be at least 1 with --dedicated {dedicated}"
            )))
        }
        Some(n) => n,
        None if dedicated < 1.0 => 1,
        None => 0,
    };
    let mut cc = ConservativeConfig::new(threads)
        .barrier(barrier)
        .mapping(mapping)
        .dedicated(dedicated)
        .shared_sets(shared_sets)
        .runtime(runtime(Sync::Lockstep, common)?);
    if let Some(cap) = common.max_null_messages {
        if !(cap >= 1.0) || cap > u64::MAX as f64 {
            return Err(Failure::bad_input(format!(
                "--max-null-messages is {cap}; it must be a count of at least 1, like 1e12"
            )));
        }
        cc = cc.max_null_messages(cap as u64);
    }
    Ok(cc)
}

/// `--payload`, `--heap-classes`, `--heap-segments`: whether payloads are copied, and the
/// shared heaps' configuration (`Simulation::heap`).
pub(super) fn payload_options(
    common: &CommonArgs,
    procs: Option<usize>,
) -> Result<(bool, chronon::shm::HeapConfig), Failure> {
    let copy = common.payload == Some(Payload::Copy);
    if copy && procs.is_none() {
        return Err(Failure::bad_input(
            "--payload copy compares transports between processes: it needs --procs",
        ));
    }
    let mut heap = match common.heap_classes.as_deref() {
        None => chronon::shm::HeapConfig::default(),
        Some(t) => chronon::shm::HeapConfig::parse(t).map_err(Failure::bad_input)?,
    };
    if let Some(n) = common.heap_segments {
        // 1..=16: checked by the library (`Simulation::heap`).
        heap = heap.max_segments(n);
    }
    Ok((copy, heap))
}

/// Whether the run goes over MPI ranks: `--ranks`, or started by `mpirun` with several.
pub(super) fn over_ranks(common: &CommonArgs) -> bool {
    common.ranks.is_some() || chronon::mpi::launched().is_some()
}

/// `--runtime bsp --threads N` runs N single-threaded worker processes (seed 002's BSP
/// version: one process per processor): the executor gets 1 thread and the run N processes.
/// The library has no BSP runtime of its own: it is lock-step on threads across processes.
pub(super) fn bsp_processes(
    executor: Executor,
    common: &CommonArgs,
) -> Result<(Executor, Option<usize>), Failure> {
    match executor {
        Executor::Lockstep(cc) if common.runtime == Some(choices::Runtime::Bsp) => {
            if let Some(p) = common.procs {
                return Err(Failure::bad_input(format!(
                    "--runtime bsp starts one single-threaded process per --threads ({}); leave out --procs {p}",
                    cc.threads
                )));
            }
            if over_ranks(common) {
                return Err(Failure::bad_input(
                    "--runtime bsp starts worker processes on this machine and does not run over MPI ranks; leave out --runtime bsp (lock-step over ranks: --sync lockstep --threads T per rank)",
                ));
            }
            let n = cc.threads;
            let mut one = cc;
            one.threads = 1;
            Ok((Executor::Lockstep(one), Some(n)))
        }
        other => Ok((other, common.procs)),
    }
}

/// `--barrier` and `--fan-in` choose the barrier of the threads of one process: worker
/// processes (`--procs`, `--runtime bsp`) and MPI ranks meet at their transport's own, so the
/// flags are refused there rather than ignored.
pub(super) fn barrier_across(common: &CommonArgs) -> Result<(), Failure> {
    let given = [
        ("--barrier", common.barrier.is_some()),
        ("--fan-in", common.fan_in.is_some()),
    ];
    let Some((flag, _)) = given.iter().find(|(_, g)| *g) else {
        return Ok(());
    };
    let who = if over_ranks(common) {
        "MPI ranks meet at their own barrier"
    } else if common.runtime == Some(choices::Runtime::Bsp) {
        "the worker processes of --runtime bsp meet at their own shared-memory barrier"
    } else if common.procs.is_some() {
        "worker processes (--procs) meet at their own shared-memory barrier"
    } else {
        return Ok(());
    };
    Err(Failure::bad_input(format!(
        "{flag} applies to the threads of one process; {who}"
    )))
}
