//! One SVG per statistic and swept parameter: the statistic's mean against the parameter, a
//! line per combination of the other swept parameters, with each point's 95 % interval drawn as
//! an error bar. A parameter whose values are not all numbers is drawn at positions 1, 2, ...
//! named in the axis title.

use super::results::Table;
use crate::report::plot::{figure, Panel, Series};
use crate::Failure;

/// The figure of `stat` against swept parameter `param` (an index into `table.swept`); `None`
/// when no point has a value of it.
pub(crate) fn draw(table: &Table<'_>, stat: &str, param: usize) -> Result<Option<String>, Failure> {
    let name = &table.swept[param];
    // The parameter's values, in the order the points take them.
    let mut values: Vec<&str> = Vec::new();
    for p in table.points {
        let v = p.params[param].1.as_str();
        if !values.contains(&v) {
            values.push(v);
        }
    }
    let numeric: Option<Vec<f64>> = values.iter().map(|v| v.parse::<f64>().ok()).collect();
    let x_of = |v: &str| -> f64 {
        match &numeric {
            Some(_) => v.parse().unwrap_or(f64::NAN),
            None => values
                .iter()
                .position(|w| *w == v)
                .map_or(f64::NAN, |i| (i + 1) as f64),
        }
    };
    // The other parameters' combinations, each a line: (label, means, intervals).
    type Line = (String, Vec<(f64, f64)>, Vec<(f64, f64, f64)>);
    let mut lines: Vec<Line> = Vec::new();
    for (i, p) in table.points.iter().enumerate() {
        let label: Vec<String> = p
            .params
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != param)
            .map(|(_, (k, v))| format!("{k} {v}"))
            .collect();
        let label = label.join(", ");
        let s = table.summary(i, stat);
        if s.n == 0 || !s.mean.is_finite() {
            continue;
        }
        let x = x_of(&p.params[param].1);
        let at = match lines.iter().position(|l| l.0 == label) {
            Some(at) => at,
            None => {
                lines.push((label, Vec::new(), Vec::new()));
                lines.len() - 1
            }
        };
        lines[at].1.push((x, s.mean));
        if s.half.is_finite() {
            lines[at].2.push((x, s.lo(), s.hi()));
        }
    }
    if lines.is_empty() {
        return Ok(None);
    }
    let series: Vec<Series> = lines
        .into_iter()
        .map(|(label, mut pts, bars)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series::new(label, pts).with_intervals(bars)
        })
        .collect();
    let x_title = match numeric {
        Some(_) => format!("--{name}"),
        None => format!(
            "--{name} ({})",
            values
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{} = {v}", i + 1))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let panel = Panel::Lines {
        title: format!("{stat} (mean, 95 % interval)"),
        x: x_title,
        y: stat.to_string(),
        series,
    };
    figure(&format!("{stat} against --{name}"), &[panel]).map(Some)
}
