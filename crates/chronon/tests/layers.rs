//! The layers of docs/architecture.md hold: data flows down and nothing imports upward.
//!
//! - The engine's top is `sim/` (the builder) over `executor/` (the protocols and their run
//!   drivers). No other engine module names either: the transports, the pending-event sets,
//!   the shared heap, the GSU, the mailboxes, the barriers and the model API sit below them.
//! - The engine (`crates/chronon`) names neither the models nor the runner; the models
//!   (`crates/chronon-models`) do not name the runner; the runner (`crates/chronon-cli`) does
//!   not name the Python package.
//!
//! - The engine's root modules (a file or a folder under `crates/chronon/src`) import in no
//!   circle: each names only modules below it, down to `types.rs` (time and LP numbers).
//!
//! A file that breaks a rule fails the test with the file, the line and the rule; a circle
//! fails with the modules around it.

use std::path::{Path, PathBuf};

/// A rule: in the files under `root` (relative to the workspace), except those whose path
/// (relative to `root`) starts with one of `except`, no code line may contain one of `names`.
struct Rule {
    what: &'static str,
    root: &'static str,
    except: &'static [&'static str],
    names: &'static [&'static str],
}

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

/// The modules directly under `dir` (a file `x.rs` or a folder `x/`) and, for each, the
/// modules it names in code (not in comments or test code): `crate_path` + name, or a
/// `super::` path that leaves the module. Test code is a file named `tests.rs` or
/// `loom_tests.rs`, a `tests/` folder, or what follows a `#[cfg(test)]`-like attribute: the
/// next line when it is a `mod x;` declaration, else the rest of the file (test modules close
/// a file in this codebase).
fn module_graph(
    dir: &Path,
    crate_path: &str,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let mut nodes = std::collections::BTreeMap::new();
    let mut uses = Vec::new();
    for file in files {
        let rel = file.strip_prefix(dir).expect("under dir").to_path_buf();
        let mut path: Vec<String> = rel
            .iter()
            .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if path.last().is_some_and(|l| l == "mod") {
            path.pop();
        }
        if path.is_empty() || path[0] == "lib" || path[0] == "main" {
            continue;
        }
        nodes.insert(path[0].clone(), std::collections::BTreeSet::new());
        let test_file = path
            .iter()
            .any(|c| c == "tests" || c == "loom_tests" || c.ends_with("_tests"));
        if test_file {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        uses.push((path, code_lines(&text)));
    }
    let pattern = |code: &str, from: &[String]| -> Vec<String> {
        let mut found = Vec::new();
        for (i, _) in code.match_indices(crate_path) {
            let rest = &code[i + crate_path.len()..];
            found.push(ident(rest));
        }
        let mut at = 0;
        while let Some(i) = code[at..].find("super::") {
            let start = at + i;
            let before = code[..start].chars().last();
            at = start + "super::".len();
            if before.is_some_and(|c| c == ':' || c.is_alphanumeric() || c == '_') {
                continue;
            }
            let mut ups = 1;
            let mut rest = &code[at..];
            while let Some(r) = rest.strip_prefix("super::") {
                ups += 1;
                rest = r;
            }
            // `super` of module `from` (a path under `dir`) with `ups` steps up.
            if ups >= from.len() {
                found.push(ident(rest));
            }
        }
        found
    };
    for (path, code) in uses {
        let edges: Vec<String> = code
            .iter()
            .flat_map(|line| pattern(line, &path))
            .filter(|n| *n != path[0])
            .collect();
        let known: Vec<String> = edges
            .into_iter()
            .filter(|n| nodes.contains_key(n))
            .collect();
        nodes.get_mut(&path[0]).expect("a node").extend(known);
    }
    nodes
}

/// The identifier at the start of `s` (`{` of a use group: empty).
fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The code of `text`, line by line: comments cut, test code (see [`module_graph`]) left out.
fn code_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(") && t.contains("test") && !t.contains("not(test") {
            match lines.next() {
                Some(next)
                    if next.trim_start().starts_with("mod ") && next.trim_end().ends_with(';') =>
                {
                    continue
                }
                Some(next)
                    if next.trim_start().starts_with("pub(crate) mod ")
                        && next.trim_end().ends_with(';') =>
                {
                    continue
                }
                _ => break,
            }
        }
        out.push(line.split("//").next().unwrap_or("").to_string());
    }
    out
}

/// A cycle of `graph` (its modules in order, the first repeated at the end), if it has one.
fn find_cycle(
    graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Option<Vec<String>> {
    // Colours: absent = unvisited, false = on the path, true = done.
    fn visit(
        v: &str,
        graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        colour: &mut std::collections::BTreeMap<String, bool>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        colour.insert(v.to_string(), false);
        path.push(v.to_string());
        for w in graph.get(v).into_iter().flatten() {
            match colour.get(w) {
                Some(false) => {
                    let at = path.iter().position(|p| p == w).expect("on the path");
                    let mut cycle = path[at..].to_vec();
                    cycle.push(w.clone());
                    return Some(cycle);
                }
                Some(true) => {}
                None => {
                    if let Some(c) = visit(w, graph, colour, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        colour.insert(v.to_string(), true);
        None
    }
    let mut colour = std::collections::BTreeMap::new();
    for v in graph.keys() {
        if !colour.contains_key(v) {
            if let Some(c) = visit(v, graph, &mut colour, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn the_cycle_check_finds_a_cycle_and_ignores_comments_and_tests() {
    let dir = std::env::temp_dir().join(format!("chronon-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("c")).unwrap();
    std::fs::write(
        dir.join("a.rs"),
        "use crate::b::X;\n// crate::c in a comment\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.rs"),
        "use super::c::Y;\n#[cfg(test)]\nmod tests {\n use crate::a::X;\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("c/mod.rs"),
        "mod inner;\n#[cfg(test)]\nmod tests;\npub fn f() {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("c/inner.rs"),
        "use super::super::a::X;\nuse super::f;\n",
    )
    .unwrap();
    std::fs::write(dir.join("c/tests.rs"), "use crate::b::X;\n").unwrap();
    let graph = module_graph(&dir, "crate::");
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]),
        "{graph:?}"
    );
    // Without the nested file's `super::super::a`, there is none: the test-only edges
    // (b's test module, c's tests.rs) and the comment do not count.
    std::fs::write(dir.join("c/inner.rs"), "use super::f;\n").unwrap();
    assert_eq!(find_cycle(&module_graph(&dir, "crate::")), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_engines_root_modules_import_no_circle() {
    let graph = module_graph(&workspace().join("crates/chronon/src"), "crate::");
    assert!(graph.contains_key("model") && graph.contains_key("executor"));
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the engine's root modules import in a circle: {}",
            cycle.join(" -> ")
        );
    }
}
