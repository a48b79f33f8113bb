//! SVG figures drawn with `plotters` (its SVG backend writes text as `<text>` elements, so no
//! font library is needed): the panels of `plot.rs` side by side under a title.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::plot::{Bars, Panel, Series};
use crate::Failure;

const PANEL_W: u32 = 560;
const PANEL_H: u32 = 400;

/// An axis label: short, with k/M/G for large magnitudes.
fn tick(v: &f64) -> String {
    let a = v.abs();
    let (x, unit) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (*v, "")
    };
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

fn err(e: impl std::fmt::Display) -> Failure {
    Failure::runtime(format!("cannot draw the figure: {e}"))
}

/// The figure as an SVG document: `panels` side by side under `title`.
pub(crate) fn figure(title: &str, panels: &[Panel]) -> Result<String, Failure> {
    let n = panels.len().max(1) as u32;
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (PANEL_W * n, PANEL_H + 40)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let root = root
            .titled(title, ("sans-serif", 18).into_font())
            .map_err(err)?;
        let areas = root.split_evenly((1, n as usize));
        for (area, panel) in areas.iter().zip(panels) {
            match panel {
                Panel::Lines {
                    title,
                    x,
                    y,
                    series,
                } => lines(area, title, x, y, series)?,
                Panel::Grouped {
                    title,
                    y,
                    categories,
                    groups,
                } => bars(area, title, y, categories, groups, false)?,
                Panel::Stacked {
                    title,
                    y,
                    categories,
                    layers,
                } => bars(area, title, y, categories, layers, true)?,
                Panel::Heat {
                    title,
                    x,
                    y,
                    columns,
                    row_height,
                } => heat(area, (title, x, y), columns, *row_height)?,
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A range covering `lo..hi` with a margin, never empty.
fn padded(lo: f64, hi: f64, from_zero: bool) -> std::ops::Range<f64> {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    if from_zero {
        lo = lo.min(0.0);
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        // One value: centre it.
        let half = lo.abs().max(1.0) / 2.0;
        if !from_zero {
            lo -= half;
        }
        hi = lo.max(0.0) + 2.0 * half;
    }
    let pad = (hi - lo) * 0.05;
    (if from_zero && lo >= 0.0 { lo } else { lo - pad })..hi + pad
}

fn lines(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
) -> Result<(), Failure> {
    let all = series.iter().flat_map(|s| {
        s.points
            .iter()
            .copied()
            .chain(s.intervals.iter().map(|&(x, _, hi)| (x, hi)))
    });
    let (x0, x1, y1) = all.fold(
        (f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY),
        |(a, b, c), (x, y)| (a.min(x), b.max(x), c.max(y)),
    );
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        // Headroom above the data for the legend (upper left), so it hides no point.
        .build_cartesian_2d(
            padded(x0, x1, false),
            padded(0.0, y1 * (1.0 + 0.1 * series.len().min(6) as f64), true),
        )
        .map_err(err)?;
    // Counts on the x axis (threads, processes): label the whole numbers only.
    let integral = series
        .iter()
        .flat_map(|s| s.points.iter())
        .all(|p| p.0.fract() == 0.0)
        && x1 - x0 <= 64.0;
    let x_tick = move |x: &f64| {
        if integral && x.fract().abs() > 1e-9 {
            String::new()
        } else {
            tick(x)
        }
    };
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&x_tick)
        .y_label_formatter(&tick)
        .draw()
        .map_err(err)?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        if !s.intervals.is_empty() {
            chart
                .draw_series(s.intervals.iter().map(|&(x, lo, hi)| {
                    ErrorBar::new_vertical(x, lo, (lo + hi) / 2.0, hi, color.stroke_width(1), 8)
                }))
                .map_err(err)?;
        }
        // Markers only where the points are few enough to tell apart.
        if s.points.len() <= 40 {
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(err)?;
        }
    }
    if series.iter().any(|s| !s.name.is_empty()) {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

fn bars(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    y_desc: &str,
    categories: &[String],
    groups: &[Bars],
    stacked: bool,
) -> Result<(), Failure> {
    let n = categories.len().max(1);
    let top = (0..n)
        .map(|c| {
            let vals = groups
                .iter()
                .map(|g| g.values.get(c).copied().unwrap_or(f64::NAN))
                .filter(|v| v.is_finite());
            if stacked {
                vals.sum::<f64>()
            } else {
                vals.fold(0.0, f64::max)
            }
        })
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        // Headroom above the bars for the legend.
        .build_cartesian_2d(-0.5..n as f64 - 0.5, padded(0.0, top * 1.3, true))
        .map_err(err)?;
    let cats = categories.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&move |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                cats.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(y_desc)
        .y_label_formatter(&tick)
        .draw()
        .map_err(err)?;
    let k = groups.len().max(1) as f64;
    let mut base = vec![0.0; n];
    for (gi, g) in groups.iter().enumerate() {
        let color = Palette99::pick(gi).to_rgba();
        let mut rects = Vec::new();
        for (c, &v) in g.values.iter().enumerate().take(n) {
            if !v.is_finite() {
                continue;
            }
            let (x0, x1, y0, y1) = if stacked {
                let y0 = base[c];
                base[c] += v;
                (c as f64 - 0.35, c as f64 + 0.35, y0, y0 + v)
            } else {
                let w = 0.8 / k;
                let x0 = c as f64 - 0.4 + w * gi as f64;
                (x0, x0 + w * 0.9, 0.0, v)
            };
            rects.push(Rectangle::new([(x0, y0), (x1, y1)], color.filled()));
        }
        chart
            .draw_series(rects)
            .map_err(err)?
            .label(g.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    if !groups.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// A heat strip: each column's cells from white (nothing) to dark red (the largest value of
/// the panel).
fn heat(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    (title, x_desc, y_desc): (&str, &str, &str),
    columns: &[(f64, f64, Vec<f64>)],
    row_height: f64,
) -> Result<(), Failure> {
    let x0 = columns.iter().map(|c| c.0).fold(f64::INFINITY, f64::min);
    let x1 = columns
        .iter()
        .map(|c| c.1)
        .fold(f64::NEG_INFINITY, f64::max);
    let rows = columns.iter().map(|c| c.2.len()).max().unwrap_or(1).max(1);
    let top = columns
        .iter()
        .flat_map(|c| c.2.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y1 = rows as f64 * row_height;
    let (x0, x1) = if x0 < x1 { (x0, x1) } else { (0.0, 1.0) };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .draw()
        .map_err(err)?;
    let cells = columns.iter().flat_map(|(a, b, values)| {
        values.iter().enumerate().map(move |(r, &v)| {
            let share = if top > 0.0 && v.is_finite() {
                (v / top).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let fade = |full: f64| (255.0 - (255.0 - full) * share) as u8;
            let color = RGBColor(fade(140.0), fade(0.0), fade(0.0));
            let y = r as f64 * row_height;
            Rectangle::new([(*a, y), (*b, y + row_height)], color.filled())
        })
    });
    chart.draw_series(cells).map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(&12_500_000.0), "12.5M");
        assert_eq!(tick(&0.25), "0.25");
        assert_eq!(tick(&20000.0), "20k");
        assert_eq!(tick(&3.0), "3");
    }

    #[test]
    fn a_figure_names_its_series_and_title() {
        let svg = figure(
            "speedup",
            &[
                Panel::Lines {
                    title: "a".into(),
                    x: "threads".into(),
                    y: "speedup".into(),
                    series: vec![Series::new("window", vec![(1.0, 1.0), (2.0, f64::NAN)])],
                },
                Panel::Stacked {
                    title: "b".into(),
                    y: "share".into(),
                    categories: vec!["w0".into(), "w1".into()],
                    layers: vec![Bars {
                        name: "busy".into(),
                        values: vec![0.5, 0.25],
                    }],
                },
            ],
        )
        .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        // The text between tags, trimmed.
        let texts: Vec<&str> = svg
            .split('<')
            .filter_map(|chunk| chunk.split_once('>').map(|(_, t)| t.trim()))
            .collect();
        for word in ["speedup", "window", "threads", "busy", "w1"] {
            assert!(texts.contains(&word), "{word} missing");
        }
    }
}
