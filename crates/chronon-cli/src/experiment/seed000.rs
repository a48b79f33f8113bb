//! Seed 000 (zero-copy message passing between processes, §4.1–4.2): Fig. 7, SimpleSim run
//! time vs payload size with the zero-copy transport (`BPtr`s into the sender's shared heap)
//! and the copy transport (`--payload copy`: each payload copied out of the sender's item and
//! into a new item of the receiver's heap, what an MPI implementation does inside one
//! machine); Fig. 8, SimpleSim at 7 000 bytes over 2, 4 and 8 processes; Fig. 9, the
//! star-of-stars network over 2, 4 and 8 processes. Every figure also has the seed's MPI
//! line when this binary was built with `--features mpi` and `mpirun` is on PATH: the same
//! model over as many MPI ranks of one thread as the other lines have processes (`mpirun -n
//! R chronon run MODEL ...`); every line's fingerprint is checked equal. Without the
//! feature the table and figure say the line needs it. Boost.Interprocess is not here.
//!
//! SimpleSim's payloads are written (`--touch write`: the sender writes every byte, the
//! receiver reads and checks them): an untouched payload would cross MPI ranks as its length
//! only, so only written bytes make the MPI line pay for them as the seed's MPI version did.
//! Every line pays the same model work per byte.
//!
//! Scaling to this machine: the seed ran 8 processes on 8+ cores for 25 000 simulated seconds
//! (SimpleSim) and 5 000 (GTNetS). Fig. 7 runs 2 processes (this machine has 2 cores; 8 LPs, 4
//! per process) for 100 simulated seconds (30 with `--quick`): a written 50 000-byte payload
//! costs ~0.4 ms of model work per event here; Fig. 8 the same time; Fig. 9
//! 200 simulated seconds (20 with `--quick`); Figs. 8 and 9 oversubscribe the 2 cores with 4
//! and 8 processes. Queue bound 5 000 and lookahead 5 as in the seed.

use serde_json::Value;

use super::{
    fingerprint48, md_table, mpi_missing, num, run_metrics, Metrics, Point, Rendered, Results,
    Settings,
};
use crate::report::plot::{figure, Panel, Series};
use crate::Failure;

/// Fig. 7's processes on this machine (the seed: 8).
const FIG7_PROCS: &str = "2";
const TRANSPORTS: [&str; 2] = ["zero-copy", "copy"];
const SIZES: [&str; 8] = [
    "500", "1000", "2000", "3000", "5000", "10000", "20000", "50000",
];
const QUICK_SIZES: [&str; 3] = ["500", "5000", "50000"];
const PROCS: [&str; 3] = ["2", "4", "8"];

/// `chronon run MODEL ARGS` under the window protocol on `procs` worker processes of one thread
/// each, payloads passed by `transport`: what every point of Figs. 7-9 runs.
fn procs_run(model: &[&str], procs: &str, transport: &str) -> Vec<String> {
    let mut args = vec!["run"];
    args.extend_from_slice(model);
    args.extend([
        "--sync",
        "window",
        "--threads",
        "1",
        "--procs",
        procs,
        "--payload",
        transport,
        "--stall-secs",
        "0",
    ]);
    args.into_iter().map(String::from).collect()
}

/// The MPI line's transport name (a point run under `mpirun`).
const MPI: &str = "mpi";

/// `chronon run MODEL ARGS` under the window protocol over MPI ranks of one thread each (the
/// ranks come from `mpirun -n R`).
fn ranks_run(model: &[&str]) -> Vec<String> {
    let mut args = vec!["run"];
    args.extend_from_slice(model);
    args.extend(["--sync", "window", "--threads", "1", "--stall-secs", "0"]);
    args.into_iter().map(String::from).collect()
}

/// The report's run metrics and the top 48 bits of its fingerprint (every line of one cell must
/// commit the same history).
pub(super) fn extract(v: &Value) -> Metrics {
    let mut m = run_metrics(v);
    if let Some(fp) = v
        .get("fingerprint")
        .and_then(Value::as_str)
        .and_then(fingerprint48)
    {
        m.push(("fingerprint48", fp));
    }
    m
}

/// Simulated seconds of the SimpleSim runs (Figs. 7-8).
fn simplesim_end(s: &Settings) -> &'static str {
    if s.quick {
        "30"
    } else {
        "100"
    }
}

