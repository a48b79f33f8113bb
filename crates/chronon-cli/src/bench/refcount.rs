//! `chronon bench refcount`: the reference-counting schemes of `chronon::refcount` in the
//! layout of seed 001 Tables 3–8 — the cost of one clone + drop on a single shared count
//! (Tables 3 and 4), and the run time of a model whose events share payloads (Tables 5–8).

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::hint::black_box;
use std::marker::PhantomData;
use std::time::Instant;

use chronon::refcount::{
    set_buffer_capacity, Buffered, BufferedDeferred, Cas, LockAdd, Locked, PerThread, Raw, Scheme,
    Shared, XAdd,
};
use chronon::{ConservativeConfig, Ctx, Executor, LpId, Model, Simulation};

use super::refcount_campus;
use super::tsc::tsc;
use crate::Failure;

/// `chronon bench refcount`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct RefcountBench {
    /// Thread counts (rows).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    pub threads: Vec<usize>,
    /// Clone + drop pairs per thread in Tables 3 and 4.
    #[arg(long, default_value_t = 2_000_000)]
    pub ops: u64,
    /// LPs of the relay model (Tables 5-8).
    #[arg(long, default_value_t = 1024)]
    pub lps: u32,
    /// End time of the relay model.
    #[arg(long, default_value_t = 1000.0)]
    pub end: f64,
    /// Packets each LP of the relay model keeps.
    #[arg(long, default_value_t = 4)]
    pub keep: usize,
    /// Repetitions of each measurement, interleaved (the fastest is kept).
    #[arg(long, default_value_t = 2)]
    pub reps: u32,
}

/// The seed's "raw" count: a plain integer, not thread-safe. Used only on one thread (the
/// 1-thread rows), where it is the floor the thread-safe schemes are compared with.
#[derive(Debug)]
enum RawCount {}

/// A plain count; see [`RawCount`].
struct Plain(UnsafeCell<usize>);

// Safety: only ever used by one thread at a time: the bench runs `RawCount` on one thread only
// (the sequential executor, one benchmark thread).
unsafe impl Sync for Plain {}

// Safety: on one thread (see `Plain`), a plain count frees exactly once, at zero.
unsafe impl Scheme for RawCount {
    const NAME: &'static str = "raw";
    type Header = Plain;
    type Local = ();

    fn new_header() -> Plain {
        Plain(UnsafeCell::new(1))
    }

    fn first_local(_: &Plain) {}

    unsafe fn clone_ref(header: &Plain, _: &(), _: Raw) {
        // Safety: one thread only (see `Plain`).
        unsafe { *header.0.get() += 1 };
    }

    unsafe fn drop_ref(_: &mut (), raw: Raw) {
        // Safety: one thread only; the dropped handle keeps the header alive until here.
        let count = unsafe { &mut *(*raw.header::<Self>()).0.get() };
        *count -= 1;
        if *count == 0 {
            // Safety: the count reached zero: no handle remains.
            unsafe { raw.free() }
        }
    }
}

/// Average (ns, TSC ticks) of one clone + drop, each of `threads` threads working on clones
/// of one item.
fn pair_cost<S: Scheme>(threads: usize, ops: u64) -> (f64, Option<f64>) {
    let item = Shared::<u64, S>::new(7);
    let start = std::sync::Barrier::new(threads);
    let results: Vec<(f64, Option<f64>)> = std::thread::scope(|s| {
        let joins: Vec<_> = (0..threads)
            .map(|_| {
                let mine = item.clone();
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    let (t0, c0) = (Instant::now(), tsc());
                    for _ in 0..ops {
                        drop(black_box(mine.clone()));
                    }
                    let ns = t0.elapsed().as_nanos() as f64 / ops as f64;
                    let ticks = tsc().zip(c0).map(|(c1, c0)| (c1 - c0) as f64 / ops as f64);
                    drop(mine);
                    (ns, ticks)
                })
            })
            .collect();
        joins
            .into_iter()
            .map(|j| j.join().expect("bench thread"))
            .collect()
    });
    drop(item);
    S::flush();
    let n = results.len() as f64;
    let ns = results.iter().map(|r| r.0).sum::<f64>() / n;
    let ticks = results
        .iter()
        .map(|r| r.1)
        .collect::<Option<Vec<f64>>>()
        .map(|v| v.iter().sum::<f64>() / n);
    (ns, ticks)
}

