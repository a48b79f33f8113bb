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
//! - Inside `executor/time_warp/` the modules import each other without a circle (parts below
//!   the worker, the files that extend the worker above it): the test prints the circle.
//! - The engine's root modules (a file or a folder under `crates/chronon/src`, test code left
//!   out) import in no circle: each names only modules below it, down to `types.rs` (time and
//!   LP numbers).
//!
//! A file that breaks a rule fails the test with the file, the line and the rule.

use std::collections::{BTreeMap, BTreeSet};
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

/// A folder whose modules must not import each other in a circle, relative to the workspace,
/// and the crate path of its module.
const ACYCLIC: &[(&str, &str)] = &[(
    "crates/chronon/src/executor/time_warp",
    "crate::executor::time_warp",
)];

/// The module path of a file relative to its folder's module: `worker.rs` is `worker`,
/// `ranks/mod.rs` is `ranks`, `ranks/run.rs` is `ranks/run`, the folder's `mod.rs` is empty.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The first identifiers of the paths that follow `at` in `code` (`lp::Msg` gives `lp`;
/// `{lp::Msg, shared::Shared}` gives `lp` and `shared`; `*` and `self` give nothing more
/// than the module itself, an empty entry).
fn heads(code: &str) -> Vec<Vec<String>> {
    let ident = |s: &str| -> Vec<String> {
        let mut out = Vec::new();
        for seg in s.split("::") {
            let seg = seg.trim();
            let name: String = seg
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() || name == "self" || name.len() != seg.len() {
                if !name.is_empty() && name != "self" {
                    out.push(name);
                }
                break;
            }
            out.push(name);
        }
        out
    };
    let code = code.trim_start();
    if let Some(group) = code.strip_prefix('{') {
        // Top-level entries of the group, up to its closing brace.
        let (mut depth, mut start, mut entries) = (0usize, 0usize, Vec::new());
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    entries.push(&group[start..i]);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    entries.push(&group[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        entries.into_iter().map(ident).collect()
    } else {
        vec![ident(code)]
    }
}

/// The module graph of a folder's files (`(path relative to the folder, text)`): an edge
/// `a -> b` for every code path (a `use` or a path in an expression or type; comments do not
/// count) in module `a` that starts with `super::` or with the folder's crate path `krate` and
/// names module `b` (the longest module path among the folder's files that it starts with).
/// Paths into the folder's own module (its `mod.rs`: the module map) or a module's own file
/// are not edges. The value of each edge: where it is first seen (file:line).
fn module_graph(files: &[(String, String)], krate: &str) -> BTreeMap<(String, String), String> {
    let known: BTreeSet<Vec<String>> = files.iter().map(|(rel, _)| module_of(rel)).collect();
    let name = |m: &[String]| m.join("/");
    let mut edges = BTreeMap::new();
    for (rel, text) in files {
        let file_mod = module_of(rel);
        if file_mod.is_empty() {
            continue;
        }
        // Code only, a `use` group joined onto its first line.
        let lines: Vec<String> = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or("").to_string())
            .collect();
        // Inline modules (`mod tests {` … `}` at the same indentation) nest the path.
        let mut inline: Vec<(String, String)> = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let mut code = lines[i].clone();
            let at = i + 1;
            let trimmed = code.trim_start();
            let indent = code[..code.len() - trimmed.len()].to_string();
            if inline
                .last()
                .is_some_and(|(_, ind)| code == format!("{ind}}}"))
            {
                inline.pop();
            }
            let decl = trimmed
                .strip_prefix("pub(crate) ")
                .or_else(|| trimmed.strip_prefix("pub(super) "))
                .unwrap_or(trimmed);
            if let Some(m) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix('{')) {
                inline.push((m.trim().to_string(), indent));
            }
            while code.matches('{').count() > code.matches('}').count()
                && code.contains("use ")
                && i + 1 < lines.len()
            {
                i += 1;
                code.push(' ');
                code.push_str(&lines[i]);
            }
            i += 1;
            let mut here = file_mod.clone();
            here.extend(inline.iter().map(|(m, _)| m.clone()));
            let mut rest = code.as_str();
            while let Some((before, after)) = find_path(rest, krate) {
                rest = after.1;
                let base: Vec<String> = match before {
                    None => Vec::new(),
                    Some(n) if n <= here.len() => here[..here.len() - n].to_vec(),
                    Some(_) => continue,
                };
                for head in heads(after.0) {
                    let mut full = base.clone();
                    full.extend(head);
                    let target = (0..=full.len())
                        .rev()
                        .map(|k| full[..k].to_vec())
                        .find(|p| known.contains(p));
                    let Some(target) = target else { continue };
                    if target.is_empty() || target == file_mod {
                        continue;
                    }
                    edges
                        .entry((name(&file_mod), name(&target)))
                        .or_insert_with(|| format!("{rel}:{at}"));
                }
            }
        }
    }
    edges
}