/// SimpleSim with written payloads (`--touch write`: the sender writes every byte, the
/// receiver reads them and checks their sum), so that the copy transport and the MPI batches
/// carry the bytes, as the seed's MPI version copied its payloads.
fn simplesim_model(s: &Settings, lps: &str, bytes: &str) -> Vec<String> {
    let end = simplesim_end(s);
    [
        "simplesim",
        "--lps",
        lps,
        "--queue-bound",
        "5000",
        "--lookahead",
        "5",
        "--payload-bytes",
        bytes,
        "--touch",
        "write",
        "--end",
        end,
    ]
    .into_iter()
    .map(String::from)
    .collect()
}

fn simplesim(s: &Settings, lps: &str, bytes: &str, procs: &str, transport: &str) -> Vec<String> {
    let model = simplesim_model(s, lps, bytes);
    let model: Vec<&str> = model.iter().map(String::as_str).collect();
    if transport == MPI {
        return ranks_run(&model);
    }
    procs_run(&model, procs, transport)
}

/// [`transport_sweep`] plus, where this binary can launch MPI ranks, the MPI line: per value,
/// `args(value, "mpi")` under `mpirun -n ranks(value)`.
fn sweep_with_mpi(
    key: &'static str,
    values: &[&str],
    args: impl Fn(&str, &str) -> Vec<String>,
    ranks: impl Fn(&str) -> usize,
) -> Vec<Point> {
    let mut out = Vec::new();
    for v in values {
        out.extend(transport_sweep(key, &[v], &args));
        if mpi_missing().is_none() {
            let a = args(v, MPI);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            out.push(Point::new(&[(key, v), ("transport", MPI)], &a).under_mpirun(ranks(v)));
        }
    }
    out
}

/// What the MPI line's cells say when the sweep has no MPI points.
fn mpi_absent() -> String {
    mpi_missing().unwrap_or_else(|| "not measured in this sweep".into())
}

/// A check that every line of each value of `key` committed the same history: a sentence for
/// the table (and a warning on stderr when they differ).
fn same_history(r: &Results, key: &str) -> String {
    let mut differs = Vec::new();
    let mut checked = 0;
    for v in r.values(key) {
        let fps: Vec<f64> = [TRANSPORTS[0], TRANSPORTS[1], MPI]
            .iter()
            .map(|t| r.get(&[(key, &v), ("transport", t)], "fingerprint48"))
            .filter(|f| !f.is_nan())
            .collect();
        if fps.len() > 1 {
            checked += 1;
            if fps.iter().any(|f| *f != fps[0]) {
                differs.push(v);
            }
        }
    }
    if !differs.is_empty() {
        eprintln!("warning: the lines' fingerprints differ at {key} {differs:?}");
        return format!(
            "**The lines' fingerprints differ at {key} {}: a determinism bug.**",
            differs.join(", ")
        );
    }
    if checked == 0 {
        return String::new();
    }
    "Every line of each cell committed the same history (equal fingerprints).".into()
}

/// One point per value of `key` and per transport, measured by `args(value, transport)`.
fn transport_sweep(
    key: &'static str,
    values: &[&str],
    args: &impl Fn(&str, &str) -> Vec<String>,
) -> Vec<Point> {
    let mut out = Vec::new();
    for v in values {
        for t in TRANSPORTS {
            let a = args(v, t);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            out.push(Point::new(&[(key, v), ("transport", t)], &a));
        }
    }
    out
}

/// The process counts of Figs. 8 and 9.
fn procs(s: &Settings) -> &'static [&'static str] {
    if s.quick {
        &PROCS[..2]
    } else {
        &PROCS
    }
}

pub(super) fn fig7_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let sizes: &[&str] = if s.quick { &QUICK_SIZES } else { &SIZES };
    Ok(sweep_with_mpi(
        "bytes",
        sizes,
        |bytes, t| simplesim(s, "8", bytes, FIG7_PROCS, t),
        |_| FIG7_PROCS.parse().unwrap_or(2),
    ))
}

/// Where copy's run time line crosses zero copy's, from below (linear interpolation between
/// the sizes measured): `Crossing::At`, or `Always` if copy is slower from the smallest size
/// on, or `Never`.
#[derive(Debug, PartialEq)]
enum Crossing {
    At(f64),
    Always,
    Never,
}

fn crossover(pts: &[(f64, f64, f64)]) -> Crossing {
    // (bytes, zero-copy s, copy s), sorted by bytes.
    if pts.first().is_some_and(|p| p.2 > p.1) {
        return Crossing::Always;
    }
    for w in pts.windows(2) {
        let (d0, d1) = (w[0].2 - w[0].1, w[1].2 - w[1].1);
        if d0 <= 0.0 && d1 > 0.0 {
            return Crossing::At(w[0].0 + (w[1].0 - w[0].0) * (-d0) / (d1 - d0));
        }
    }
    Crossing::Never
}

