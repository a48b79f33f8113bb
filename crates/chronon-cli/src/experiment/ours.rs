//! chronon's own experiment `ours-phold`: PHOLD std/big/huge on every executor against the bare
//! heap loop (`chronon bench phold` as an experiment). Scaling: scaling.rs.

use super::seed001::PARALLEL;
use super::{md_table, num, Point, Rendered, Results, Settings};
use crate::report::plot::{figure, Bars, Panel};
use crate::Failure;

/// (name, PHOLD flags) of each configuration, full size or quick.
fn configs(quick: bool) -> [(&'static str, [&'static str; 6]); 3] {
    let (std_end, big_end, huge_end) = if quick {
        ("100", "10", "0.2")
    } else {
        ("1000", "100", "10")
    };
    [
        (
            "std",
            ["--lps", "1024", "--start-events", "10", "--end", std_end],
        ),
        (
            "big",
            ["--lps", "16384", "--start-events", "10", "--end", big_end],
        ),
        (
            "huge",
            ["--lps", "65536", "--start-events", "100", "--end", huge_end],
        ),
    ]
}

pub(super) fn executors_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let mut out = Vec::new();
    for (name, flags) in configs(s.quick) {
        let mut bare = vec!["bench", "bare-loop"];
        bare.extend(flags);
        out.push(Point::new(
            &[("config", name), ("runner", "bare heap"), ("threads", "1")],
            &bare,
        ));
        let mut seq = vec!["run", "phold", "--stall-secs", "0"];
        seq.extend(flags);
        out.push(Point::new(
            &[("config", name), ("runner", "seq"), ("threads", "1")],
            &seq,
        ));
        for t in s.parallel_threads() {
            let ts = t.to_string();
            for sync in PARALLEL {
                let mut args = seq.clone();
                args.extend(["--sync", sync, "--threads", &ts]);
                let label = format!("{sync} ×{t}");
                out.push(Point::new(
                    &[("config", name), ("runner", &label), ("threads", &ts)],
                    &args,
                ));
            }
        }
    }
    Ok(out)
}

pub(super) fn executors_render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let names = r.values("config");
    let runners = r.values("runner");
    let rate = |c: &str, run: &str| {
        r.get(&[("config", c), ("runner", run)], "committed")
            / r.get(&[("config", c), ("runner", run)], "wall_s")
    };
    let header: Vec<String> = [
        "config", "runner", "events", "wall s", "events/s", "× bare", "× seq",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for c in &names {
        let (bare, seq) = (rate(c, "bare heap"), rate(c, "seq"));
        for run in &runners {
            let p = [("config", c.as_str()), ("runner", run.as_str())];
            let x = rate(c, run);
            rows.push(vec![
                c.clone(),
                run.clone(),
                num(r.get(&p, "committed")),
                num(r.get(&p, "wall_s")),
                num(x),
                num(x / bare),
                num(x / seq),
            ]);
        }
    }
    let groups: Vec<Bars> = runners
        .iter()
        .map(|run| Bars {
            name: run.clone(),
            values: names
                .iter()
                .map(|c| rate(c, run) / rate(c, "bare heap"))
                .collect(),
        })
        .collect();
    let table = format!(
        "PHOLD (remote 0.1, lookahead 0.1, mean 1) on every executor against the bare \
         binary-heap loop; events/s = committed events per second of execution \
         (initialization excluded).\n\n{}",
        md_table(&header, &rows)
    );
    let svg = figure(
        "PHOLD std / big / huge: every executor against the bare heap loop",
        &[Panel::Grouped {
            title: "events/s relative to the bare heap loop".into(),
            y: "x bare".into(),
            categories: names.clone(),
            groups,
        }],
    )?;
    Ok(Rendered { table, figure: svg })
}
