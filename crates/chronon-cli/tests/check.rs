//! The differential suite (`chronon check`): a short fixed campaign over every model and
//! executor must pass, and the checker itself must catch a wrong history, a hang and a
//! refusal, each with the command line that reproduces it.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use common::chronon;

/// A short campaign with a fixed seed over every model and every parallel executor.
#[test]
fn every_model_under_every_executor_matches_the_sequential_run() {
    for seed in [11u64, 12] {
        let (code, out, err) = chronon(&[
            "check",
            "--runs",
            "45",
            "--seed",
            &seed.to_string(),
            "--per-config",
            "3",
        ]);
        assert_eq!(code, 0, "seed {seed}:\n{err}");
        // Every model and executor was compared at least once over both seeds is checked below;
        // here, that the campaign compared something.
        let passed: u64 = out
            .lines()
            .find_map(|l| l.strip_prefix("check: "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no closing line in {out}"));
        assert!(
            passed >= 60,
            "seed {seed}: only {passed} runs compared\n{err}"
        );
        for model in [
            "random",
            "phold",
            "simplesim",
            "manufacturing",
            "pcs",
            "datastore",
            "star-clique",
            "campus",
            "phold-phases",
        ] {
            assert!(
                err.lines().any(|l| l.contains(&format!(" {model} "))),
                "seed {seed}: {model} never ran\n{err}"
            );
        }
    }
}

/// A campaign draws checkpoint runs too: one that saves checkpoints on the way
/// (`--checkpoint-every`) and a pair, a run that stops at a cut saving a checkpoint
/// (`--checkpoint-at C --end C`) and one restored from it (`--restore DIR/tC`) to the end; both
/// match the sequential run, and the checkpoints' directories are gone afterwards.
#[test]
fn a_campaign_saves_and_restores_checkpoints() {
    let (code, out, err) = chronon(&[
        "check",
        "--runs",
        "3",
        "--seed",
        "1",
        "--models",
        "phold",
        "--verbose",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(" 0 failed"), "{out}");
    let runs: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("check: chronon run phold "))
        .collect();
    let saving = runs
        .iter()
        .find(|l| l.contains("--checkpoint-every "))
        .unwrap_or_else(|| panic!("no run saved checkpoints on the way\n{err}"));
    assert!(saving.contains("--checkpoint-dir "), "{saving}");
    let (i, restored) = runs
        .iter()
        .enumerate()
        .find(|(_, l)| l.contains("--restore "))
        .unwrap_or_else(|| panic!("no run was restored from a checkpoint\n{err}"));
    // The run just before saved the checkpoint it restores, at the end it stopped at.
    let dir = restored.split("--restore ").nth(1).unwrap();
    let dir = dir.split_whitespace().next().unwrap();
    let (parent, cut) = dir.rsplit_once("/t").unwrap();
    let saver = runs[i - 1];
    assert!(
        saver.contains(&format!("--checkpoint-at {cut} --checkpoint-dir {parent}")),
        "{saver}\n{restored}"
    );
    assert!(saver.contains(&format!("--end {cut} ")), "{saver}");
    assert!(err.contains("checkpoints: "), "{err}");
    for path in [parent, dir] {
        assert!(!std::path::Path::new(path).exists(), "{path} was left");
    }
}

/// A check that compares nothing does not pass: `--runs 0` is refused, and a campaign whose
/// time runs out before its first comparison fails.
#[test]
fn a_check_of_nothing_does_not_pass() {
    let (code, _, err) = chronon(&["check", "--runs", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--runs is 0"), "{err}");
    let (code, out, err) = chronon(&["check", "--seconds", "1e-9", "--seed", "1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("no parallel run was compared"), "{err}");
}

/// A scratch directory for fake binaries, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let p =
            std::env::temp_dir().join(format!("chronon-check-test-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }

    /// Writes an executable shell script that wraps the real binary.
    fn wrapper(&self, body: &str) -> PathBuf {
        let path = self.0.join("chronon-wrapper");
        let script = format!(
            "#!/usr/bin/env bash\nreal='{}'\n{body}\n",
            env!("CARGO_BIN_EXE_chronon")
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// True when the arguments ask for the sequential executor.
const IS_SEQ: &str = r#"seq=0; prev=""; for a in "$@"; do [ "$prev" = "--sync" ] && [ "$a" = "seq" ] && seq=1; prev="$a"; done"#;

#[test]
fn a_wrong_history_is_caught_with_the_command_that_reproduces_it() {
    let s = Scratch::new("wrong");
    // Parallel runs get another seed: a different history.
    let w = s.wrapper(&format!(
        r#"{IS_SEQ}
if [ $seq = 1 ]; then exec "$real" "$@"; fi
args=(); prev=""
for a in "$@"; do if [ "$prev" = "--seed" ]; then args+=("$((a + 1))"); else args+=("$a"); fi; prev="$a"; done
exec "$real" "${{args[@]}}""#
    ));
    let (code, out, err) = chronon(&[
        "check",
        "--runs",
        "3",
        "--seed",
        "5",
        "--models",
        "phold",
        "--binary",
        w.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("differs from seq: fingerprint"), "{err}");
    // It stops after the first failure, diagnosed: the first differing LP and event, both sides.
    assert_eq!(err.matches("FAILED").count(), 1, "{err}");
    assert!(err.contains("check:   first difference: LP "), "{err}");
    assert!(err.contains("check:     seq: "), "{err}");
    assert!(err.contains("reproduce: chronon run phold --lps"), "{err}");
    assert!(err.contains("stopped after the first failure"), "{err}");
    assert!(out.contains(" failed"), "{out}");
}

/// A mismatch only under reverse computation (the wrapper changes the seed of Time Warp runs
/// that do not copy states) is put down to a reverse handler; a sequential run that differs
/// from itself (a fresh seed at every sequential run) to a model that is not deterministic.
#[test]
fn the_diagnosis_names_the_class_of_cause() {
    let s = Scratch::new("classes");
    let reverse = s.wrapper(
        r#"tw=0; copy=0; for a in "$@"; do [ "$a" = timewarp ] && tw=1; [ "$a" = copy ] && copy=1; done
if [ $tw = 1 ] && [ $copy = 0 ]; then
  args=(); prev=""
  for a in "$@"; do if [ "$prev" = "--seed" ]; then args+=("$((a + 1))"); else args+=("$a"); fi; prev="$a"; done
  exec "$real" "${args[@]}"
fi
exec "$real" "$@""#,
    );
    let (code, _, err) = chronon(&[
        "check",
        "--runs",
        "4",
        "--seed",
        "5",
        "--models",
        "phold",
        "--sync",
        "timewarp",
        "--binary",
        reverse.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("likely cause: a reverse handler that does not undo"),
        "{err}"
    );
    assert!(err.contains("check:   first difference: LP "), "{err}");
    let random = s.wrapper(&format!(
        r#"{IS_SEQ}
if [ $seq = 1 ]; then
  args=(); prev=""
  for a in "$@"; do if [ "$prev" = "--seed" ]; then args+=("$RANDOM$RANDOM"); else args+=("$a"); fi; prev="$a"; done
  exec "$real" "${{args[@]}}"
fi
exec "$real" "$@""#
    ));
    let (code, _, err) = chronon(&[
        "check",
        "--runs",
        "2",
        "--seed",
        "5",
        "--models",
        "phold",
        "--binary",
        random.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("likely cause: the model is not deterministic"),
        "{err}"
    );
    // The verdict comes first, in the failure's own line.
    assert!(
        err.contains("check: FAILED: the model is not deterministic: two sequential runs of"),
        "{err}"
    );
    assert!(err.contains("check:   found when: "), "{err}");
    assert!(err.contains("check:     seq again: "), "{err}");
    assert!(err.contains("and again: chronon run phold"), "{err}");
}

#[test]
fn a_hang_is_caught_and_killed() {
    let s = Scratch::new("hang");
    let w = s.wrapper(&format!(
        r#"{IS_SEQ}
if [ $seq = 1 ]; then exec "$real" "$@"; fi
exec sleep 30"#
    ));
    let started = std::time::Instant::now();
    let (code, _, err) = chronon(&[
        "check",
        "--runs",
        "1",
        "--per-config",
        "1",
        "--seed",
        "5",
        "--models",
        "random",
        "--slow-floor",
        "1",
        "--slow-factor",
        "1",
        "--binary",
        w.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("slow/hung: killed after"), "{err}");
    assert!(err.contains("the sequential run took"), "{err}");
    assert!(
        started.elapsed().as_secs() < 20,
        "the hung child was not killed in time"
    );
}

#[test]
fn an_unexpected_refusal_is_a_failure() {
    let s = Scratch::new("refuse");
    let w = s.wrapper(&format!(
        r#"{IS_SEQ}
if [ $seq = 1 ]; then exec "$real" "$@"; fi
echo "error: something the executor should not refuse" >&2; exit 2"#
    ));
    let (code, _, err) = chronon(&[
        "check",
        "--runs",
        "1",
        "--per-config",
        "1",
        "--seed",
        "5",
        "--models",
        "datastore",
        "--binary",
        w.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("refused a configuration that seq accepts: error: something"),
        "{err}"
    );
}

#[test]
fn bad_arguments_get_one_line() {
    for args in [
        &["check", "--models", "nope"][..],
        &["check", "--sync", "seq"][..],
        &["check", "--seconds", "-1"][..],
        &["check", "--per-config", "0"][..],
        &["check", "--max-failures", "0"][..],
        &["check", "--max-failures", "2", "--keep-going"][..],
    ] {
        let (code, _, err) = chronon(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