pub(super) fn fig7_render(s: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let mut rows = Vec::new();
    let mut pts = Vec::new();
    let mut mpi = Vec::new();
    let absent = mpi_absent();
    for bytes in r.values("bytes") {
        let z = r.get(&[("bytes", &bytes), ("transport", "zero-copy")], "wall_s");
        let c = r.get(&[("bytes", &bytes), ("transport", "copy")], "wall_s");
        let m = r.get(&[("bytes", &bytes), ("transport", MPI)], "wall_s");
        let x = bytes.parse::<f64>().unwrap_or(f64::NAN);
        let mut row = vec![bytes.clone(), num(z), num(c), num(c / z)];
        row.extend(mpi_cells(m, z, &absent));
        rows.push(row);
        pts.push((x, z, c));
        if !m.is_nan() {
            mpi.push((x, m));
        }
    }
    mpi.sort_by(|a, b| a.0.total_cmp(&b.0));
    let history = same_history(r, "bytes");
    let mpi_note = mpi_note(&mpi, &absent, FIG7_PROCS);
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let flat = match (pts.first(), pts.last()) {
        (Some(a), Some(b)) if pts.len() > 1 => format!(
            "zero copy at {} B takes {}× its time at {} B; copy {}×.",
            b.0,
            num(b.1 / a.1),
            a.0,
            num(b.2 / a.2)
        ),
        _ => String::new(),
    };
    let cross = match crossover(&pts) {
        Crossing::At(x) => format!(
            "Copy becomes slower than zero copy at about {} bytes (the seed: ~3 000).",
            num(x)
        ),
        Crossing::Always => format!(
            "Copy is slower than zero copy at every size measured, from {} bytes: no \
             crossover in this sweep (the seed: ~3 000 bytes).",
            pts.first().map_or(0.0, |p| p.0)
        ),
        Crossing::Never => "Copy never became slower than zero copy in this sweep.".into(),
    };
    let end = simplesim_end(s);
    let table = format!(
        "SimpleSim, 8 LPs over {FIG7_PROCS} worker processes of 1 thread (the seed: 8 \
         processes), window protocol, queue bound 5 000, lookahead 5, end {end} simulated \
         seconds (the seed: 25 000), written payloads (`--touch write`: the sender writes \
         every byte, the receiver reads them; the seed's were uninitialized, which our MPI \
         transport would not carry); run time (wall s, initialization \
         excluded) of the zero-copy transport (a `BPtr` into the sender's shared heap crosses \
         the ring) and the copy transport (`--payload copy`: the payload is copied into a new \
         item on send and into the receiver's heap on receive). {flat} {cross} {mpi_note} \
         {history} The seed's Boost.Interprocess version is not measured.\n\n{}",
        md_table(
            &[
                "payload bytes".into(),
                "zero copy s".into(),
                "copy s".into(),
                "copy / zero copy".into(),
                "MPI s".into(),
                "MPI / zero copy".into(),
            ],
            &rows
        )
    );
    let svg = figure(
        "Seed 000 Fig. 7: SimpleSim run time vs payload size",
        &[Panel::Lines {
            title: format!(
                "8 LPs, {FIG7_PROCS} processes, end {end}{}",
                mpi_title(&mpi, &absent)
            ),
            x: "payload (bytes)".into(),
            y: "run time (s)".into(),
            series: with_mpi(
                vec![
                    Series::new("zero copy (BPtr)", pts.iter().map(|p| (p.0, p.1)).collect()),
                    Series::new("copy", pts.iter().map(|p| (p.0, p.2)).collect()),
                ],
                mpi,
                FIG7_PROCS,
            ),
        }],
    )?;
    Ok(Rendered { table, figure: svg })
}

pub(super) fn fig8_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    // One LP per process, as in the seed's Fig. 8.
    Ok(sweep_with_mpi(
        "procs",
        procs(s),
        |p, t| simplesim(s, p, "7000", p, t),
        |p| p.parse().unwrap_or(2),
    ))
}

/// The MPI cells of a row: its run time and its ratio to zero copy's, or the reason the line
/// is missing.
fn mpi_cells(m: f64, z: f64, absent: &str) -> Vec<String> {
    if m.is_nan() {
        vec![absent.to_string(), absent.to_string()]
    } else {
        vec![num(m), num(m / z)]
    }
}

