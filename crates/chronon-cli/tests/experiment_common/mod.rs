//! Helpers shared by the `chronon experiment` and `chronon report` test binaries
//! (experiment_cli.rs, experiment_args_cli.rs, experiment_mpi_cli.rs, report_cli.rs): run an
//! experiment at `--quick` size and read back its CSV rows, its Markdown and its SVG's texts
//! (the SVG must parse as XML with an `<svg>` root).
// Each test binary uses a subset of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use crate::common::chronon;

/// A CSV row: (column, value) pairs.
pub type Row = Vec<(String, String)>;

/// A fresh scratch directory (removed if it exists) under the temporary directory.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chronon-xp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A file's text (panics naming the file).
pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The texts of an SVG document, which must parse as XML with an `<svg>` root.
pub fn svg_texts(p: &Path) -> Vec<String> {
    let text = read(p);
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not well-formed XML: {e}", p.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

/// Runs `experiment NAME --quick` with `extra`; checks the three files and one report per
/// measurement, and returns (CSV rows, Markdown, SVG texts).
pub fn quick(name: &str, extra: &[&str]) -> (Vec<Row>, String, Vec<String>) {
    let dir = scratch(name);
    let d = dir.to_str().unwrap();
    let mut args = vec!["experiment", name, "--quick", "--out", d];
    args.extend_from_slice(extra);
    let (code, out, err) = chronon(&args);
    assert_eq!(code, 0, "{name}: {err}");
    assert!(out.contains(&format!("{name}.svg")), "{out}");
    let csv = read(&dir.join(format!("{name}.csv")));
    let mut lines = csv.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let rows: Vec<Row> = lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect();
    assert!(!rows.is_empty(), "{name}: empty CSV");
    let md = read(&dir.join(format!("{name}.md")));
    let texts = svg_texts(&dir.join(format!("{name}.svg")));
    // Every measurement left its report.
    let runs = std::fs::read_dir(dir.join("runs")).unwrap().count();
    assert_eq!(runs, rows.len(), "{name}: one report per measurement");
    let _ = std::fs::remove_dir_all(&dir);
    (rows, md, texts)
}

/// The value of column `k` in `row` (panics when the row has no such column).
pub fn col<'a>(row: &'a [(String, String)], k: &str) -> &'a str {
    row.iter()
        .find(|(c, _)| c == k)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no column {k} in {row:?}"))
}
