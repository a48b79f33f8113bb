//! The layers of docs/architecture.md hold: data flows down and nothing imports upward.
//!
//! - The engine's top is `sim/` (the builder) over `executor/` (the protocols and their run
//!   drivers). No other engine module names either: the transports, the pending-event sets,
//!   the shared heap, the GSU, the mailboxes, the barriers and the model API sit below them.
//! - A transport (`transport/`) names no executor by any path, relative ones included: a
//!   protocol brings its record type and its registers to the transport (the shared-memory
//!   ring mesh carries Time Warp's records and conservative events alike), never the reverse.
//! - The engine (`crates/chronon`) names neither the models nor the runner; the models
//!   (`crates/chronon-models`) do not name the runner; the runner (`crates/chronon-cli`) does
//!   not name the Python package.
//!
//! A file that breaks a rule fails the test with the file, the line and the rule.

use std::path::{Path, PathBuf};

/// A rule: in the files under `root` (relative to the workspace), except those whose path
/// (relative to `root`) starts with one of `except`, no code line may contain one of `names`.
struct Rule {
    what: &'static str,
    root: &'static str,
    except: &'static [&'static str],
    names: &'static [&'static str],
}

const TRANSPORT: &str = "crates/chronon/src/transport";

const RULES: &[Rule] = &[
    Rule {
        what: "only the builder and the executors name the executors and the builder",
        root: "crates/chronon/src",
        except: &["executor/", "sim/", "lib.rs"],
        names: &[
            "crate::executor",
            "crate::sim::",
            "crate::Simulation",
            "super::executor",
        ],
    },
    Rule {
        what: "a transport never names an executor",
        root: TRANSPORT,
        except: &[],
        names: &[
            "crate::executor",
            "executor::",
            "crate::sim::",
            "crate::Simulation",
        ],
    },
    Rule {
        what: "the engine names neither the models nor the runner",
        root: "crates/chronon/src",
        except: &[],
        names: &["chronon_models", "chronon_cli", "chronon_py"],
    },
    Rule {
        what: "the models do not name the runner",
        root: "crates/chronon-models/src",
        except: &[],
        names: &["chronon_cli", "chronon_py"],
    },
    Rule {
        what: "the runner does not name the Python package",
        root: "crates/chronon-cli/src",
        except: &[],
        names: &["chronon_py", "pyo3"],
    },
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of `text` (1-based numbers) that are code and contain one of `names`: comments
/// (`//`, `///`, `//!`, to the end of the line) do not count, so a doc link to a higher layer
/// is allowed.
fn offending(text: &str, names: &[&str]) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let code = line.split("//").next().unwrap_or("");
            names
                .iter()
                .any(|n| code.contains(n))
                .then(|| (i + 1, line.trim().to_string()))
        })
        .collect()
}

#[test]
fn the_check_sees_an_upward_import_and_ignores_comments() {
    let names = &["crate::executor"];
    let text = "use crate::queue::HeapQueue;\n/// see [`crate::executor::RunConfig`]\nuse crate::executor::RunConfig; // upward\n    let x = 1; // crate::executor in a comment\n";
    assert_eq!(
        offending(text, names),
        vec![(3, "use crate::executor::RunConfig; // upward".to_string())]
    );
}

/// The transport rule, applied as `nothing_imports_upward` applies it to a file under
/// `transport/`, sees an executor named by an absolute or a relative path.
#[test]
fn the_transport_rule_sees_an_executor_named_from_a_transport_file() {
    let rule = RULES
        .iter()
        .find(|r| r.root == TRANSPORT)
        .expect("a rule for the transports");
    assert!(!rule.except.iter().any(|e| "shm/mesh.rs".starts_with(e)));
    let text = "use crate::shm::Segment;\nuse crate::executor::time_warp::lp::Msg;\n// executor::time_warp in a comment\nuse super::super::executor::RunConfig;\n";
    let lines: Vec<usize> = offending(text, rule.names).iter().map(|o| o.0).collect();
    assert_eq!(lines, [2, 4]);
}

#[test]
fn nothing_imports_upward() {
    let ws = workspace();
    let mut broken = Vec::new();
    for rule in RULES {
        let root = ws.join(rule.root);
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        assert!(!files.is_empty(), "no Rust file under {}", root.display());
        for file in files {
            let rel = file
                .strip_prefix(&root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            if rule.except.iter().any(|e| rel.starts_with(e)) {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("a readable source file");
            for (line, code) in offending(&text, rule.names) {
                broken.push(format!(
                    "{}/{rel}:{line}: {code} ({})",
                    rule.root, rule.what
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "imports that run up:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_engine_and_the_models_depend_on_nothing_above_them() {
    let ws = workspace();
    for (manifest, above) in [
        (
            "crates/chronon/Cargo.toml",
            &["chronon-models", "chronon-cli", "chronon-py"][..],
        ),
        (
            "crates/chronon-models/Cargo.toml",
            &["chronon-cli", "chronon-py"][..],
        ),
        ("crates/chronon-cli/Cargo.toml", &["chronon-py", "pyo3"][..]),
    ] {
        let text = std::fs::read_to_string(ws.join(manifest)).expect("a manifest");
        for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
            for name in above {
                assert!(
                    !line.trim_start().starts_with(&format!("{name} "))
                        && !line.trim_start().starts_with(&format!("{name}=")),
                    "{manifest} depends on {name}, a layer above it: {line}"
                );
            }
        }
    }
}
