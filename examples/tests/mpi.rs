//! A model of one's own over MPI ranks (a build with `--features mpi`, MPICH's `mpirun` on the
//! PATH): the ring example under `mpirun -n R` commits the sequential history under the
//! conservative protocols and Time Warp, with nothing but the runner's code.
#![cfg(feature = "mpi")]

use std::process::Command;

use serde_json::Value;

mod common;
use common::example;

/// The ring's report, over `ranks` MPI ranks when given.
fn report(ranks: Option<usize>, args: &[&str], tag: &str) -> Value {
    let out = std::env::temp_dir().join(format!(
        "chronon-examples-mpi-{}-{tag}.json",
        std::process::id()
    ));
    let ring = example("ring");
    let mut cmd = match ranks {
        Some(r) => {
            let mut c = Command::new("mpirun");
            c.args(["-n", &r.to_string()]).arg(&ring);
            c
        }
        None => Command::new(&ring),
    };
    cmd.arg("run").args(args).arg("--output").arg(&out);
    if let Some(r) = ranks {
        cmd.args(["--ranks", &r.to_string()]);
    }
    let o = cmd.output().expect("the ring starts");
    assert!(
        o.status.success(),
        "{ranks:?} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = serde_json::from_str(&std::fs::read_to_string(&out).expect("a report")).expect("JSON");
    let _ = std::fs::remove_file(&out);
    v
}

#[test]
fn the_ring_over_mpi_ranks_commits_the_sequential_history() {
    let model = ["--lps", "24", "--tokens", "3", "--end", "40", "--seed", "9"];
    let seq = report(None, &model, "seq");
    for (i, (sync, ranks)) in [
        ("window", 2),
        ("null-message", 3),
        ("lockstep", 2),
        ("timewarp", 2),
    ]
    .into_iter()
    .enumerate()
    {
        let mut args = model.to_vec();
        args.extend(["--sync", sync, "--threads", "1"]);
        let r = report(Some(ranks), &args, &format!("r{i}"));
        assert_eq!(
            r["fingerprint"], seq["fingerprint"],
            "{sync} over {ranks} ranks"
        );
        assert_eq!(
            r["committed"], seq["committed"],
            "{sync} over {ranks} ranks"
        );
        assert_eq!(
            r["model_stats"], seq["model_stats"],
            "{sync} over {ranks} ranks"
        );
    }
}
