//! The module graph that `layers.rs` checks for circles: the modules of a folder's Rust files,
//! the edges their code paths make (comments and, for the root graph, test code left out), a
//! circle in it, and the circle as a message.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The module path of a file relative to its folder's module: `worker.rs` is `worker`,
/// `ranks/mod.rs` is `ranks`, `ranks/run.rs` is `ranks/run`, the folder's `mod.rs` is empty.
pub fn module_of(rel: &str) -> Vec<String> {
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
pub fn heads(code: &str) -> Vec<Vec<String>> {
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
pub fn module_graph(files: &[(String, String)], krate: &str) -> BTreeMap<(String, String), String> {
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
pub fn find_path<'c>(code: &'c str, krate: &str) -> Option<(Option<usize>, (&'c str, &'c str))> {
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
pub fn find_cycle(edges: &BTreeMap<(String, String), String>) -> Option<Vec<String>> {
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
pub fn describe(cycle: &[String], edges: &BTreeMap<(String, String), String>) -> String {
    cycle
        .windows(2)
        .map(|w| {
            let at = &edges[&(w[0].clone(), w[1].clone())];
            format!("  {} -> {} ({at})", w[0], w[1])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every Rust file under `root`: (path relative to it, text).
pub fn folder_files(root: &Path) -> Vec<(String, String)> {
    let mut paths = Vec::new();
    super::rust_files(root, &mut paths);
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
pub fn without_tests(text: &str) -> String {
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
pub fn root_graph(files: &[(String, String)]) -> BTreeMap<(String, String), String> {
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
