//! Time series of a run, sampled from its [`Progress`] by a thread of the CLI: simulated time
//! (the executor's lower bound: LBTS, GVT, or the sequential clock), events processed and
//! events rolled back, over wall time. They go into the report (`progress_series`) and, with
//! `--output DIR/`, into `DIR/progress.csv` with the per-interval event rate. The rollback
//! column is kept only where it is true: where the last sample's count equals the run's
//! `rolled_back` (an executor that rolls back without publishing its rollbacks to `Progress`
//! would otherwise show zeros).
//!
//! This file also writes the run's other series as CSV: the model's global-event series
//! (`DIR/series.csv`) and Time Warp's GVT (`DIR/gvt.csv`).
//!
//! The sampler starts every 10 ms; when it holds [`MAX_SAMPLES`] it drops every other sample
//! and doubles its period, so a run of any length keeps between half and all of that many
//! evenly spaced samples.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chronon::{Progress, Report};

/// The most samples kept.
pub(crate) const MAX_SAMPLES: usize = 1024;

/// One sample: wall seconds since the run started (initialization included), simulated time
/// reached, events processed so far, events rolled back so far.
pub(crate) type Sample = (f64, f64, u64, u64);

/// Reads one sample from `progress`.
fn sample(start: Instant, progress: &Progress) -> Sample {
    (
        start.elapsed().as_secs_f64(),
        progress.now(),
        progress.events(),
        progress.rolled_back(),
    )
}

/// A sampling thread; [`Sampler::finish`] stops it and returns the series.
#[derive(Debug)]
pub(crate) struct Sampler {
    done: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    thread: JoinHandle<()>,
    progress: Arc<Progress>,
    start: Instant,
}

impl Sampler {
    pub(crate) fn start(progress: Arc<Progress>) -> Sampler {
        let done = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let start = Instant::now();
        let thread = {
            let (done, samples, progress) = (done.clone(), samples.clone(), progress.clone());
            std::thread::spawn(move || {
                let mut period = Duration::from_millis(10);
                // Ordering: the flag only tells this thread to stop; it guards no data.
                while !done.load(Ordering::Relaxed) {
                    std::thread::park_timeout(period);
                    let s = sample(start, &progress);
                    let mut v = samples.lock().expect("the sampler never panics holding it");
                    v.push(s);
                    if v.len() >= MAX_SAMPLES {
                        let kept: Vec<Sample> = v.iter().copied().step_by(2).collect();
                        *v = kept;
                        period *= 2;
                    }
                }
            })
        };
        Sampler {
            done,
            samples,
            thread,
            progress,
            start,
        }
    }

    /// Stops the thread; the series with a last sample at the end of the run.
    pub(crate) fn finish(self) -> Vec<Sample> {
        // Ordering: see `start`.
        self.done.store(true, Ordering::Relaxed);
        self.thread.thread().unpark();
        let _ = self.thread.join();
        let mut v = std::mem::take(&mut *self.samples.lock().unwrap_or_else(|e| e.into_inner()));
        v.push(sample(self.start, &self.progress));
        v
    }
}

/// Whether the samples' rollback counts are true for a run that rolled back `rolled_back`
/// events in all: the executor published them (the last sample, taken after the run, holds
/// the total). False for an executor that rolls back without publishing.
pub(crate) fn rollbacks_known(samples: &[Sample], rolled_back: u64) -> bool {
    samples.last().is_some_and(|s| s.3 == rolled_back)
}

/// The report's `progress_series`: `[wall_s, sim_time, events]` per sample, with
/// `rolled_back` as a fourth element where `rollbacks` (see [`rollbacks_known`]).
pub(crate) fn json(samples: &[Sample], rollbacks: bool) -> serde_json::Value {
    samples
        .iter()
        .map(|s| {
            if rollbacks {
                serde_json::json!([s.0, s.1, s.2, s.3])
            } else {
                serde_json::json!([s.0, s.1, s.2])
            }
        })
        .collect()
}

/// The event rate at each of `points` (wall s, events so far). Executors publish their counts
/// in batches, so a small model's count moves every few samples: each sample gets the rate of
/// the span it lies in, from one sample where the count moved to the next (the count's step
/// spread over the time it took), 0 for the first sample and for samples after the last move.
pub(crate) fn rates(points: &[(f64, f64)]) -> Vec<f64> {
    let mut out = vec![0.0; points.len()];
    // `from`: the last sample where the count moved (or the first).
    let mut from = 0;
    for j in 1..points.len() {
        let (t, c) = points[j];
        let (t0, c0) = points[from];
        if c != c0 && t > t0 {
            let rate = (c - c0) / (t - t0);
            out[from + 1..=j].fill(rate);
            from = j;
        }
    }
    out
}

