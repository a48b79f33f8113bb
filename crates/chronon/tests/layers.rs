//! The layers of docs/architecture.md hold: data flows down and nothing imports upward.
//!
//! - The engine's top is `sim/` (the builder) over `executor/` (the protocols and their run
//!   drivers). No other engine module names either: the transports, the pending-event sets,
//!   the shared heap, the GSU, the mailboxes, the barriers and the model API sit below them.
//! - A transport (`transport/`) names no executor by any path, relative ones included: a
//!   protocol brings its record type and its registers to the transport (the shared-memory
//!   ring mesh carries Time Warp's records and conservative events alike), never the reverse.
//! - A protocol (`executor/`) names only the transport seams (`transport::Endpoint`,
//!   `transport::tw`); only the run drivers (the threads launch, the worker processes' and the
//!   ranks' runs) name a concrete transport, to pick it. Test code may name one.
//! - The engine (`crates/chronon`) names neither the models nor the runner; the models
//!   (`crates/chronon-models`) do not name the runner; the runner (`crates/chronon-cli`) does
//!   not name the Python package.
//!
//! - Inside `executor/time_warp/` the modules import each other without a circle (parts below
//!   the worker, the files that extend the worker above it): the test prints the circle.
//! - The engine's root modules (a file or a folder under `crates/chronon/src`, test code left
//!   out) import in no circle: each names only modules below it, down to `types.rs` (time and
//!   LP numbers).
//!
//! A file that breaks a rule fails the test with the file, the line and the rule.

#[path = "layers/graph.rs"]
mod graph;

use std::path::{Path, PathBuf};

use graph::{describe, find_cycle, folder_files, module_graph, root_graph, without_tests};

/// A rule: in the files under `root` (relative to the workspace), except those whose path
/// (relative to `root`) starts with one of `except`, no code line (test code too, unless
/// `tests` is false) may contain one of `names`.
struct Rule {
    what: &'static str,
    root: &'static str,
    except: &'static [&'static str],
    names: &'static [&'static str],
    tests: bool,
}

const TRANSPORT: &str = "crates/chronon/src/transport";
/// In `except`: every folder named `over` (a family's parts over each transport, and the seams
/// they implement), at any depth.
const OVER: &str = "*/over/";
const PROTOCOLS: &str = "crates/chronon/src/executor";

const RULES: &[Rule] = &[
    Rule {
        what:
            "only the builder, the part runner and the executors name the executors and the builder",
        root: "crates/chronon/src",
        except: &["executor/", "run/", "sim/", "lib.rs"],
        names: &[
            "crate::executor",
            "crate::sim::",
            "crate::Simulation",
            "super::executor",
        ],
        tests: true,
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
        tests: true,
    },
    Rule {
        what: "the engine names neither the models nor the runner",
        root: "crates/chronon/src",
        except: &[],
        names: &["chronon_models", "chronon_cli", "chronon_py"],
        tests: true,
    },
    Rule {
        what: "the models do not name the runner",
        root: "crates/chronon-models/src",
        except: &[],
        names: &["chronon_cli", "chronon_py"],
        tests: true,
    },
    Rule {
        what: "the runner does not name the Python package",
        root: "crates/chronon-cli/src",
        except: &[],
        names: &["chronon_py", "pyo3"],
        tests: true,
    },
    Rule {
        what:
            "a protocol names only the transport seams; only its `over/` folder names a transport",
        root: PROTOCOLS,
        except: &[OVER, "time_warp/ranks/"],
        names: &[
            "transport::threads",
            "transport::shm",
            "transport::mpi",
            "ThreadNet",
            "ShmNet",
            "RankNet",
            "Mailboxes",
            "ShmWires",
            "RankWires",
        ],
        tests: false,
    },
];

/// The folder rules: a protocol family never names another family, nor the part runner above
/// it (`crate::run`), whose frame is written once for every family.
const FAMILY_RULES: &[Rule] = &[
    Rule {
        what: "a family never names another family",
        root: "crates/chronon/src/executor/conservative",
        except: &[],
        names: &["time_warp", "TimeWarp"],
        tests: true,
    },
    Rule {
        what: "a family never names another family",
        root: "crates/chronon/src/executor/time_warp",
        except: &[],
        names: &["conservative", "Conservative"],
        tests: true,
    },
    Rule {
        what: "an executor never names the part runner above it",
        root: PROTOCOLS,
        except: &[],
        names: &["crate::run::", "super::run::"],
        tests: true,
    },
    Rule {
        what: "the part runner names no concrete transport's data path (a family's part picks it)",
        root: "crates/chronon/src/run",
        except: &[],
        names: &[
            "ShmNet",
            "ShmWires",
            "MpiNet",
            "RankWires",
            "ThreadNet",
            "Mailboxes",
        ],
        tests: false,
    },
];

/// Whether `rel` (a path relative to a rule's root) is left out by the `except` entry `e`: a
/// path prefix, or `*/NAME/`: any folder named NAME at any depth.
fn excepted(e: &str, rel: &str) -> bool {
    match e.strip_prefix('*') {
        Some(folder) => rel.starts_with(&folder[1..]) || rel.contains(folder),
        None => rel.starts_with(e),
    }
}

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