/// A payload shared by many events.
struct Packet {
    bytes: [u8; 64],
}

/// A relay network whose events share payloads: each LP keeps the last `keep` packets it saw
/// (a clone each, like a router's queue) and forwards every packet to a random LP (another
/// clone); every `fresh`-th hop starts a new packet. Per event: two clones, two drops.
struct Relay<S> {
    keep: usize,
    fresh: u32,
    tokens: u32,
    _scheme: PhantomData<S>,
}

struct Hop<S: Scheme> {
    packet: Shared<Packet, S>,
    hops: u32,
}

struct Seen<S: Scheme> {
    sum: u64,
    kept: VecDeque<Shared<Packet, S>>,
}

impl<S: Scheme> Clone for Seen<S> {
    fn clone(&self) -> Self {
        Seen {
            sum: self.sum,
            kept: self.kept.clone(),
        }
    }
}

fn packet<S: Scheme>(ctx: &mut Ctx<'_, Relay<S>>) -> Shared<Packet, S> {
    let mut bytes = [0u8; 64];
    bytes[0] = (ctx.rng().next_u64() & 0xff) as u8;
    Shared::new(Packet { bytes })
}

impl<S: Scheme> Model for Relay<S> {
    type State = Seen<S>;
    type Event = Hop<S>;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> Seen<S> {
        for _ in 0..self.tokens {
            let p = packet(ctx);
            let delay = 1.0 + ctx.rng().exponential_mean(1.0);
            ctx.send(ctx.me(), delay, Hop { packet: p, hops: 0 });
        }
        Seen {
            sum: 0,
            kept: VecDeque::with_capacity(self.keep),
        }
    }

    fn on_event(&self, seen: &mut Seen<S>, hop: &Hop<S>, ctx: &mut Ctx<'_, Self>) {
        seen.sum += u64::from(hop.packet.bytes[0]);
        if seen.kept.len() == self.keep {
            seen.kept.pop_front();
        }
        seen.kept.push_back(hop.packet.clone());
        let lps = u64::from(ctx.lps());
        let next = ctx.rng().below(lps) as LpId;
        let p = if (hop.hops + 1) % self.fresh == 0 {
            packet(ctx)
        } else {
            hop.packet.clone()
        };
        let delay = 1.0 + ctx.rng().exponential_mean(1.0);
        ctx.send(
            next,
            delay,
            Hop {
                packet: p,
                hops: hop.hops + 1,
            },
        );
    }

    fn lookahead(&self) -> f64 {
        1.0
    }
}

/// Seconds of one relay run (sequential on 1 thread, window otherwise), with its fingerprint.
fn model_run<S: Scheme>(b: &RefcountBench, threads: usize) -> Result<(f64, String), Failure> {
    let model = Relay::<S> {
        keep: b.keep,
        fresh: 8,
        tokens: 4,
        _scheme: PhantomData,
    };
    let executor = if threads == 1 {
        Executor::Sequential
    } else {
        Executor::Window(ConservativeConfig::new(threads))
    };
    let t0 = Instant::now();
    let report = Simulation::new(model)
        .lps(b.lps)
        .end_time(b.end)
        .seed(1)
        .executor(executor)
        .run()?;
    S::flush();
    Ok((t0.elapsed().as_secs_f64(), report.fingerprint.to_string()))
}

fn label(t: usize) -> String {
    format!("{t} thread{}", if t == 1 { "" } else { "s" })
}

fn cell((ns, ticks): (f64, Option<f64>)) -> String {
    match ticks {
        Some(c) => format!("{ns:.1} ({c:.0})"),
        None => format!("{ns:.1}"),
    }
}