/// The series as CSV: `wall_s,sim_time,events,events_per_s` (the rate of the span the sample
/// lies in, see [`rates`]; 0 for the first), and where `rollbacks` (see [`rollbacks_known`]) also
/// `rolled_back` (so far) and `efficiency` (so far: 1 - rolled_back / events, 1 before any
/// event).
pub(crate) fn csv(samples: &[Sample], rollbacks: bool) -> String {
    let mut out = String::from("wall_s,sim_time,events,events_per_s");
    out.push_str(if rollbacks {
        ",rolled_back,efficiency\n"
    } else {
        "\n"
    });
    let counts: Vec<(f64, f64)> = samples.iter().map(|s| (s.0, s.2 as f64)).collect();
    for (s, rate) in samples.iter().zip(rates(&counts)) {
        out.push_str(&format!("{},{},{},{}", s.0, s.1, s.2, rate));
        if rollbacks {
            let eff = if s.2 == 0 {
                1.0
            } else {
                1.0 - s.3 as f64 / s.2 as f64
            };
            out.push_str(&format!(",{},{eff}", s.3));
        }
        out.push('\n');
    }
    out
}

/// The model's global-event series (`Report::model_series`) as CSV, one row per point:
/// `series,time,value` (the header alone when the model records none).
pub(crate) fn model_csv(report: &Report) -> String {
    let mut out = String::from("series,time,value\n");
    for (name, points) in &report.model_series {
        let name = if name.contains([',', '"', '\n']) {
            format!("\"{}\"", name.replace('"', "\"\""))
        } else {
            name.clone()
        };
        for (t, v) in points {
            out.push_str(&format!("{name},{t},{v}\n"));
        }
    }
    out
}

/// Time Warp's GVT over wall time as CSV: `wall_s,gvt,window`, the window being the optimism
/// window in force at each sample.
pub(crate) fn gvt_csv(report: &Report) -> String {
    // The optimism window in force at each sample: the controller's last change before it, or
    // where it started (the user's `--window`, or `inf`: unbounded).
    let initial = report
        .executor_stats
        .get("window_cap")
        .copied()
        .unwrap_or(f64::INFINITY);
    let mut changes = report.window_series.iter().peekable();
    let mut window = initial;
    let mut text = String::from("wall_s,gvt,window\n");
    for (wall, gvt) in &report.gvt_series {
        while let Some(&(_, w)) = changes.next_if(|&&(t, _)| t <= *wall) {
            window = w;
        }
        text.push_str(&format!("{wall},{gvt},{window}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_published_in_batches_gives_a_steady_rate() {
        // A batch of 100 every other sample: 50 events/s throughout, not 0 and 100 in turn.
        let pts = [
            (0.0, 0.0),
            (1.0, 0.0),
            (2.0, 100.0),
            (3.0, 100.0),
            (4.0, 200.0),
            (5.0, 200.0),
        ];
        assert_eq!(rates(&pts), [0.0, 50.0, 50.0, 50.0, 50.0, 0.0]);
        // A count that moves at every sample: the rate of each interval.
        let pts = [(0.0, 0.0), (1.0, 10.0), (3.0, 30.0)];
        assert_eq!(rates(&pts), [0.0, 10.0, 10.0]);
    }

    #[test]
    fn csv_rates_are_per_interval() {
        let samples = [(0.0, 0.0, 0, 0), (0.5, 1.0, 100, 0), (1.0, 2.0, 400, 100)];
        let text = csv(&samples, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "wall_s,sim_time,events,events_per_s");
        assert_eq!(lines[2], "0.5,1,100,200");
        assert_eq!(lines[3], "1,2,400,600");
        let text = csv(&samples, true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "wall_s,sim_time,events,events_per_s,rolled_back,efficiency"
        );
        assert_eq!(lines[1], "0,0,0,0,0,1");
        assert_eq!(lines[3], "1,2,400,600,100,0.75");
        assert_eq!(
            json(&samples, true)[2],
            serde_json::json!([1.0, 2.0, 400, 100])
        );
        assert_eq!(json(&samples, false)[2], serde_json::json!([1.0, 2.0, 400]));
    }

    #[test]
    fn the_rollback_column_is_kept_only_when_it_holds_the_total() {
        let p = Arc::new(Progress::new());
        let s = Sampler::start(p.clone());
        p.add_events(10);
        p.add_rolled_back(3);
        let v = s.finish();
        assert_eq!(v.last().unwrap().3, 3);
        assert!(rollbacks_known(&v, 3));
        // An executor that rolled back 5 events but published none.
        assert!(!rollbacks_known(&[(0.0, 0.0, 10, 0)], 5));
        assert!(!rollbacks_known(&[], 0));
    }

    #[test]
    fn the_sampler_keeps_a_bounded_series_ending_at_the_last_figures() {
        let p = Arc::new(Progress::new());
        let s = Sampler::start(p.clone());
        p.add_events(7);
        p.set_now(3.0);
        std::thread::sleep(Duration::from_millis(30));
        let v = s.finish();
        assert!(v.len() >= 2 && v.len() <= MAX_SAMPLES);
        assert_eq!(*v.last().map(|x| &x.2).unwrap(), 7);
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
