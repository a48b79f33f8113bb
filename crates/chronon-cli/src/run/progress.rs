//! What watches a run from the side: the Ctrl-C handler and the progress thread (progress
//! line, stall warning).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chronon::{Progress, StallDetector};

use crate::EXIT_INTERRUPTED;

/// Progress as lines on stderr instead of a drawn line (see [`spawn_progress_bar`]).
pub const PROGRESS_LINES_ENV: &str = "CHRONON_PROGRESS_LINES";

pub(super) fn install_ctrlc(progress: &Arc<Progress>) {
    let p = progress.clone();
    let pressed = AtomicBool::new(false);
    // A second Ctrl-C ends the process at once. Not in a worker process of --procs: it may get
    // two (the terminal's, to the whole process group, and the one its parent passes on), and
    // a second Ctrl-C of the user's ends the parent, which takes its workers with it (their
    // death signal). Failing to install the handler (another one is already installed, as in a
    // second run in one process) is harmless.
    let worker = chronon::is_worker_process();
    let _ = ctrlc::set_handler(move || {
        // Ordering: a one-shot flag private to this handler.
        if pressed.swap(true, Ordering::Relaxed) && !worker {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
        p.request_stop();
    });
}

/// The progress thread: on a terminal it draws the progress line; everywhere it watches for a
/// stall (no simulated progress for `stall_after` of wall time, `--stall-secs`, default 10 s,
/// 0 = never) and then prints one warning naming the likely cause. With the environment
/// variable [`PROGRESS_LINES_ENV`] set it prints, instead of the line, one line
/// `progress NOW END EVENTS` per interval on stderr, for a host that draws its own (the Python
/// package).
pub(super) fn spawn_progress_bar(
    progress: Arc<Progress>,
    done: Arc<AtomicBool>,
    end: f64,
    stall_after: Duration,
) -> std::thread::JoinHandle<()> {
    let mut stall = (!stall_after.is_zero()).then(|| StallDetector::new(stall_after, end));
    // A worker process of --procs draws nothing: its parent owns the terminal; nor does a
    // hosted run: its host draws.
    let mine =
        !chronon::is_worker_process() && !crate::mpi::quiet() && crate::host::progress().is_none();
    let lines = mine && std::env::var_os(PROGRESS_LINES_ENV).is_some();
    let terminal = mine && !lines && std::io::stderr().is_terminal();
    std::thread::spawn(move || {
        let bar = if terminal {
            indicatif::ProgressBar::new(1000)
        } else {
            indicatif::ProgressBar::hidden()
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:24}] {percent:>3}% eta {eta} {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        let mut last = (std::time::Instant::now(), progress.events(), progress.now());
        // Ordering: see `run_simulation` (mod.rs).
        while !done.load(Ordering::Relaxed) {
            // Parked rather than asleep: the main thread unparks it when the run ends.
            std::thread::park_timeout(Duration::from_millis(250));
            if done.load(Ordering::Relaxed) {
                break;
            }
            let (t, events, now) = (std::time::Instant::now(), progress.events(), progress.now());
            if let Some(warning) = stall.as_mut().and_then(|s| s.observe(t, now)) {
                if !crate::host::say(&warning) {
                    bar.suspend(|| eprintln!("{warning}"));
                }
            }
            // The rates over the last interval, so start-up does not skew them.
            let dt = (t - last.0).as_secs_f64().max(1e-3);
            let rate = (events - last.1) as f64 / dt;
            let sim_rate = (now - last.2) / dt;
            last = (t, events, now);
            if lines {
                eprintln!("progress {now} {end} {events}");
            }
            bar.set_position(((now / end) * 1000.0).clamp(0.0, 1000.0) as u64);
            bar.set_message(format!(
                "t={now:.4} {sim_rate:.3e} sim-s/s {:.2} M ev/s",
                rate / 1e6
            ));
        }
        bar.finish_and_clear();
    })
}