/// One micro-benchmark column.
type PairFn = fn(usize, u64) -> (f64, Option<f64>);
/// One model column.
type ModelFn = fn(&RefcountBench, usize) -> Result<(f64, String), Failure>;

fn pair_table(title: &str, b: &RefcountBench, cols: &[(&str, PairFn, bool)]) {
    println!("{title}");
    print!("{:<12}", "");
    for (name, _, _) in cols {
        print!("{name:>18}");
    }
    println!();
    for &t in &b.threads {
        print!("{:<12}", label(t));
        for &(_, f, one_thread_only) in cols {
            if one_thread_only && t > 1 {
                print!("{:>18}", "unsafe");
            } else {
                let best = (0..b.reps)
                    .map(|_| f(t, b.ops))
                    .min_by(|x, y| x.0.total_cmp(&y.0))
                    .expect("reps >= 1");
                print!("{:>18}", cell(best));
            }
        }
        println!();
    }
    println!();
}

fn model_table(
    title: &str,
    b: &RefcountBench,
    cols: &[(&str, ModelFn, bool, usize)],
    fingerprint: &mut Option<String>,
) -> Result<(), Failure> {
    println!("{title}");
    print!("{:<12}", "");
    for (name, _, _, _) in cols {
        print!("{name:>16}");
    }
    println!();
    for &t in &b.threads {
        print!("{:<12}", label(t));
        for &(_, f, one_thread_only, buffer) in cols {
            if one_thread_only && t > 1 {
                print!("{:>16}", "unsafe");
                continue;
            }
            set_buffer_capacity(buffer);
            let mut best = f64::INFINITY;
            for _ in 0..b.reps {
                let (secs, fp) = f(b, t)?;
                match fingerprint {
                    Some(first) if *first != fp => {
                        return Err(Failure::bad_input(format!(
                            "the relay model's fingerprint changed with the scheme: {first} vs {fp}"
                        )))
                    }
                    _ => *fingerprint = Some(fp),
                }
                best = best.min(secs);
            }
            print!("{best:>16.3}");
        }
        println!();
    }
    set_buffer_capacity(10_000);
    println!();
    Ok(())
}

pub(crate) fn run(b: RefcountBench) -> Result<u8, Failure> {
    if b.threads.is_empty() || b.threads.contains(&0) {
        return Err(Failure::bad_input(
            "--threads needs counts of at least 1, e.g. --threads 1,2,4",
        ));
    }
    if b.ops == 0 || b.reps == 0 || b.lps == 0 || b.keep == 0 {
        return Err(Failure::bad_input(
            "--ops, --reps, --lps and --keep must be at least 1",
        ));
    }
    if !(b.end > 0.0 && b.end.is_finite()) {
        return Err(Failure::bad_input("--end must be a positive number"));
    }
    let unit = if tsc().is_some() {
        "ns (TSC ticks from rdtsc: the constant-rate time-stamp counter, not core clock cycles)"
    } else {
        "ns (no cycle counter on this architecture)"
    };
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "Reference counting (seed 001 §3.3); {cores} cores available; best of {} reps",
        b.reps
    );
    println!("Tables 3-4: average clone + drop cost on one shared item over {} pairs per thread, in {unit}", b.ops);
    println!();
    pair_table(
        "Table 3: lock-based and lockless counts",
        &b,
        &[
            ("raw", pair_cost::<RawCount>, true),
            ("locked", pair_cost::<Locked>, false),
            ("lock-add", pair_cost::<LockAdd>, false),
            ("xadd", pair_cost::<XAdd>, false),
            ("cas", pair_cost::<Cas>, false),
        ],
    );
    pair_table(
        "Table 4: thread-local counts",
        &b,
        &[
            ("raw", pair_cost::<RawCount>, true),
            ("xadd", pair_cost::<XAdd>, false),
            ("per-thread", pair_cost::<PerThread>, false),
            ("buffered", pair_cost::<Buffered>, false),
        ],
    );
    println!(
        "Tables 5-8: run time in seconds of the relay model ({} LPs, end {}, each LP keeps {} \
         packets; 1 thread: sequential executor, more: window executor)",
        b.lps, b.end, b.keep
    );
    println!();
    let mut fp = None;
    let buf = 10_000;
    model_table(
        "Table 5: thread-local counts through the handles",
        &b,
        &[
            ("raw", model_run::<RawCount>, true, buf),
            ("xadd", model_run::<XAdd>, false, buf),
            ("per-thread", model_run::<PerThread>, false, buf),
        ],
        &mut fp,
    )?;
    model_table(
        "Table 6: buffered counting, immediate (B-I) and dedicated thread (B-T), 1k buffers",
        &b,
        &[
            ("raw", model_run::<RawCount>, true, buf),
            ("xadd", model_run::<XAdd>, false, buf),
            ("B-I", model_run::<Buffered>, false, 1_000),
            ("B-T", model_run::<BufferedDeferred>, false, 1_000),
        ],
        &mut fp,
    )?;
    model_table(
        "Table 7: buffer sizes",
        &b,
        &[
            ("I 10k", model_run::<Buffered>, false, 10_000),
            ("T 10k", model_run::<BufferedDeferred>, false, 10_000),
            ("I 100k", model_run::<Buffered>, false, 100_000),
            ("T 100k", model_run::<BufferedDeferred>, false, 100_000),
        ],
        &mut fp,
    )?;
    model_table(
        "Table 8: the remaining schemes (the seed's common counter per aggregation cycle is an \
         ns-3 object-model feature with no chronon counterpart)",
        &b,
        &[
            ("raw", model_run::<RawCount>, true, buf),
            ("locked", model_run::<Locked>, false, buf),
            ("lock-add", model_run::<LockAdd>, false, buf),
            ("cas", model_run::<Cas>, false, buf),
            ("B-I 10k", model_run::<Buffered>, false, buf),
        ],
        &mut fp,
    )?;
    if let Some(fp) = fp {
        println!("Every relay run committed the same history (fingerprint {fp}).");
    }
    Ok(0)
}