/// The protocol rule sees a concrete transport named in a protocol's code, and leaves the run
/// drivers and test code alone.
#[test]
fn the_protocol_rule_sees_a_transport_named_outside_the_run_drivers() {
    let rule = RULES
        .iter()
        .find(|r| r.root == PROTOCOLS)
        .expect("a rule for the protocols");
    assert!(!rule.except.iter().any(|e| excepted(e, "time_warp/mail.rs")));
    assert!(!rule
        .except
        .iter()
        .any(|e| excepted(e, "time_warp/parts.rs")));
    assert!(!rule
        .except
        .iter()
        .any(|e| excepted(e, "time_warp/overlap.rs")));
    assert!(rule.except.iter().any(|e| excepted(e, "over/shm.rs")));
    assert!(rule
        .except
        .iter()
        .any(|e| excepted(e, "conservative/over/threads.rs")));
    let text = "use crate::transport::tw::TwTransport;\nuse crate::transport::shm::ShmWires;\n\
                fn f(w: &RankWires<u8>) {}\n#[cfg(test)]\nmod tests {\n    use crate::transport::threads::Mailboxes;\n}\n";
    let lines: Vec<usize> = offending(&without_tests(text), rule.names)
        .iter()
        .map(|o| o.0)
        .collect();
    assert_eq!(lines, [2, 3]);
}

#[test]
fn nothing_imports_upward() {
    let ws = workspace();
    let mut broken = Vec::new();
    for rule in RULES.iter().chain(FAMILY_RULES) {
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
            if rule.except.iter().any(|e| excepted(e, &rel)) {
                continue;
            }
            let mut text = std::fs::read_to_string(&file).expect("a readable source file");
            if !rule.tests {
                text = without_tests(&text);
            }
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

/// A folder whose modules must not import each other in a circle, relative to the workspace,
/// and the crate path of its module.
const ACYCLIC: &[(&str, &str)] = &[(
    "crates/chronon/src/executor/time_warp",
    "crate::executor::time_warp",
)];

#[test]
fn the_circle_check_finds_a_made_up_circle_through_a_group_a_nested_path_and_a_test_module() {
    let krate = "crate::executor::x";
    let file = |rel: &str, text: &str| (rel.to_string(), text.to_string());
    let mut files = vec![
        file("mod.rs", "mod a;\nmod b;\nmod sub;\npub use a::A;\n"),
        file(
            "a.rs",
            "use super::{c::C, b::{B, B2}};\n// use super::d::D;\n",
        ),
        file("b.rs", "fn f() -> super::sub::run::R { todo!() }\n"),
        file(
            "c.rs",
            "#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::b::B;\n}\n",
        ),
        file("sub/mod.rs", "pub(super) mod run;\n"),
        file(
            "sub/run.rs",
            "use crate::executor::x::a::A;\nuse super::super::c::C;\n",
        ),
        file("d.rs", "use super::a::A;\n"),
    ];
    let edges = module_graph(&files, krate);
    let keys: Vec<(String, String)> = edges.keys().cloned().collect();
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        keys,
        [
            e("a", "b"),
            e("a", "c"),
            e("b", "sub/run"),
            e("c", "b"),
            e("d", "a"),
            e("sub/run", "a"),
            e("sub/run", "c"),
        ]
    );
    let cycle = find_cycle(&edges).expect("a -> b -> sub/run -> a");
    assert_eq!(cycle.first(), cycle.last());
    assert!(describe(&cycle, &edges).contains("sub/run -> "));
    // Without the path back up there is no circle.
    files[5] = file("sub/run.rs", "use super::super::c::C;\n");
    files[3] = file("c.rs", "");
    assert_eq!(find_cycle(&module_graph(&files, krate)), None);
}

#[test]
fn time_warp_imports_no_circle() {
    let ws = workspace();
    for (dir, krate) in ACYCLIC {
        let files = folder_files(&ws.join(dir));
        let edges = module_graph(&files, krate);
        assert!(
            edges.len() > 20,
            "{dir}: too few imports seen ({})",
            edges.len()
        );
        if let Some(cycle) = find_cycle(&edges) {
            panic!(
                "{dir}: modules import each other in a circle:\n{}",
                describe(&cycle, &edges)
            );
        }
    }
}

#[test]
fn the_root_check_folds_folders_and_leaves_tests_out() {
    let files = |inner: &str| {
        vec![
            (
                "a.rs".to_string(),
                "use crate::b::X;\n// crate::c in a comment\n".to_string(),
            ),
            (
                "b.rs".to_string(),
                "use crate::c::inner::Y;\n#[cfg(test)]\nmod tests {\n    use crate::a::X;\n}\n"
                    .to_string(),
            ),
            (
                "c/mod.rs".to_string(),
                "mod inner;\n#[cfg(test)]\nmod tests;\npub fn f() {}\n".to_string(),
            ),
            ("c/inner.rs".to_string(), inner.to_string()),
            ("c/tests.rs".to_string(), "use crate::b::X;\n".to_string()),
        ]
    };
    let edges = root_graph(&files("use crate::a::X;\nuse super::f;\n"));
    let cycle = find_cycle(&edges).expect("a -> b -> c -> a");
    assert_eq!(cycle.len(), 4, "{cycle:?}");
    // Without the nested file's import of `a` there is none: the test-only edges (b's test
    // module, c's tests.rs) and the comment do not count.
    assert_eq!(find_cycle(&root_graph(&files("use super::f;\n"))), None);
}

#[test]
fn the_engines_root_modules_import_no_circle() {
    let edges = root_graph(&folder_files(&workspace().join("crates/chronon/src")));
    assert!(
        edges.len() > 20,
        "too few imports seen between root modules ({})",
        edges.len()
    );
    if let Some(cycle) = find_cycle(&edges) {
        panic!(
            "the engine's root modules import in a circle:\n{}",
            describe(&cycle, &edges)
        );
    }
}
