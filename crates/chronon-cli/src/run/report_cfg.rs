//! The report's `config`: the options that shaped a run, under the keys `--config` reads.

use chronon::{Executor, QueueKind};

use crate::args::CommonArgs;
use crate::choices;

/// The report's `config`: every option that shaped the run, under the keys `--config` takes,
/// so that the report's config, written as TOML, reruns the same simulation. Executor options
/// are the ones in force (defaults included) where the run uses them. `procs`: the run's worker
/// processes (`--procs`, or `--runtime bsp`'s).
pub(super) fn report_config(
    common: &CommonArgs,
    executor: &Executor,
    procs: Option<usize>,
    end: f64,
    seed: u64,
    queue: QueueKind,
    model_config: serde_json::Value,
) -> serde_json::Value {
    use serde_json::{json, Value};
    let mut c = serde_json::Map::new();
    c.insert("end".into(), json!(end));
    c.insert("seed".into(), json!(seed));
    c.insert("queue".into(), json!(queue.name()));
    c.insert("sync".into(), json!(executor.name()));
    c.insert("threads".into(), json!(executor.threads()));
    if let Some(p) = common.procs {
        c.insert("procs".into(), json!(p));
    }
    c.insert(
        "pin".into(),
        json!(common.pin.map_or("auto", choices::Pin::name)),
    );
    let mut put = |k: &str, v: Value| {
        c.insert(k.into(), v);
    };
    let mapping = common
        .mapping
        .as_ref()
        .map_or("block".to_string(), choices::MappingArg::name);
    match executor {
        Executor::Window(cc) | Executor::Lockstep(cc) | Executor::NullMessage(cc) => {
            put("mapping", json!(mapping));
            // Worker processes and MPI ranks meet at their transport's own barrier.
            let across = procs.is_some() || super::checks::over_ranks(common);
            if !matches!(executor, Executor::NullMessage(_)) && !across {
                let barrier = common.barrier.map_or("tree", choices::Barrier::name);
                put("barrier", json!(barrier));
                if barrier == "tree" {
                    put("fan-in", json!(common.fan_in.unwrap_or(4)));
                }
            }
            if let Some(threshold) = cc.runtime.threshold() {
                put("runtime", json!(cc.runtime.name()));
                put("threshold", json!(threshold));
            }
            if common.runtime == Some(choices::Runtime::Bsp) {
                put("runtime", json!(choices::Runtime::Bsp.name()));
            }
            if matches!(executor, Executor::NullMessage(_)) {
                put("max-null-messages", json!(cc.max_null_messages as f64));
            }
            if matches!(executor, Executor::Window(_)) {
                put("dedicated", json!(cc.dedicated));
                if cc.dedicated < 1.0 {
                    put("shared-sets", json!(cc.shared_sets));
                }
            }
        }
        Executor::TimeWarp(_) => {
            put("mapping", json!(mapping));
            put(
                "state-saving",
                json!(common
                    .state_saving
                    .map_or("auto", choices::StateSaving::name)),
            );
            if let Some(k) = common.save_every {
                put("save-every", json!(k));
            }
            if let Some(m) = &common.max_memory {
                put("max-memory", json!(m));
            }
            if let Some(w) = common.window {
                // JSON has no infinity; the config file reads "inf" as well as numbers.
                put(
                    "window",
                    if w.is_finite() {
                        json!(w)
                    } else {
                        json!("inf")
                    },
                );
            }
            if common.check_reverse == Some(true) {
                put("check-reverse", json!(true));
            }
            if let Some(on) = common.safe_commit {
                put("safe-commit", json!(on));
            }
            if let Some(n) = common.gvt_every {
                put("gvt-every", json!(n));
            }
            if common.preempt == Some(true) {
                put("preempt", json!(true));
                put("max-suspended", json!(common.max_suspended.unwrap_or(64)));
                if let Some(t) = common.tick_us {
                    put("tick-us", json!(t));
                    put("alpha", json!(common.alpha.unwrap_or(0.5)));
                    put(
                        "tick-interrupts",
                        json!(common.tick_interrupts.unwrap_or(true)),
                    );
                }
            }
        }
        // Sequential: nothing more.
        _ => {}
    }
    // How payloads crossed the worker processes, and the shared heaps' settings where given.
    if procs.is_some() {
        let payload = common.payload.map_or("zero-copy", choices::Payload::name);
        c.insert("payload".into(), json!(payload));
    }
    if let Some(t) = &common.heap_classes {
        c.insert("heap-classes".into(), json!(t));
    }
    if let Some(n) = common.heap_segments {
        c.insert("heap-segments".into(), json!(n));
    }
    if let Some(b) = common.balance.as_deref().filter(|b| *b != "off") {
        c.insert("balance".into(), json!(b));
    }
    // A restored run is rerun from the same checkpoint (the checkpoints a run saves are not
    // asked for again: a rerun commits the same history without them).
    if let Some(p) = &common.restore {
        c.insert("restore".into(), json!(p.display().to_string()));
    }
    if let Some(s) = common.reseed {
        c.insert("reseed".into(), json!(s));
    }
    if let Value::Object(m) = model_config {
        for (k, v) in m {
            c.insert(k.replace('_', "-"), v);
        }
    }
    Value::Object(c)
}
