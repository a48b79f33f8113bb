//! Time series of a run, sampled from its [`Progress`] by a thread of the CLI: simulated time
//! (the executor's lower bound: LBTS, GVT, or the sequential clock) and events processed, over
//! wall time. They go into the report (`progress_series`) and, with `--output DIR/`, into
//! `DIR/progress.csv` with the per-interval event rate.
//!
//! The sampler starts every 10 ms; when it holds [`MAX_SAMPLES`] it drops every other sample
//! and doubles its period, so a run of any length keeps between half and all of that many
//! evenly spaced samples.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chronon::Progress;

/// The most samples kept.
pub(crate) const MAX_SAMPLES: usize = 1024;

/// One sample: wall seconds since the run started (initialization included), simulated time
/// reached, events processed so far.
pub(crate) type Sample = (f64, f64, u64);

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
                    let s = (
                        start.elapsed().as_secs_f64(),
                        progress.now(),
                        progress.events(),
                    );
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
        v.push((
            self.start.elapsed().as_secs_f64(),
            self.progress.now(),
            self.progress.events(),
        ));
        v
    }
}

/// The series as CSV: `wall_s,sim_time,events,events_per_s` (the rate over the interval that
/// ends at the sample; 0 for the first).
pub(crate) fn csv(samples: &[Sample]) -> String {
    let mut out = String::from("wall_s,sim_time,events,events_per_s\n");
    let mut last: Option<&Sample> = None;
    for s in samples {
        let rate = match last {
            Some(l) if s.0 > l.0 => (s.2.saturating_sub(l.2)) as f64 / (s.0 - l.0),
            _ => 0.0,
        };
        out.push_str(&format!("{},{},{},{}\n", s.0, s.1, s.2, rate));
        last = Some(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rates_are_per_interval() {
        let text = csv(&[(0.0, 0.0, 0), (0.5, 1.0, 100), (1.0, 2.0, 400)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "wall_s,sim_time,events,events_per_s");
        assert_eq!(lines[2], "0.5,1,100,200");
        assert_eq!(lines[3], "1,2,400,600");
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
