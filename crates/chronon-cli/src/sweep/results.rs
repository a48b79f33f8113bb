//! A study's results, made from its finished runs' reports: `runs.csv` (a row per run),
//! `summary.csv` and `summary.md` (per point and statistic: n, mean, standard deviation, 95 %
//! interval) and `plots/<statistic>-vs-<parameter>.svg`. Everything is derived from `runs/`,
//! so `chronon report DIR` can write it again and a resumed study ends with the same files.

use std::path::Path;

use serde_json::Value;

use super::spec::Point;
use super::stats::Summary;
use crate::output::write_atomic;
use crate::Failure;

/// The figures of every run besides the model's statistics.
pub(crate) const RUN_STATS: &[&str] = &["committed", "wall_s", "events_per_s"];

/// One finished run.
pub(crate) struct Row {
    pub point: usize,
    pub rep: u64,
    pub seed: u64,
    pub report: Value,
}

/// What the results are made of.
pub(crate) struct Table<'a> {
    pub points: &'a [Point],
    /// The swept flags, in order.
    pub swept: Vec<String>,
    pub rows: Vec<Row>,
    /// Statistic names: the model's (in the order its reports list them), then [`RUN_STATS`].
    pub stats: Vec<String>,
    /// `summaries[point][statistic]`, in the order of `stats`.
    summaries: Vec<Vec<Summary>>,
}

/// A statistic's value in a report (NaN when absent or not a number).
pub(crate) fn stat(report: &Value, name: &str) -> f64 {
    let v = if RUN_STATS.contains(&name) {
        &report[name]
    } else {
        &report["model_stats"][name]
    };
    v.as_f64().unwrap_or(f64::NAN)
}

