//! Seed 002 (runtime systems for conservative simulation): Graph 2, speedup of the lock-step
//! protocol over the number of threads on the manufacturing model at the seed's 25 µs of
//! event-handling time. Only the persistent-thread runtime exists; the work-stealing and BSP
//! runtimes wait for issue 13 (and BSP over processes for issue 10).

use super::{md_table, num, Point, Rendered, Results, Settings};
use crate::report::plot::{figure, Panel, Series};
use crate::Failure;

fn base(s: &Settings) -> Vec<&'static str> {
    let mut v = vec![
        "run",
        "manufacturing",
        "--lines",
        "64",
        "--stations-per-line",
        "8",
        "--assembly-stations",
        "16",
        "--testing-stations",
        "16",
        "--work-us",
        "25",
        "--stall-secs",
        "0",
    ];
    // About 250 000 events of 25 µs at full size (~6 s sequential), a tenth with --quick.
    v.extend(if s.quick {
        ["--end", "200"]
    } else {
        ["--end", "2000"]
    });
    v
}

pub(super) fn graph2_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let b = base(s);
    let mut out = vec![Point::new(&[("sync", "seq"), ("threads", "1")], &b)];
    for t in s.threads_or_default() {
        let ts = t.to_string();
        let mut args = b.clone();
        args.extend(["--sync", "lockstep", "--threads", &ts]);
        out.push(Point::new(&[("sync", "lockstep"), ("threads", &ts)], &args));
    }
    Ok(out)
}

pub(super) fn graph2_render(_: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let seq = r.get(&[("sync", "seq")], "wall_s");
    let threads = r.values("threads");
    let mut rows = vec![vec![
        "sequential".to_string(),
        "1".into(),
        num(seq),
        "1.00".into(),
    ]];
    let mut pts = Vec::new();
    for t in &threads {
        let w = r.get(&[("sync", "lockstep"), ("threads", t)], "wall_s");
        if !w.is_finite() {
            continue;
        }
        rows.push(vec![
            "lock-step, threads".into(),
            t.clone(),
            num(w),
            num(seq / w),
        ]);
        pts.push((t.parse().unwrap_or(f64::NAN), seq / w));
    }
    let table = format!(
        "Manufacturing model (64 production lines of 8 processing + 8 control stations, 16 \
         assembly and 16 testing stations), 25 µs of busy work per event as in the seed's \
         Graph 2, under the lock-step protocol on persistent worker threads; wall time \
         (initialization excluded) and speedup over the sequential executor.\n\n{}",
        md_table(
            &[
                "runtime".into(),
                "threads".into(),
                "wall s".into(),
                "speedup".into()
            ],
            &rows
        )
    );
    let svg = figure(
        "Seed 002 Graph 2: speedup vs threads (manufacturing, lock-step)",
        &[Panel::Lines {
            title: "speedup over the sequential simulator".into(),
            x: "threads".into(),
            y: "speedup".into(),
            series: vec![Series::new("threads runtime", pts)],
        }],
    )?;
    Ok(Rendered { table, figure: svg })
}
