//! A panic in any model method — an event handler, `Model::finish`, `Model::topology` or a
//! global event — ends `chronon run` with one line naming where, under every executor.

mod common;

fn syncs() -> Vec<Vec<&'static str>> {
    vec![
        vec!["--sync", "seq"],
        vec!["--sync", "window", "--threads", "2"],
        vec!["--sync", "null-message", "--threads", "2"],
        vec!["--sync", "lockstep", "--threads", "2"],
        vec!["--sync", "timewarp", "--threads", "2"],
    ]
}

/// Runs the faulty model with `fault` under every executor: exit `code`, one line with `words`.
fn check(fault: &str, words: &str) {
    for sync in syncs() {
        let mut args = vec!["run", "faulty", "--fault", fault, "--end", "10"];
        args.extend(&sync);
        let (code, _, stderr) = common::chronon(&args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: model panicked: ") && stderr.contains(words),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("internal error") && !stderr.contains("4294967295"));
    }
}

#[test]
fn a_panic_in_finish_is_one_line() {
    check(
        "finish-panic",
        "Model::finish for LP 1: the faulty model panics in finish",
    );
}

#[test]
fn a_panic_in_topology_is_one_line() {
    check(
        "topology-panic",
        "Model::topology for LP 1: the faulty model panics in topology",
    );
}

#[test]
fn a_panic_in_a_global_event_is_one_line() {
    check(
        "global-panic",
        "global event at time 3: the faulty model panics in a global event",
    );
}