/// The model statistics named in `report`.
pub(crate) fn model_stat_names(report: &Value) -> Vec<String> {
    report["model_stats"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

impl<'a> Table<'a> {
    pub(crate) fn new(points: &'a [Point], swept: Vec<String>, rows: Vec<Row>) -> Table<'a> {
        let mut stats: Vec<String> = Vec::new();
        for r in &rows {
            for name in model_stat_names(&r.report) {
                if !stats.contains(&name) {
                    stats.push(name);
                }
            }
        }
        stats.extend(RUN_STATS.iter().map(|s| s.to_string()));
        // Each statistic's values at each point, in one pass over the rows.
        let mut values = vec![vec![Vec::new(); stats.len()]; points.len()];
        for r in &rows {
            for (i, s) in stats.iter().enumerate() {
                values[r.point][i].push(stat(&r.report, s));
            }
        }
        let summaries = values
            .iter()
            .map(|per_stat| per_stat.iter().map(|xs| Summary::of(xs)).collect())
            .collect();
        Table {
            points,
            swept,
            rows,
            stats,
            summaries,
        }
    }

    /// The summary of `stat` at `point` (n = 0 for a statistic the table does not have).
    pub(crate) fn summary(&self, point: usize, stat_name: &str) -> Summary {
        match self.stats.iter().position(|s| s == stat_name) {
            Some(i) => self.summaries[point][i],
            None => Summary::of(&[]),
        }
    }

    fn runs_csv(&self) -> String {
        let mut out = String::new();
        let mut header = vec!["point".to_string(), "replication".into(), "seed".into()];
        header.extend(self.swept.iter().cloned());
        header.extend(self.stats.iter().cloned());
        header.push("fingerprint".into());
        out.push_str(&csv_line(&header));
        for r in &self.rows {
            let mut cells = vec![r.point.to_string(), r.rep.to_string(), r.seed.to_string()];
            cells.extend(self.points[r.point].params.iter().map(|(_, v)| v.clone()));
            cells.extend(self.stats.iter().map(|s| number(stat(&r.report, s))));
            cells.push(fingerprint(&r.report));
            out.push_str(&csv_line(&cells));
        }
        out
    }

    fn summary_csv(&self) -> String {
        let mut header = vec!["point".to_string()];
        header.extend(self.swept.iter().cloned());
        header.extend(
            ["statistic", "n", "mean", "sd", "ci95_low", "ci95_high"]
                .iter()
                .map(|s| s.to_string()),
        );
        let mut out = csv_line(&header);
        for (p, point) in self.points.iter().enumerate() {
            for s in &self.stats {
                let sum = self.summary(p, s);
                let mut cells = vec![p.to_string()];
                cells.extend(point.params.iter().map(|(_, v)| v.clone()));
                cells.extend([
                    s.clone(),
                    sum.n.to_string(),
                    number(sum.mean),
                    number(sum.sd),
                    number(sum.lo()),
                    number(sum.hi()),
                ]);
                out.push_str(&csv_line(&cells));
            }
        }
        out
    }

    fn summary_md(&self, title: &str) -> String {
        let mut out = format!("# {title}\n\n");
        for (p, point) in self.points.iter().enumerate() {
            let params = if point.params.is_empty() {
                "every run".to_string()
            } else {
                point
                    .params
                    .iter()
                    .map(|(k, v)| format!("--{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            out.push_str(&format!("## Point {p}: {params}\n\n"));
            out.push_str(
                "| statistic | n | mean | sd | 95 % interval |\n|---|---:|---:|---:|---|\n",
            );
            for s in &self.stats {
                let sum = self.summary(p, s);
                let ci = if sum.half.is_finite() {
                    format!("[{}, {}]", short(sum.lo()), short(sum.hi()))
                } else {
                    "–".to_string()
                };
                out.push_str(&format!(
                    "| {s} | {} | {} | {} | {ci} |\n",
                    sum.n,
                    short(sum.mean),
                    short(sum.sd)
                ));
            }
            out.push('\n');
        }
        out
    }

    /// Writes `runs.csv`, `summary.csv`, `summary.md` and the plots of `plot` (the meaningful
    /// statistics when empty, see [`plotted_by_default`]; every one for `all`) into `dir`; the
    /// files written.
    pub(crate) fn write(
        &self,
        dir: &Path,
        title: &str,
        plot: &[String],
    ) -> Result<Vec<String>, Failure> {
        let mut written = Vec::new();
        let mut put = |name: &str, text: String| -> Result<(), Failure> {
            let p = dir.join(name);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).map_err(|e| {
                    Failure::runtime(format!("cannot create {}: {e}", parent.display()))
                })?;
            }
            write_atomic(&p, text.as_bytes())
                .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", p.display())))?;
            written.push(name.to_string());
            Ok(())
        };
        put("runs.csv", self.runs_csv())?;
        put("summary.csv", self.summary_csv())?;
        put("summary.md", self.summary_md(title))?;
        let chosen: Vec<&String> = match plot {
            [] => self
                .stats
                .iter()
                .filter(|s| plotted_by_default(s))
                .collect(),
            [all] if all == PLOT_ALL => self.stats.iter().collect(),
            _ => self.stats.iter().filter(|s| plot.contains(s)).collect(),
        };
        // A program built without the `plots` feature writes the tables only.
        for s in chosen.into_iter().filter(|_| cfg!(feature = "plots")) {
            for (i, param) in self.swept.iter().enumerate() {
                if let Some(svg) = super::plot::draw(self, s, i)? {
                    put(&format!("plots/{}-vs-{param}.svg", file_part(s)), svg)?;
                }
            }
        }
        Ok(written)
    }
}

/// `--plot all`: a plot of every statistic, the parts of tallies and histograms included.
pub(crate) const PLOT_ALL: &str = "all";

/// Whether a sweep without `--plot` draws statistic `name`: a figure of its own (no `.` part:
/// `committed`, a model's `set`/`add` figure) or a mean (`wait.mean`, `queue.mean`), not the
/// parts a tally or histogram is made of (`.n`, `.sum`, `.sum_sq`, `.min`, `.max`, `.sd`,
/// `.area`, `.time`, `.bin3`, ...).
pub(crate) fn plotted_by_default(name: &str) -> bool {
    match name.rsplit_once('.') {
        None => true,
        Some((_, part)) => part == "mean",
    }
}

/// A name fit for a file name.
fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn fingerprint(report: &Value) -> String {
    match &report["fingerprint"] {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// A number for a CSV cell: empty when not finite, else in full precision.
fn number(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

/// A number for a table: 6 significant digits.
fn short(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if x != 0.0 && (x.abs() >= 1e7 || x.abs() < 1e-4) {
        return format!("{x:.5e}");
    }
    let digits = (5 - x.abs().log10().floor().max(0.0) as i32).max(0) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn csv_line(cells: &[String]) -> String {
    let quoted: Vec<String> = cells
        .iter()
        .map(|c| {
            if c.contains([',', '"', '\n']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.clone()
            }
        })
        .collect();
    quoted.join(",") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_short_in_tables_and_whole_in_csv() {
        assert_eq!(short(1.23456789), "1.23457");
        assert_eq!(short(1234.5678), "1234.57");
        assert_eq!(short(2.0), "2");
        assert_eq!(short(f64::NAN), "–");
        assert_eq!(number(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(number(f64::NAN), "");
        assert_eq!(csv_line(&["a,b".into(), "c".into()]), "\"a,b\",c\n");
    }

    #[test]
    fn only_means_and_plain_figures_are_plotted_by_default() {
        for yes in ["wait.mean", "committed", "processing_mean_wait", "q.x.mean"] {
            assert!(plotted_by_default(yes), "{yes}");
        }
        for no in [
            "wait.sum_sq",
            "wait.min",
            "wait.n",
            "wait.sd",
            "q.area",
            "h.bin0",
        ] {
            assert!(!plotted_by_default(no), "{no}");
        }
    }
}
