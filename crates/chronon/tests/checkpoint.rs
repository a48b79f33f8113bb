//! Checkpoint and restart through the library: a run saved under one executor and restored
//! under another commits the history of the run never interrupted; bad checkpoints are
//! refused with one line.

use std::path::PathBuf;

use chronon::checkpoint::checkpoint_path;
use chronon::{
    ConservativeConfig, Ctx, Executor, GlobalCtx, LpId, Model, ModelStats, Report, Runtime,
    SimError, Simulation, TimeWarpConfig,
};

/// Jobs hop between LPs with random delays; LPs count hops, a global event samples the total.
struct Hops {
    lps: u32,
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Lp {
    hops: u64,
    sum: f64,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Job {
    id: u32,
    trail: Vec<u32>,
}

chronon::counters!(Counters { hops });

impl Model for Hops {
    type State = Lp;
    type Event = Job;
    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Lp {
        for k in 0..2 {
            let d = 0.5 + ctx.rng().uniform();
            ctx.send(
                ctx.me(),
                d,
                Job {
                    id: ctx.me() * 2 + k,
                    trail: vec![],
                },
            );
        }
        Lp { hops: 0, sum: 0.0 }
    }
    fn on_event(&self, lp: &mut Lp, job: &Job, ctx: &mut Ctx<'_, Self>) {
        lp.hops += 1;
        lp.sum += ctx.now();
        ctx.count(Counters::hops, 1);
        let dst = ctx.rng().below(u64::from(self.lps)) as LpId;
        let d = 0.5 + ctx.rng().exponential_mean(1.0);
        let mut trail = job.trail.clone();
        trail.push(ctx.me());
        trail.truncate(3);
        ctx.send(dst, d, Job { id: job.id, trail });
    }
    fn lookahead(&self) -> f64 {
        0.5
    }
    fn counter_names(&self) -> &'static [&'static str] {
        Counters::NAMES
    }
    fn finish(&self, _: LpId, lp: &Lp, stats: &mut ModelStats) {
        stats.add("sum", lp.sum);
    }
    fn global_events(&self) -> Vec<f64> {
        vec![3.0]
    }
    fn on_global(&self, ctx: &mut GlobalCtx<'_, Self>) {
        let total: u64 = (0..ctx.lps()).map(|lp| ctx.state(lp).hops).sum();
        ctx.record("hops", total as f64);
        ctx.stats().add("samples", 1.0);
        ctx.schedule(3.0);
    }
}

fn executors() -> Vec<Executor> {
    let mut ws = ConservativeConfig::new(2);
    ws.runtime = Runtime::WorkStealing { threshold: 4 };
    let mut at = ConservativeConfig::new(2);
    at.runtime = Runtime::ActiveThreads { threshold: 5 };
    vec![
        Executor::Sequential,
        Executor::Window(ConservativeConfig::new(2)),
        Executor::NullMessage(ConservativeConfig::new(3)),
        Executor::Lockstep(ConservativeConfig::new(2)),
        Executor::Lockstep(ws),
        Executor::Lockstep(at),
        Executor::TimeWarp(TimeWarpConfig::new(2)),
    ]
}

fn sim(ex: &Executor) -> Simulation<Hops> {
    Simulation::new(Hops { lps: 12 })
        .lps(12)
        .seed(5)
        .executor(ex.clone())
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chronon-ckpt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn same(a: &Report, b: &Report) {
    assert_eq!(a.fingerprint, b.fingerprint);
    assert_eq!(a.committed, b.committed);
    assert_eq!(a.model_stats, b.model_stats);
    assert_eq!(a.pending_at_end, b.pending_at_end);
    assert_eq!(a.model_series, b.model_series);
}

#[test]
fn every_executor_saves_and_every_executor_restores() {
    let whole = sim(&Executor::Sequential).end_time(20.0).run().unwrap();
    assert!(whole.committed > 200);
    for (i, saver) in executors().iter().enumerate() {
        let dir = tmp(&format!("save{i}"));
        let chained = sim(saver)
            .end_time(20.0)
            .checkpoint_every(7.0, &dir)
            .run()
            .unwrap();
        same(&chained, &whole);
        let cuts: Vec<f64> = chained.checkpoints.iter().map(|c| c.cut).collect();
        assert_eq!(cuts, vec![7.0, 14.0], "{}", saver.name());
        for restorer in executors() {
            let rest = sim(&restorer)
                .end_time(20.0)
                .restore(checkpoint_path(&dir, 7.0))
                .run()
                .unwrap_or_else(|e| panic!("{} -> {}: {e}", saver.name(), restorer.name()));
            same(&rest, &whole);
            let from = rest.restored.as_ref().expect("restored");
            assert_eq!(from.cut, 7.0);
            assert!(rest.processed < whole.committed);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_checkpoint_at_the_end_time_is_saved_and_continued() {
    let dir = tmp("at-end");
    let whole = sim(&Executor::Sequential).end_time(12.0).run().unwrap();
    let first = sim(&Executor::Sequential)
        .end_time(5.0)
        .checkpoint_at(5.0, &dir)
        .run()
        .unwrap();
    assert_eq!(first.checkpoints.len(), 1);
    let rest = sim(&Executor::Window(ConservativeConfig::new(2)))
        .end_time(12.0)
        .restore(checkpoint_path(&dir, 5.0))
        .run()
        .unwrap();
    same(&rest, &whole);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_reseeded_branch_differs_and_is_itself_deterministic() {
    let dir = tmp("reseed");
    let whole = sim(&Executor::Sequential)
        .end_time(15.0)
        .checkpoint_at(5.0, &dir)
        .run()
        .unwrap();
    let branch = |ex: &Executor, s| {
        sim(ex)
            .end_time(15.0)
            .restore(checkpoint_path(&dir, 5.0))
            .reseed(s)
            .run()
            .unwrap()
    };
    let a = branch(&Executor::Sequential, 9);
    assert_ne!(a.fingerprint, whole.fingerprint);
    assert_eq!(a.restored.as_ref().unwrap().reseed, Some(9));
    same(&branch(&Executor::TimeWarp(TimeWarpConfig::new(2)), 9), &a);
    assert_ne!(branch(&Executor::Sequential, 10).fingerprint, a.fingerprint);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn config_error(r: Result<Report, SimError>) -> String {
    match r {
        Err(SimError::Config(c)) => c.to_string(),
        Err(e) => panic!("not a configuration error: {e}"),
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn bad_checkpoints_are_refused_in_one_line() {
    let dir = tmp("bad");
    sim(&Executor::Sequential)
        .end_time(4.0)
        .checkpoint_at(4.0, &dir)
        .run()
        .unwrap();
    let ck = checkpoint_path(&dir, 4.0);
    let restore = |lps: u32| {
        Simulation::new(Hops { lps })
            .lps(lps)
            .end_time(10.0)
            .restore(&ck)
            .run()
    };
    assert!(config_error(restore(13)).contains("holds 12 LPs; this run has 13"));
    // Another end time before the cut.
    let early = sim(&Executor::Sequential).end_time(3.0).restore(&ck).run();
    assert!(config_error(early).contains("not after the checkpoint's cut 4"));
    // A corrupted part: its checksum fails.
    let part = ck.join("part-0.bin");
    let mut bytes = std::fs::read(&part).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    std::fs::write(&part, &bytes).unwrap();
    assert!(config_error(restore(12)).contains("fails its checksum"));
    // Truncated.
    std::fs::write(&part, &bytes[..mid]).unwrap();
    let e = config_error(restore(12));
    assert!(e.contains("checksum") || e.contains("truncated"), "{e}");
    // A changed manifest.
    let m = ck.join("manifest.json");
    let text = std::fs::read_to_string(&m).unwrap();
    std::fs::write(&m, text.replace("\"seed\": 5", "\"seed\": 6")).unwrap();
    assert!(config_error(restore(12)).contains("fails its checksum"));
    std::fs::write(&m, &text[..text.len() / 2]).unwrap();
    assert!(config_error(restore(12)).contains("truncated or corrupted"));
    // No manifest: a checkpoint still being written (or no checkpoint at all).
    std::fs::remove_file(&m).unwrap();
    assert!(config_error(restore(12)).contains("is not a checkpoint"));
    // A reseed without a checkpoint.
    let e = config_error(sim(&Executor::Sequential).end_time(3.0).reseed(1).run());
    assert!(e.contains("needs a checkpoint"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_checkpoint_of_another_model_is_refused() {
    let dir = tmp("label");
    sim(&Executor::Sequential)
        .end_time(4.0)
        .checkpoint_label("hops", serde_json::json!({"lps": 12}))
        .checkpoint_at(4.0, &dir)
        .run()
        .unwrap();
    let manifest = chronon::checkpoint::read_manifest(&checkpoint_path(&dir, 4.0)).unwrap();
    assert_eq!(manifest.model, "hops");
    assert_eq!(manifest.cut, 4.0);
    assert_eq!(manifest.lps, 12);
    let e = config_error(
        sim(&Executor::Sequential)
            .end_time(8.0)
            .checkpoint_label("other", serde_json::Value::Null)
            .restore(checkpoint_path(&dir, 4.0))
            .run(),
    );
    assert!(e.contains("checkpoint of the model hops, not other"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unwritable_directory_stops_the_run_at_the_cut_with_its_report() {
    let dir = tmp("unwritable");
    std::fs::write(&dir, b"a file, not a directory").unwrap();
    let r = sim(&Executor::Sequential)
        .end_time(10.0)
        .checkpoint_every(4.0, &dir)
        .run();
    let e = config_error(r);
    assert!(e.contains(&dir.display().to_string()), "{e}");
    std::fs::remove_file(&dir).unwrap();
}

#[test]
fn a_large_run_is_saved_in_parts_written_side_by_side() {
    let dir = tmp("parts");
    let big = |ex: &Executor| {
        Simulation::new(Hops { lps: 9000 })
            .lps(9000)
            .seed(2)
            .executor(ex.clone())
            .end_time(2.0)
    };
    let whole = big(&Executor::Sequential).run().unwrap();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (i, ex) in executors().iter().enumerate() {
        let d = dir.join(format!("{i}"));
        let saved = big(ex).checkpoint_every(1.0, &d).run().unwrap();
        same(&saved, &whole);
        let m = chronon::checkpoint::read_manifest(&checkpoint_path(&d, 1.0)).unwrap();
        // The sequential executor writes on its own thread, one part.
        let parts = match ex {
            Executor::Sequential => 1,
            _ => cores.clamp(1, 3),
        };
        assert_eq!(m.parts.len(), parts, "{}", ex.name());
        assert_eq!(m.parts.iter().map(|p| p.lps).sum::<u64>(), 9000);
        let rest = big(&Executor::TimeWarp(TimeWarpConfig::new(2)))
            .restore(checkpoint_path(&d, 1.0))
            .run()
            .unwrap();
        same(&rest, &whole);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_checkpoint_of_another_format_version_is_refused() {
    let dir = tmp("format");
    sim(&Executor::Sequential)
        .end_time(4.0)
        .checkpoint_at(4.0, &dir)
        .run()
        .unwrap();
    let ck = checkpoint_path(&dir, 4.0);
    let path = ck.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let stored = chronon::checkpoint::read_manifest(&ck).unwrap().checksum;
    // The same manifest as a later format would write it, with a valid checksum.
    let unsummed = text
        .replace(&format!("\"checksum\": {stored}"), "\"checksum\": 0")
        .replace(
            &format!("\"format\": {}", chronon::checkpoint::FORMAT),
            "\"format\": 99",
        );
    let crc = crc32fast::hash(unsummed.as_bytes());
    std::fs::write(
        &path,
        unsummed.replace("\"checksum\": 0", &format!("\"checksum\": {crc}")),
    )
    .unwrap();
    let e = config_error(sim(&Executor::Sequential).end_time(8.0).restore(&ck).run());
    assert!(e.contains("has checkpoint format 99; this chronon"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