/// Flags of the hidden `chronon bench refcount-once`: one cell of Tables 3–8.
#[derive(Debug, clap::Args)]
pub(crate) struct OnceArgs {
    /// `pair` (Tables 3-4: clone + drop cost on one shared item), `model` (Tables 5-8: the
    /// relay model's run time) or `campus` (Tables 5-8 on the campus ring, packets with bodies).
    #[arg(long)]
    measure: String,
    /// raw, locked, lock-add, xadd, cas, per-thread, buffered (B-I) or buffered-thread (B-T);
    /// for `campus`: none (no bodies), heap, or one of those but raw.
    #[arg(long)]
    scheme: String,
    #[arg(long)]
    threads: usize,
    /// Clone + drop pairs per thread (`pair`).
    #[arg(long, default_value_t = 2_000_000)]
    ops: u64,
    /// Operations per buffer of the buffered schemes.
    #[arg(long, default_value_t = 10_000)]
    buffer: usize,
    /// LPs of the relay model (`model`).
    #[arg(long, default_value_t = 1024)]
    lps: u32,
    /// End time of the relay model or the campus ring.
    #[arg(long, default_value_t = 1000.0)]
    end: f64,
    /// Packets each LP of the relay model keeps.
    #[arg(long, default_value_t = 4)]
    keep: usize,
    /// Campuses on the ring (`campus`).
    #[arg(long, default_value_t = 4)]
    campuses: u32,
    /// Where to write the JSON result.
    #[arg(long)]
    output: std::path::PathBuf,
}

/// The schemes `refcount-once` measures, by name: (name, pair cost, relay run).
const SCHEMES: [(&str, PairFn, ModelFn); 8] = [
    ("raw", pair_cost::<RawCount>, model_run::<RawCount>),
    ("locked", pair_cost::<Locked>, model_run::<Locked>),
    ("lock-add", pair_cost::<LockAdd>, model_run::<LockAdd>),
    ("xadd", pair_cost::<XAdd>, model_run::<XAdd>),
    ("cas", pair_cost::<Cas>, model_run::<Cas>),
    ("per-thread", pair_cost::<PerThread>, model_run::<PerThread>),
    ("buffered", pair_cost::<Buffered>, model_run::<Buffered>),
    (
        "buffered-thread",
        pair_cost::<BufferedDeferred>,
        model_run::<BufferedDeferred>,
    ),
];