/// The next path in `code` that starts with `super::` (how many `super`s: `Some(n)`) or with
/// `krate::` (`None`), with what follows its prefix, and the code after it.
#[allow(clippy::type_complexity)]
fn find_path<'c>(code: &'c str, krate: &str) -> Option<(Option<usize>, (&'c str, &'c str))> {
    let boundary = |s: &str, i: usize| {
        s[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'))
    };
    let sup = code
        .match_indices("super::")
        .find(|(i, _)| boundary(code, *i))
        .map(|(i, _)| i);
    let kr = code
        .match_indices(&format!("{krate}::"))
        .find(|(i, _)| boundary(code, *i))
        .map(|(i, _)| i);
    match (sup, kr) {
        (Some(s), k) if k.is_none_or(|k| s < k) => {
            let mut n = 0;
            let mut rest = &code[s..];
            while let Some(r) = rest.strip_prefix("super::") {
                n += 1;
                rest = r;
            }
            Some((Some(n), (rest, rest)))
        }
        (_, Some(k)) => {
            let rest = &code[k + krate.len() + 2..];
            Some((None, (rest, rest)))
        }
        _ => None,
    }
}

/// A circle in the graph, if there is one: its modules in order, the first repeated at the end.
fn find_cycle(edges: &BTreeMap<(String, String), String>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().push(b);
    }
    // 0: not seen, 1: on the path, 2: done.
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    fn visit<'g>(
        n: &'g str,
        next: &BTreeMap<&'g str, Vec<&'g str>>,
        state: &mut BTreeMap<&'g str, u8>,
        path: &mut Vec<&'g str>,
    ) -> Option<Vec<String>> {
        state.insert(n, 1);
        path.push(n);
        for &m in next.get(n).map(Vec::as_slice).unwrap_or(&[]) {
            match state.get(m).copied().unwrap_or(0) {
                1 => {
                    let from = path.iter().position(|&p| p == m).expect("on the path");
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|s| s.to_string()).collect();
                    cycle.push(m.to_string());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, next, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(n, 2);
        None
    }
    let nodes: Vec<&str> = next.keys().copied().collect();
    for n in nodes {
        if state.get(n).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, &next, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The circle as a message: each step with the line that makes it.
fn describe(cycle: &[String], edges: &BTreeMap<(String, String), String>) -> String {
    cycle
        .windows(2)
        .map(|w| {
            let at = &edges[&(w[0].clone(), w[1].clone())];
            format!("  {} -> {} ({at})", w[0], w[1])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

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

/// Every Rust file under `root`: (path relative to it, text).
fn folder_files(root: &Path) -> Vec<(String, String)> {
    let mut paths = Vec::new();
    rust_files(root, &mut paths);
    paths
        .iter()
        .map(|p| {
            let rel = p
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            (
                rel,
                std::fs::read_to_string(p).expect("a readable source file"),
            )
        })
        .collect()
}

/// `text` with its test code blanked (lines kept, so numbers hold): what follows a
/// `#[cfg(test)]`-like attribute, the next line when it is a `mod x;` declaration, else the
/// rest of the file (test modules close a file in this codebase).
fn without_tests(text: &str) -> String {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(") && t.contains("test") && !t.contains("not(test") {
            out.push("");
            match lines.next() {
                Some(next) if next.contains("mod ") && next.trim_end().ends_with(';') => {
                    out.push("");
                    continue;
                }
                _ => break,
            }
        }
        out.push(line);
    }
    out.join("\n")
}

/// The graph of the top-level modules under a crate's `src` (files given as by
/// [`folder_files`]): its test files (`tests.rs`, `loom_tests.rs`, a `tests/` folder) and
/// test code left out, every module path folded onto its first component (`executor/
/// time_warp/worker` is `executor`).
fn root_graph(files: &[(String, String)]) -> BTreeMap<(String, String), String> {
    let code: Vec<(String, String)> = files
        .iter()
        .filter(|(rel, _)| {
            !rel.split('/').any(|c| {
                c == "tests" || c == "tests.rs" || c == "loom_tests.rs" || c.ends_with("_tests.rs")
            }) && rel != "lib.rs"
        })
        .map(|(rel, text)| (rel.clone(), without_tests(text)))
        .collect();
    let mut folded = BTreeMap::new();
    for ((a, b), at) in module_graph(&code, "crate") {
        let top = |m: &str| m.split('/').next().unwrap_or(m).to_string();
        if top(&a) != top(&b) {
            folded.entry((top(&a), top(&b))).or_insert(at);
        }
    }
    folded
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