/// The table's sentence on the MPI line.
fn mpi_note(mpi: &[(f64, f64)], absent: &str, ranks: &str) -> String {
    match (mpi.first(), mpi.last()) {
        (Some(a), Some(b)) if mpi.len() > 1 => format!(
            "The MPI line (`mpirun -n {ranks}`, ranks of 1 thread, the MPI transport's \
             serialized batches, which carry every written payload byte) at its \
             last point takes {}× its time at its first.",
            num(b.1 / a.1)
        ),
        (Some(_), _) => "The MPI line ran over `mpirun` ranks of 1 thread.".into(),
        _ => format!("The MPI line is not measured here: it {absent}."),
    }
}

/// The figure title's note on a missing MPI line.
fn mpi_title(mpi: &[(f64, f64)], absent: &str) -> String {
    if mpi.is_empty() {
        format!(" (MPI line: {absent})")
    } else {
        String::new()
    }
}

/// `series` with the MPI line when it has points.
fn with_mpi(mut series: Vec<Series>, mpi: Vec<(f64, f64)>, ranks: &str) -> Vec<Series> {
    if !mpi.is_empty() {
        series.push(Series::new(format!("MPI ({ranks} ranks)"), mpi));
    }
    series
}

/// A line's (x, y) points.
type Line = Vec<(f64, f64)>;

/// Rows (ending with the MPI cells) and lines over the process counts.
fn process_sweep(r: &Results) -> (Vec<Vec<String>>, Vec<Series>, Line) {
    let mut rows = Vec::new();
    let mut z = Vec::new();
    let mut c = Vec::new();
    let mut mpi = Vec::new();
    let absent = mpi_absent();
    for p in r.values("procs") {
        let zs = r.get(&[("procs", &p), ("transport", "zero-copy")], "wall_s");
        let cs = r.get(&[("procs", &p), ("transport", "copy")], "wall_s");
        let ms = r.get(&[("procs", &p), ("transport", MPI)], "wall_s");
        let mut row = vec![p.clone(), num(zs), num(cs), num(cs / zs)];
        row.extend(mpi_cells(ms, zs, &absent));
        rows.push(row);
        let x = p.parse::<f64>().unwrap_or(f64::NAN);
        z.push((x, zs));
        c.push((x, cs));
        if !ms.is_nan() {
            mpi.push((x, ms));
        }
    }
    (
        rows,
        vec![Series::new("zero copy (BPtr)", z), Series::new("copy", c)],
        mpi,
    )
}

fn header() -> Vec<String> {
    vec![
        "processes".into(),
        "zero copy s".into(),
        "copy s".into(),
        "copy / zero copy".into(),
        "MPI s".into(),
        "MPI / zero copy".into(),
    ]
}

pub(super) fn fig8_render(s: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let (rows, series, mpi) = process_sweep(r);
    let absent = mpi_absent();
    let history = same_history(r, "procs");
    let mpi_note = mpi_note(&mpi, &absent, "R");
    let end = simplesim_end(s);
    let table = format!(
        "SimpleSim with 7 000-byte written payloads, one LP per worker process (1 thread \
         each), window protocol, queue bound 5 000, lookahead 5, end {end} simulated seconds \
         (the seed: 25 000); 4 and 8 processes oversubscribe this machine's 2 cores. Run time \
         (wall s) of the zero-copy and the copy transport, and of MPI over R ranks for R \
         processes. {mpi_note} {history}\n\n{}",
        md_table(&header(), &rows)
    );
    let svg = figure(
        "Seed 000 Fig. 8: SimpleSim (7 000 B) run time vs processes",
        &[Panel::Lines {
            title: format!("one LP per process, end {end}{}", mpi_title(&mpi, &absent)),
            x: "processes (MPI: ranks)".into(),
            y: "run time (s)".into(),
            series: with_mpi(series, mpi, "R"),
        }],
    )?;
    Ok(Rendered { table, figure: svg })
}

pub(super) fn fig9_plan(s: &Settings) -> Result<Vec<Point>, Failure> {
    let end = if s.quick { "20" } else { "200" };
    // One star per process (MPI: per rank), as in the seed (a block mapping puts star s on
    // process s).
    Ok(sweep_with_mpi(
        "procs",
        procs(s),
        |p, t| {
            let model = ["star-clique", "--stars", p, "--end", end];
            if t == MPI {
                ranks_run(&model)
            } else {
                procs_run(&model, p, t)
            }
        },
        |p| p.parse().unwrap_or(2),
    ))
}