/// `chronon bench refcount-once`: one measurement in its own process, written as JSON: `ns`
/// and `ticks` per clone + drop (`pair`), or the relay run's `fingerprint` (`model`); `wall_s`
/// is the whole measurement (for `model`, the run with its final flush: Tables 5-8's figure).
pub(crate) fn once(a: OnceArgs) -> Result<u8, Failure> {
    if a.measure == "campus" {
        return once_campus(a);
    }
    let names: Vec<&str> = SCHEMES.iter().map(|s| s.0).collect();
    let Some(&(_, pair, model)) = SCHEMES.iter().find(|s| s.0 == a.scheme) else {
        return Err(Failure::bad_input(format!(
            "unknown --scheme '{}' (allowed: {})",
            a.scheme,
            names.join(", ")
        )));
    };
    if a.threads == 0 || a.ops == 0 || a.buffer == 0 || a.lps == 0 || a.keep == 0 {
        return Err(Failure::bad_input(
            "--threads, --ops, --buffer, --lps and --keep must be at least 1",
        ));
    }
    if a.scheme == "raw" && a.threads > 1 {
        return Err(Failure::bad_input(
            "--scheme raw is not thread-safe: it runs on 1 thread only",
        ));
    }
    if !(a.end > 0.0 && a.end.is_finite()) {
        return Err(Failure::bad_input("--end must be a positive number"));
    }
    if a.measure != "pair" && a.measure != "model" {
        return Err(Failure::bad_input(format!(
            "unknown --measure '{}' (allowed: pair, model, campus)",
            a.measure
        )));
    }
    let outputs = crate::output::Outputs::plan(&[("--output", a.output.clone())], &[])?;
    set_buffer_capacity(a.buffer);
    let t0 = Instant::now();
    let v = if a.measure == "pair" {
        let (ns, ticks) = pair(a.threads, a.ops);
        serde_json::json!({ "ns": ns, "ticks": ticks, "wall_s": t0.elapsed().as_secs_f64() })
    } else {
        let b = RefcountBench {
            threads: vec![a.threads],
            ops: a.ops,
            lps: a.lps,
            end: a.end,
            keep: a.keep,
            reps: 1,
        };
        let (secs, fp) = model(&b, a.threads)?;
        serde_json::json!({ "wall_s": secs, "fingerprint": fp })
    };
    if let Some(p) = outputs.path("--output") {
        crate::output::write_or_rescue("--output", p, v.to_string().as_bytes())?;
    }
    Ok(0)
}

/// `refcount-once --measure campus`: one campus run, written as JSON (`wall_s`: the run and its
/// final flush; `fingerprint`).
fn once_campus(a: OnceArgs) -> Result<u8, Failure> {
    let names = refcount_campus::schemes();
    if !names.contains(&a.scheme.as_str()) {
        return Err(Failure::bad_input(format!(
            "unknown --scheme '{}' for --measure campus (allowed: {})",
            a.scheme,
            names.join(", ")
        )));
    }
    if a.threads == 0 || a.buffer == 0 || a.campuses == 0 {
        return Err(Failure::bad_input(
            "--threads, --buffer and --campuses must be at least 1",
        ));
    }
    if !(a.end > 0.0 && a.end.is_finite()) {
        return Err(Failure::bad_input("--end must be a positive number"));
    }
    let outputs = crate::output::Outputs::plan(&[("--output", a.output.clone())], &[])?;
    set_buffer_capacity(a.buffer);
    let (secs, fp) = refcount_campus::campus_run(&a.scheme, a.threads, a.campuses, a.end)?;
    let v = serde_json::json!({ "wall_s": secs, "fingerprint": fp });
    if let Some(p) = outputs.path("--output") {
        crate::output::write_or_rescue("--output", p, v.to_string().as_bytes())?;
    }
    Ok(0)
}
