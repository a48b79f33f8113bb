//! The campus cells of `chronon bench refcount-once --measure campus` (seed 001 Tables 5–8 on
//! the seed's own test case): the campus ring with packet bodies (`--data true`) that the events
//! of every hop share, counted by each scheme (`--refcount`), as ns-3's `Ptr<Packet>` is shared
//! by the events that carry it. Each hop clones the packet's body into the next event and drops
//! the one it ran.

use std::time::Instant;

use chronon::refcount::{Buffered, BufferedDeferred};
use chronon::{ConservativeConfig, Executor, Simulation};
use chronon_models::net::Refcount;
use chronon_models::Campus;

use crate::Failure;

/// The campus cells' schemes: `none` (packets without bodies: the floor, no counting at all)
/// and every `--refcount` of the network models.
pub(super) fn schemes() -> Vec<&'static str> {
    let mut v = vec!["none"];
    v.extend(Refcount::ALL.iter().map(|r| r.name()));
    v
}

/// Seconds of one campus run of `campuses` campuses to `end` (sequential on 1 thread, window
/// otherwise) with bodies counted by `scheme`, and the final flush of the buffered counts;
/// with its fingerprint.
pub(super) fn campus_run(
    scheme: &str,
    threads: usize,
    campuses: u32,
    end: f64,
) -> Result<(f64, String), Failure> {
    let (data, refcount) = match scheme {
        "none" => (false, Refcount::Heap),
        s => (true, s.parse::<Refcount>().map_err(Failure::bad_input)?),
    };
    let campus = Campus {
        campuses,
        data,
        refcount,
        ..Campus::default()
    };
    let model = campus.build().map_err(Failure::bad_input)?;
    let executor = if threads == 1 {
        Executor::Sequential
    } else {
        Executor::Window(ConservativeConfig::new(threads))
    };
    let t0 = Instant::now();
    let report = Simulation::new(model)
        .lps(campus.lps())
        .end_time(end)
        .seed(1)
        .executor(executor)
        .run()?;
    match refcount {
        Refcount::Buffered => Buffered::flush(),
        Refcount::BufferedThread => BufferedDeferred::flush(),
        _ => {}
    }
    let stat = |name: &str| report.model_stats.get(name).unwrap_or(0.0);
    let received = stat("packets_received");
    let intact = stat("data_received") - stat("data_corrupt");
    if data && intact != received {
        return Err(Failure::bad_input(format!(
            "campus with --refcount {scheme}: {intact} of {received} packets arrived with their body intact"
        )));
    }
    Ok((t0.elapsed().as_secs_f64(), report.fingerprint.to_string()))
}
