//! Running an experiment's sweep: every measurement in its own child process (this binary,
//! re-executed), repetitions interleaved (point 1, point 2, ..., point 1, point 2, ...) so that a
//! burst of load from elsewhere hits every point alike; then the raw CSV.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::Failure;

/// One measurement of the sweep: its parameters (CSV columns) and the arguments of the child
/// process that measures it. The child writes a JSON report to the path given after
/// `--output`, which the runner appends.
#[derive(Clone, Debug)]
pub(crate) struct Point {
    pub params: Vec<(&'static str, String)>,
    pub args: Vec<String>,
    /// `Some(R)`: the child runs as `mpirun -n R chronon ARGS` (R MPI ranks), not directly.
    pub ranks: Option<usize>,
}

impl Point {
    /// A point with `params` measured by `chronon ARGS`.
    pub(crate) fn new(params: &[(&'static str, &str)], args: &[&str]) -> Point {
        Point {
            params: params.iter().map(|(k, v)| (*k, v.to_string())).collect(),
            args: args.iter().map(|a| a.to_string()).collect(),
            ranks: None,
        }
    }

    /// The same point measured over `ranks` MPI ranks (`mpirun -n RANKS chronon ARGS`).
    pub(crate) fn under_mpirun(mut self, ranks: usize) -> Point {
        self.ranks = Some(ranks);
        self
    }

    /// The value of parameter `key` ("" when the point has none).
    pub(crate) fn param(&self, key: &str) -> &str {
        self.params
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// The metrics of one measurement, by name.
pub(crate) type Metrics = Vec<(&'static str, f64)>;

/// Every point with its repetitions' metrics.
#[derive(Debug)]
pub(crate) struct Results {
    pub points: Vec<Point>,
    /// `samples[point][rep]`.
    pub samples: Vec<Vec<Metrics>>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| !x.is_nan());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Results {
    /// `metric` at the point whose parameters include every pair of `params`, from that
    /// point's fastest repetition (least `wall_s`: on a shared machine the fastest run is the
    /// one least disturbed, as `chronon bench phold` keeps it); the median where no repetition
    /// has a wall time; NaN when there is no such point.
    pub(crate) fn get(&self, params: &[(&str, &str)], metric: &str) -> f64 {
        let Some(i) = self
            .points
            .iter()
            .position(|p| params.iter().all(|(k, v)| p.param(k) == *v))
        else {
            return f64::NAN;
        };
        let value =
            |m: &Metrics, k: &str| m.iter().find(|(n, _)| *n == k).map_or(f64::NAN, |x| x.1);
        let fastest = self.samples[i]
            .iter()
            .filter(|m| !value(m, "wall_s").is_nan())
            .min_by(|a, b| value(a, "wall_s").total_cmp(&value(b, "wall_s")));
        match fastest {
            Some(m) => value(m, metric),
            None => median(self.samples[i].iter().map(|m| value(m, metric)).collect()),
        }
    }

    /// The results of an earlier sweep, read back from its CSV (the columns before `rep` are
    /// parameters, those after it metrics); the points have no child arguments.
    pub(crate) fn from_csv(text: &str, metric_names: &[&'static str]) -> Result<Results, String> {
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().ok_or("an empty CSV")?.split(',').collect();
        let rep = header
            .iter()
            .position(|h| *h == "rep")
            .ok_or("no `rep` column")?;
        let mut points: Vec<Point> = Vec::new();
        let mut samples: Vec<Vec<Metrics>> = Vec::new();
        for (n, line) in lines.enumerate() {
            let cells: Vec<&str> = line.split(',').collect();
            if cells.len() != header.len() {
                return Err(format!(
                    "line {} has {} cells, not {}",
                    n + 2,
                    cells.len(),
                    header.len()
                ));
            }
            let params: Vec<(&'static str, String)> = header[..rep]
                .iter()
                .zip(&cells)
                .map(|(k, v)| (intern(k, metric_names), v.to_string()))
                .collect();
            let metrics: Metrics = header[rep + 1..]
                .iter()
                .zip(&cells[rep + 1..])
                .map(|(k, v)| (intern(k, metric_names), v.parse().unwrap_or(f64::NAN)))
                .collect();
            let i = match points.iter().position(|p| p.params == params) {
                Some(i) => i,
                None => {
                    points.push(Point {
                        params,
                        args: Vec::new(),
                        ranks: None,
                    });
                    samples.push(Vec::new());
                    points.len() - 1
                }
            };
            samples[i].push(metrics);
        }
        Ok(Results { points, samples })
    }

    /// The distinct values of parameter `key`, in the order of the sweep.
    pub(crate) fn values(&self, key: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.points {
            let v = p.param(key);
            if !v.is_empty() && !out.iter().any(|o| o == v) {
                out.push(v.to_string());
            }
        }
        out
    }

    /// The raw measurements as CSV: the parameters, the repetition, then every metric.
    pub(crate) fn csv(&self) -> String {
        let mut params: Vec<&str> = Vec::new();
        let mut metrics: Vec<&str> = Vec::new();
        for p in &self.points {
            for (k, _) in &p.params {
                if !params.contains(k) {
                    params.push(k);
                }
            }
        }
        for m in self.samples.iter().flatten().flatten() {
            if !metrics.contains(&m.0) {
                metrics.push(m.0);
            }
        }
        let mut out = String::new();
        let header: Vec<&str> = params
            .iter()
            .copied()
            .chain(["rep"])
            .chain(metrics.iter().copied())
            .collect();
        out.push_str(&header.join(","));
        out.push('\n');
        for (p, reps) in self.points.iter().zip(&self.samples) {
            for (r, m) in reps.iter().enumerate() {
                let mut cells: Vec<String> = params.iter().map(|k| csv_cell(p.param(k))).collect();
                cells.push(r.to_string());
                for k in &metrics {
                    cells.push(
                        m.iter()
                            .find(|(n, _)| n == k)
                            .map_or(String::new(), |x| x.1.to_string()),
                    );
                }
                out.push_str(&cells.join(","));
                out.push('\n');
            }
        }
        out
    }
}

/// A column name with a static lifetime: one of `known`, or leaked (a CSV is read once per
/// process, with a handful of columns).
fn intern(name: &str, known: &[&'static str]) -> &'static str {
    known
        .iter()
        .find(|k| **k == name)
        .copied()
        .unwrap_or_else(|| Box::leak(name.to_string().into_boxed_str()))
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The metrics of a `chronon run` report: wall time, events, efficiency (1 for executors that
/// never roll back).
pub(crate) fn run_metrics(v: &Value) -> Metrics {
    let f = |p: &str| v.pointer(p).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let eff = v
        .pointer("/executor_stats/efficiency")
        .and_then(Value::as_f64)
        .unwrap_or(1.0);
    vec![
        ("wall_s", f("/wall_s")),
        ("committed", f("/committed")),
        ("processed", f("/processed")),
        ("rolled_back", f("/rolled_back")),
        ("efficiency", eff),
        ("events_per_s", f("/events_per_s")),
        // `--preempt` runs only (NaN otherwise): switches off the CPU, and ticks acted on.
        ("preemptions", f("/executor_stats/preemptions")),
        ("ticks_acted_on", f("/executor_stats/ticks_acted_on")),
        // Those of the preemptions a tick made by interrupting a handler's own code.
        (
            "preempt_interrupts",
            f("/executor_stats/preempt_interrupts"),
        ),
    ]
}

/// Runs every point `reps` times, interleaved, each in a child process whose report goes to
/// `runs/`; `extract` reads a report's metrics.
pub(crate) fn sweep(
    points: Vec<Point>,
    reps: u32,
    runs: &Path,
    extract: fn(&Value) -> Metrics,
) -> Result<Results, Failure> {
    let exe = crate::sys::SelfCommand::this()?;
    let mut samples: Vec<Vec<Metrics>> = vec![Vec::new(); points.len()];
    let total = points.len() * reps as usize;
    let mut done = 0;
    for rep in 0..reps {
        for (i, p) in points.iter().enumerate() {
            done += 1;
            let report: PathBuf = runs.join(format!("p{i:03}-r{rep}.json"));
            let label: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            eprint!("[{done}/{total}] {} ... ", label.join(" "));
            let v = measure(&exe, p, &report)?;
            let m = extract(&v);
            let wall = m
                .iter()
                .find(|(k, _)| *k == "wall_s")
                .map_or(String::new(), |x| format!("{:.3} s", x.1));
            eprintln!("{wall}");
            samples[i].push(m);
        }
    }
    Ok(Results { points, samples })
}

/// Why a point over MPI ranks cannot be measured by this binary (`None`: it can): built
/// without the `mpi` feature, or no `mpirun` on PATH.
pub(crate) fn mpi_missing() -> Option<String> {
    if !chronon::mpi::COMPILED {
        return Some("needs --features mpi".into());
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join("mpirun").is_file()));
    (!on_path).then(|| "needs mpirun on PATH".into())
}

/// The top 48 bits of a 16-hex-digit fingerprint, exact in an `f64` (a CSV column is a number).
pub(crate) fn fingerprint48(hex: &str) -> Option<f64> {
    u64::from_str_radix(hex, 16).ok().map(|x| (x >> 16) as f64)
}

/// One child process: `chronon ARGS --output REPORT` (under `mpirun -n R` for a point over
/// ranks); its report, parsed.
fn measure(exe: &crate::sys::SelfCommand, p: &Point, report: &Path) -> Result<Value, Failure> {
    let args = &p.args;
    let _ = std::fs::remove_file(report);
    let mut cmd = match p.ranks {
        Some(r) => {
            let mut c = Command::new("mpirun");
            c.arg("-n").arg(r.to_string()).args(exe.words());
            c
        }
        None => exe.command(),
    };
    let out = cmd
        .args(args)
        .arg("--output")
        .arg(report)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Failure::runtime(format!("cannot start a measurement: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(Failure::runtime(format!(
            "measurement `chronon {}` failed ({}): {last}",
            args.join(" "),
            out.status
        )));
    }
    let text = std::fs::read_to_string(report)
        .map_err(|e| Failure::runtime(format!("cannot read {}: {e}", report.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Failure::runtime(format!("bad report {}: {e}", report.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_take_the_fastest_rep_and_write_every_rep() {
        let r = Results {
            points: vec![
                Point::new(&[("sync", "seq")], &[]),
                Point::new(&[("sync", "window"), ("threads", "2")], &[]),
            ],
            samples: vec![
                vec![
                    vec![("wall_s", 3.0)],
                    vec![("wall_s", 1.0)],
                    vec![("wall_s", 2.0)],
                ],
                vec![vec![("wall_s", 1.0)], vec![("wall_s", 2.0)]],
            ],
        };
        // The fastest repetition.
        assert_eq!(r.get(&[("sync", "seq")], "wall_s"), 1.0);
        assert_eq!(r.get(&[("sync", "window")], "wall_s"), 1.0);
        assert!(r.get(&[("sync", "lockstep")], "wall_s").is_nan());
        assert_eq!(r.values("threads"), ["2"]);
        let csv = r.csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "sync,threads,rep,wall_s");
        assert_eq!(lines.len(), 6);
        assert_eq!(lines[5], "window,2,1,2");
        let back = Results::from_csv(&csv, &[]).unwrap();
        assert_eq!(back.points.len(), 2);
        assert_eq!(back.samples[0].len(), 3);
        assert_eq!(
            back.get(&[("sync", "window"), ("threads", "2")], "wall_s"),
            1.0
        );
        assert_eq!(back.csv(), csv);
    }
}