pub(super) fn fig9_render(s: &Settings, r: &Results) -> Result<Rendered, Failure> {
    let (rows, series, mpi) = process_sweep(r);
    let absent = mpi_absent();
    let history = same_history(r, "procs");
    let mpi_note = mpi_note(&mpi, &absent, "R");
    let end = if s.quick { "20" } else { "200" };
    let table = format!(
        "Star-of-stars UDP network (one star of P−1 leaves per worker process, hubs in a \
         clique, 1 024-byte packets at 20 % load with on/off sources), window protocol, end \
         {end} simulated seconds (the seed: 5 000). Each packet carries its data as a `BPtr` to \
         a header item holding a `BPtr` to the bytes (two items, as a packet holds its PDUs); \
         the copy transport copies both; over MPI ranks each packet crossing ranks is \
         serialized with both items' bytes. Run time (wall s). {mpi_note} {history}\n\n{}",
        md_table(&header(), &rows)
    );
    let svg = figure(
        "Seed 000 Fig. 9: star-of-stars network run time vs processes",
        &[Panel::Lines {
            title: format!(
                "one star per process, end {end}{}",
                mpi_title(&mpi, &absent)
            ),
            x: "processes (MPI: ranks)".into(),
            y: "run time (s)".into(),
            series: with_mpi(series, mpi, "R"),
        }],
    )?;
    Ok(Rendered { table, figure: svg })
}

#[cfg(test)]
mod tests {
    use super::{
        crossover, fig7_plan, fig8_plan, fig9_plan, mpi_missing, Crossing, Point, Settings,
    };

    #[test]
    fn the_three_plans_share_the_window_run_over_processes() {
        let s = Settings {
            quick: true,
            threads: None,
            reps: 1,
            cores: 2,
            configs: None,
            splits: Vec::new(),
        };
        let mpi = mpi_missing().is_none();
        // The points over processes (zero copy, copy) and over MPI ranks (where this binary
        // can launch them), each line's points in sweep order.
        let split = |pts: Vec<Point>| -> (Vec<Point>, Vec<Point>) {
            pts.into_iter().partition(|p| p.param("transport") != "mpi")
        };
        let tail = "--sync window --threads 1 --procs 2 --payload copy --stall-secs 0";
        let (f9, m9) = split(fig9_plan(&s).unwrap());
        assert_eq!(f9.len(), 4, "2 and 4 processes, 2 transports");
        assert_eq!(
            f9[1].args.join(" "),
            format!("run star-clique --stars 2 --end 20 {tail}")
        );
        assert_eq!(
            f9[1].params,
            [("procs", "2".into()), ("transport", "copy".into())]
        );
        assert!(f9.iter().all(|p| p.ranks.is_none()));
        assert_eq!(m9.len(), if mpi { 2 } else { 0 }, "Fig. 9's MPI line");
        if mpi {
            assert_eq!(
                m9[1].args.join(" "),
                "run star-clique --stars 4 --end 20 --sync window --threads 1 --stall-secs 0"
            );
            assert_eq!(m9[1].ranks, Some(4));
        }
        let model = "run simplesim --lps 2 --queue-bound 5000 --lookahead 5 --payload-bytes 7000 \
                     --touch write --end 30";
        let (f8, m8) = split(fig8_plan(&s).unwrap());
        assert_eq!(f8[1].args.join(" "), format!("{model} {tail}"));
        assert_eq!(m8.len(), if mpi { 2 } else { 0 }, "Fig. 8's MPI line");
        if mpi {
            let ranks = "--sync window --threads 1 --stall-secs 0";
            assert_eq!(m8[0].args.join(" "), format!("{model} {ranks}"));
            assert_eq!(m8[0].ranks, Some(2));
        }
        let (f7, m7) = split(fig7_plan(&s).unwrap());
        assert_eq!(f7.len(), 6);
        assert_eq!(
            f7[5].params,
            [("bytes", "50000".into()), ("transport", "copy".into())]
        );
        assert!(f7[5].args.join(" ").ends_with(tail));
        assert!(f7[5].args.join(" ").contains("--touch write"));
        assert_eq!(m7.len(), if mpi { 3 } else { 0 }, "Fig. 7's MPI line");
        assert!(m7.iter().all(|p| p.ranks == Some(2)));
    }

    #[test]
    fn crossover_interpolates_where_copy_overtakes() {
        let pts = [(500.0, 1.0, 0.8), (1500.0, 1.0, 1.2), (5000.0, 1.0, 3.0)];
        assert_eq!(crossover(&pts), Crossing::At(1000.0));
        assert_eq!(crossover(&[(500.0, 1.0, 2.0)]), Crossing::Always);
        let never = [(500.0, 1.0, 0.5), (900.0, 1.0, 0.9)];
        assert_eq!(crossover(&never), Crossing::Never);
    }
}
