//! `heat.svg`: what groups of LPs cost over the stretches of a run in stretches (the report's
//! `lp_heat`, written by runs with `--balance` or checkpoints): where the load was, and when.

use super::plot::Panel;
use super::Loaded;

/// Per report with an `lp_heat` (at most 4), a heat strip: simulated time across, the LP
/// groups up, each cell the group's handler seconds in the stretch.
pub(super) fn heat(reports: &[Loaded]) -> Option<Vec<Panel>> {
    let mut panels = Vec::new();
    for r in reports {
        let Some(h) = r.v.get("lp_heat") else {
            continue;
        };
        let per = h["lps_per_group"].as_f64().unwrap_or(1.0).max(1.0);
        let columns: Vec<(f64, f64, Vec<f64>)> = h["stretches"]
            .as_array()
            .map(|a| a.as_slice())
            .unwrap_or_default()
            .iter()
            .filter_map(|s| {
                let cost: Vec<f64> = s["cost_s"]
                    .as_array()?
                    .iter()
                    .map(|v| v.as_f64().unwrap_or(f64::NAN))
                    .collect();
                Some((s["from"].as_f64()?, s["to"].as_f64()?, cost))
            })
            .collect();
        if columns.is_empty() {
            continue;
        }
        panels.push(Panel::Heat {
            title: format!("{}: LP cost over time", r.label),
            x: "simulated time".into(),
            y: "LP".into(),
            columns,
            row_height: per,
        });
        if panels.len() == 4 {
            break;
        }
    }
    (!panels.is_empty()).then_some(panels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_with_a_heat_strip_gets_a_panel_and_one_without_none() {
        let with = Loaded {
            label: "a".into(),
            v: serde_json::json!({"lp_heat": {"lps_per_group": 4, "stretches": [
                {"from": 0.0, "to": 1.0, "cost_s": [0.5, 0.0]},
                {"from": 1.0, "to": 2.0, "cost_s": [0.0, 0.25]}
            ]}}),
        };
        let without = Loaded {
            label: "b".into(),
            v: serde_json::json!({}),
        };
        assert!(heat(std::slice::from_ref(&without)).is_none());
        let panels = heat(&[without, with]).expect("a panel");
        let [Panel::Heat {
            columns,
            row_height,
            ..
        }] = panels.as_slice()
        else {
            panic!("{panels:?}");
        };
        assert_eq!(*row_height, 4.0);
        assert_eq!(columns[1], (1.0, 2.0, vec![0.0, 0.25]));
    }
}
