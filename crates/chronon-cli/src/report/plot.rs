//! What a figure shows: one or more panels side by side; a panel is a line chart, grouped bars,
//! stacked bars or a heat strip. [`figure`] draws them as SVG (`draw.rs`, feature `plots`); a program built
//! without the feature refuses to draw in one line.

// Without `plots` the panels are built and never drawn.
#![cfg_attr(not(feature = "plots"), allow(dead_code))]

#[cfg(feature = "plots")]
pub(crate) use super::draw::figure;
#[cfg(not(feature = "plots"))]
use crate::Failure;

/// One named series of (x, y) points; points with a non-finite coordinate are left out.
#[derive(Clone, Debug)]
pub(crate) struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Intervals drawn as error bars: (x, low, high).
    pub intervals: Vec<(f64, f64, f64)>,
}

impl Series {
    pub(crate) fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points: points
                .into_iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect(),
            intervals: Vec::new(),
        }
    }

    /// The series with an error bar (x, low, high) at each interval whose bounds are finite.
    pub(crate) fn with_intervals(mut self, intervals: Vec<(f64, f64, f64)>) -> Self {
        self.intervals = intervals
            .into_iter()
            .filter(|(x, lo, hi)| x.is_finite() && lo.is_finite() && hi.is_finite())
            .collect();
        self
    }
}

/// One named group of bar heights, one per category (NaN: no bar).
#[derive(Clone, Debug)]
pub(crate) struct Bars {
    pub name: String,
    pub values: Vec<f64>,
}

/// One chart of a figure.
#[derive(Clone, Debug)]
pub(crate) enum Panel {
    /// Lines with markers.
    Lines {
        title: String,
        x: String,
        y: String,
        series: Vec<Series>,
    },
    /// Bars side by side in each category (the experiments' figures).
    #[cfg_attr(not(feature = "models"), allow(dead_code))]
    Grouped {
        title: String,
        y: String,
        categories: Vec<String>,
        groups: Vec<Bars>,
    },
    /// Bars stacked in each category (shares that add up, for instance).
    Stacked {
        title: String,
        y: String,
        categories: Vec<String>,
        layers: Vec<Bars>,
    },
    /// A heat strip: a cell per (stretch of x, row), darker for a larger value.
    Heat {
        title: String,
        x: String,
        y: String,
        /// Each column's x range and its values, one per row of `row_height` from 0.
        columns: Vec<(f64, f64, Vec<f64>)>,
        row_height: f64,
    },
}

/// Without the `plots` feature there is nothing to draw with.
#[cfg(not(feature = "plots"))]
pub(crate) fn figure(_title: &str, _panels: &[Panel]) -> Result<String, Failure> {
    Err(Failure::bad_input(
        "this program was built without chronon-cli's `plots` feature: it draws no SVG \
         (build it with the feature, or plot runs.csv and the reports with another tool)",
    ))
}
