//! Command-line flags, TOML configuration files, and how they merge: a flag overrides the file's
//! key of the same name, which overrides the default.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Deserialize;

use crate::{one_line, Failure};

/// `--help` headings of the options every model takes.
const RUN: &str = "Run options";
const EXEC: &str = "Executor options";
const CONSERVATIVE: &str = "Conservative executor options (--sync window, null-message, lockstep)";
const TIME_WARP: &str = "Time Warp options (--sync timewarp)";
const CHECKPOINTS: &str = "Checkpoint and restart";

/// Keys every model takes, as flags and as TOML keys.
#[derive(Clone, Debug, Default, Args, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct CommonArgs {
    /// End time: events at or after it never execute [default: the model's; with --restore,
    /// the end of the run that saved the checkpoint when it is after the cut].
    #[arg(long, help_heading = RUN)]
    pub end: Option<f64>,
    /// Seed of every LP's random stream [default: 1; with --restore, the checkpoint's: its
    /// streams continue, while another seed draws them anew at the cut, as --reseed does].
    #[arg(long, help_heading = RUN)]
    pub seed: Option<u64>,
    /// Pending-event set: heap or ladder [default: ladder].
    #[arg(long, help_heading = RUN)]
    pub queue: Option<crate::choices::Queue>,
    /// Synchronization: seq, window, null-message, lockstep or timewarp [default: seq].
    #[arg(long, help_heading = EXEC)]
    pub sync: Option<crate::choices::Sync>,
    /// Worker threads; more than 1 needs a parallel --sync [default: 1].
    #[arg(long, help_heading = EXEC)]
    pub threads: Option<usize>,
    /// Worker processes on this machine, each with --threads threads (--sync window, lockstep,
    /// null-message or timewarp; models whose events may cross a process boundary) [default:
    /// none].
    #[arg(long, help_heading = EXEC)]
    pub procs: Option<usize>,
    /// MPI ranks: run under `mpirun -n R` (a build with the `mpi` feature); checked against
    /// the number of ranks mpirun started [default: mpirun's].
    #[arg(long, help_heading = EXEC)]
    pub ranks: Option<usize>,
    /// How --procs moves `BPtr` payloads between processes: zero-copy (the pointer travels,
    /// the bytes stay in the sender's shared heap) or copy (each payload is copied out of
    /// the sender's item and into a new item of the receiver's heap, what MPI does inside one
    /// machine) [default: zero-copy].
    #[arg(long, help_heading = EXEC)]
    pub payload: Option<crate::choices::Payload>,
    /// Size classes of the shared heaps that hold `BPtr` payloads, as SIZE:COUNT per class
    /// (items per heap segment; sizes in bytes or with K/M) [default: 64:1024,512:256,4K:64,8K:32,64K:8; segment k of a growing heap holds 2^k times as many].
    #[arg(long, help_heading = EXEC)]
    pub heap_classes: Option<String>,
    /// Segments a shared heap may grow to, 1..=16 (1: no growth, a full class is an error)
    /// [default: 16].
    #[arg(long, help_heading = EXEC)]
    pub heap_segments: Option<u32>,
    /// LP-to-worker mapping of the parallel executors: block, round-robin, or profile:FILE
    /// (contiguous blocks of about equal cost, from the LP costs an earlier run wrote with
    /// --lp-costs) [default: block].
    #[arg(long, value_parser = crate::choices::MappingArg::parse, help_heading = EXEC)]
    pub mapping: Option<crate::choices::MappingArg>,
    /// Move LPs between workers every T units of simulated time, from what each cost since
    /// the last move (contiguous blocks of about equal cost; the history is unchanged); auto:
    /// as often as it pays, measured (from a 128th of the end time, doubling or halving); or
    /// off [default: off].
    #[arg(long, value_name = "T|auto|off", help_heading = EXEC)]
    pub balance: Option<String>,
    /// Pin worker threads to cores, NUMA node by node: auto (when the workers fit the cores;
    /// each worker first-touches its LPs' records and pending set on a machine of several
    /// NUMA nodes), on (always, first touch included) or off; the report's `placement` says
    /// what was done [default: auto].
    #[arg(long, help_heading = EXEC)]
    pub pin: Option<crate::choices::Pin>,
    /// Barrier of the window and lock-step executors' threads in one process: std, semaphore,
    /// spin or tree [default: tree] (not with --procs or MPI ranks: they meet at their own).
    #[arg(long, help_heading = CONSERVATIVE)]
    pub barrier: Option<crate::choices::Barrier>,
    /// Fan-in of the tree barrier [default: 4].
    #[arg(long, help_heading = CONSERVATIVE)]
    pub fan_in: Option<usize>,
    /// Window load balancing: fraction of each worker's LPs dedicated to it, in [0, 1]; the
    /// rest are shared and claimed each round by whichever worker is free [default: 1.0].
    #[arg(long, help_heading = CONSERVATIVE)]
    pub dedicated: Option<f64>,
    /// Window load balancing: number of shared LP sets (>= 1 when --dedicated < 1)
    /// [default: 0, or 1 when --dedicated < 1 is given without it].
    #[arg(long, help_heading = CONSERVATIVE)]
    pub shared_sets: Option<usize>,
    /// Null messages: refuse a run whose smallest lookahead between workers would need more
    /// than this many null messages per channel to reach the end (end / lookahead)
    /// [default: 1e10].
    #[arg(long, help_heading = CONSERVATIVE)]
    pub max_null_messages: Option<f64>,
    /// Lock-step runtime system (seed 002): threads (persistent workers), work-stealing (the
    /// seed's Cilk: each lock-step spawns the LPs by divide and conquer down to --threshold LPs
    /// per task), active-threads (light-weight threads of --threshold LPs each, many per
    /// worker thread) or bsp (--threads N single-threaded worker processes that exchange events
    /// at the superstep barrier) [default: threads].
    #[arg(long, help_heading = CONSERVATIVE)]
    pub runtime: Option<crate::choices::Runtime>,
    /// Work-stealing and active-threads runtimes: LPs per task or light-weight thread (>= 1)
    /// [default: 50].
    #[arg(long, help_heading = CONSERVATIVE)]
    pub threshold: Option<usize>,
    /// Warn on stderr when simulated time has not advanced for this many wall seconds
    /// (0: never) [default: 10].
    #[arg(long, help_heading = RUN)]
    pub stall_secs: Option<f64>,
    /// Write the JSON report here (a directory gets report.json inside); checked before the
    /// run starts [default: no report].
    #[arg(long, help_heading = RUN)]
    pub output: Option<PathBuf>,
    /// Write each LP's events and handler time (CSV) here, the profile that --mapping
    /// profile:FILE maps a later run from (--output DIR/ writes DIR/lp-costs.csv)
    /// [default: none].
    #[arg(long, value_name = "FILE", help_heading = RUN)]
    pub lp_costs: Option<PathBuf>,
    /// Write every LP's committed events to this file, one line per event sorted by LP and
    /// commit order (`lp pos time src seq digest`): identical under every executor for a
    /// deterministic model, so two traces diff directly (not over MPI ranks) [default: no
    /// trace].
    #[arg(long, help_heading = RUN)]
    #[serde(skip)]
    pub trace: Option<PathBuf>,
    /// With --trace: trace only these LPs (e.g. 3 or 0,5,7) [default: every LP].
    #[arg(long, alias = "trace-lp", value_delimiter = ',', help_heading = RUN)]
    #[serde(skip)]
    pub trace_lps: Vec<u32>,
    /// Save the run at every multiple of T (simulated time) before the end, in
    /// DIR/t<T> of --checkpoint-dir; the run goes on after each [default: none].
    #[arg(long, value_name = "T", help_heading = CHECKPOINTS)]
    #[serde(default, deserialize_with = "number")]
    pub checkpoint_every: Option<f64>,
    /// Save the run at simulated time T (at the end if T is the end time), in DIR/t<T> of
    /// --checkpoint-dir [default: none].
    #[arg(long, value_name = "T", help_heading = CHECKPOINTS)]
    #[serde(default, deserialize_with = "number")]
    pub checkpoint_at: Option<f64>,
    /// The directory --checkpoint-every and --checkpoint-at save in (created if missing).
    #[arg(long, value_name = "DIR", help_heading = CHECKPOINTS)]
    pub checkpoint_dir: Option<PathBuf>,
    /// Continue from the checkpoint in DIR (a DIR/t<T> that a run saved) instead of starting
    /// the model anew, under any --sync, --threads, --procs or ranks: the same history as
    /// the run that saved it; the model options, --seed and --end default to the
    /// checkpoint's [default: none].
    #[arg(long, value_name = "DIR", help_heading = CHECKPOINTS)]
    pub restore: Option<PathBuf>,
    /// With --restore: derive every LP's random stream anew from seed S at the cut, to branch
    /// many runs from one checkpoint [default: continue the saved streams].
    #[arg(long, value_name = "S", help_heading = CHECKPOINTS)]
    pub reseed: Option<u64>,
    /// Time Warp state saving: copy, reverse or auto [default: auto].
    #[arg(long, help_heading = TIME_WARP)]
    pub state_saving: Option<crate::choices::StateSaving>,
    /// Time Warp copy state saving: save the state every K events [default: automatic].
    #[arg(long, help_heading = TIME_WARP)]
    pub save_every: Option<u32>,
    /// Refused with a hint at --save-every (a config file's `checkpoint` key is refused by
    /// [`ConfigFile::load`]); never holds a value.
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "", value_parser = Refused(RENAMED_CHECKPOINT))]
    #[serde(skip)]
    pub checkpoint: Option<String>,
    /// Time Warp memory bound in bytes, a plain number or with a suffix K, M, G (powers of
    /// 1024: 512M), for saved states and event records; speculation is throttled to stay
    /// under it [default: no bound].
    #[arg(long, help_heading = TIME_WARP)]
    #[serde(default, deserialize_with = "size")]
    pub max_memory: Option<String>,
    /// Time Warp optimism window: no event later than GVT + T runs. The window adapts to the
    /// measured rollbacks; T is where it starts and a cap it never exceeds [default: inf].
    #[arg(long, help_heading = TIME_WARP)]
    #[serde(default, deserialize_with = "number")]
    pub window: Option<f64>,
    /// Time Warp: run every event forward, then in reverse, and check the state is restored
    /// [default: false].
    #[arg(long, num_args = 0..=1, default_missing_value = "true", help_heading = TIME_WARP)]
    pub check_reverse: Option<bool>,
    /// Time Warp: events a worker processes between two GVT rounds it starts (>= 1; a quarter
    /// of them once its events passed the safe-commit bound) [default: 1024].
    #[arg(long, help_heading = TIME_WARP)]
    pub gvt_every: Option<u32>,
    /// Time Warp: commit an event as it runs, with no record, when nothing can roll it back
    /// (one worker, or before GVT + lookahead with threads; reverse state saving) [default:
    /// true].
    #[arg(long, num_args = 0..=1, default_missing_value = "true", help_heading = TIME_WARP)]
    pub safe_commit: Option<bool>,
    /// Time Warp: preemptive (seed 003): events run in contexts of their own and switch off
    /// the CPU when an earlier message waits [default: false].
    #[arg(long, num_args = 0..=1, default_missing_value = "true", help_heading = TIME_WARP)]
    pub preempt: Option<bool>,
    /// Preemptive Time Warp: the most suspended contexts per worker; past it events run to
    /// completion [default: 64].
    #[arg(long, help_heading = TIME_WARP)]
    pub max_suspended: Option<usize>,
    /// Preemptive Time Warp: fine-grain tick period in microseconds (enables ticks) [default:
    /// no ticks].
    #[arg(long, help_heading = TIME_WARP)]
    #[serde(default, deserialize_with = "number")]
    pub tick_us: Option<f64>,
    /// Preemptive Time Warp with ticks: the alpha rule's alpha (ticks on while T / ΔET >=
    /// 1 + alpha) [default: 0.5].
    #[arg(long, help_heading = TIME_WARP)]
    #[serde(default, deserialize_with = "number")]
    pub alpha: Option<f64>,
    /// Preemptive Time Warp with ticks: a tick switches a handler off the CPU between any two
    /// instructions of its own code (true), or only makes a check due at its next call into
    /// the engine (false) [default: true].
    #[arg(long, num_args = 0..=1, default_missing_value = "true", help_heading = TIME_WARP)]
    pub tick_interrupts: Option<bool>,
    /// Time Warp: write GVT over wall time as CSV here [default: DIR/gvt.csv with --output
    /// DIR/, else none].
    #[arg(long, help_heading = TIME_WARP)]
    pub gvt_csv: Option<PathBuf>,
    /// Read keys from this TOML file (flags override it).
    #[arg(long, help_heading = RUN)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
}

/// What `--checkpoint` says: the flag is Time Warp's state-saving period's old name.
const RENAMED_CHECKPOINT: &str = "--checkpoint is now --save-every (Time Warp's \
     state-saving period, in events); --checkpoint-every T saves the whole run";

/// The config-file keys of an old name, each with the line that refuses it.
const RENAMED_KEYS: &[(&str, &str)] = &[(
    "checkpoint",
    "is now 'save-every' (Time Warp's state-saving period, in events); --checkpoint-every T \
     saves the whole run",
)];

/// A flag's value parser that refuses every value with one line: a flag of an old name.
#[derive(Clone)]
struct Refused(&'static str);

impl clap::builder::TypedValueParser for Refused {
    type Value = String;

    fn parse_ref(
        &self,
        _: &clap::Command,
        _: Option<&clap::Arg>,
        _: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        Err(clap::Error::raw(
            clap::error::ErrorKind::ValueValidation,
            self.0,
        ))
    }
}

/// A number in a config file: a TOML number, or a string such as `"inf"` (the report's
/// config writes an infinite window so, JSON having no infinity).
fn number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Number {
        Float(f64),
        Int(i64),
        Text(String),
    }
    Option::<Number>::deserialize(d)?
        .map(|n| match n {
            Number::Float(x) => Ok(x),
            Number::Int(i) => Ok(i as f64),
            Number::Text(t) => t
                .parse()
                .map_err(|_| serde::de::Error::custom(format!("expected a number, got \"{t}\""))),
        })
        .transpose()
}

/// A size in a config file: a string (`"512M"`) or a plain number (`536870912`).
fn size<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Size {
        Text(String),
        Number(u64),
    }
    Ok(Option::<Size>::deserialize(d)?.map(|s| match s {
        Size::Text(t) => t,
        Size::Number(n) => n.to_string(),
    }))
}

/// The long names of [`CommonArgs`]' flags (every run takes them).
pub(crate) fn common_flags() -> Vec<String> {
    CommonArgs::augment_args(clap::Command::new("run"))
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

impl CommonArgs {
    /// This flag set over `file`'s.
    pub(crate) fn over(self, file: CommonArgs) -> CommonArgs {
        CommonArgs {
            end: self.end.or(file.end),
            seed: self.seed.or(file.seed),
            queue: self.queue.or(file.queue),
            sync: self.sync.or(file.sync),
            threads: self.threads.or(file.threads),
            procs: self.procs.or(file.procs),
            ranks: self.ranks.or(file.ranks),
            payload: self.payload.or(file.payload),
            heap_classes: self.heap_classes.or(file.heap_classes),
            heap_segments: self.heap_segments.or(file.heap_segments),
            barrier: self.barrier.or(file.barrier),
            fan_in: self.fan_in.or(file.fan_in),
            mapping: self.mapping.or(file.mapping),
            balance: self.balance.or(file.balance),
            pin: self.pin.or(file.pin),
            dedicated: self.dedicated.or(file.dedicated),
            shared_sets: self.shared_sets.or(file.shared_sets),
            max_null_messages: self.max_null_messages.or(file.max_null_messages),
            runtime: self.runtime.or(file.runtime),
            threshold: self.threshold.or(file.threshold),
            stall_secs: self.stall_secs.or(file.stall_secs),
            output: self.output.or(file.output),
            lp_costs: self.lp_costs.or(file.lp_costs),
            state_saving: self.state_saving.or(file.state_saving),
            save_every: self.save_every.or(file.save_every),
            checkpoint_every: self.checkpoint_every.or(file.checkpoint_every),
            checkpoint_at: self.checkpoint_at.or(file.checkpoint_at),
            checkpoint_dir: self.checkpoint_dir.or(file.checkpoint_dir),
            restore: self.restore.or(file.restore),
            reseed: self.reseed.or(file.reseed),
            checkpoint: self.checkpoint,
            max_memory: self.max_memory.or(file.max_memory),
            window: self.window.or(file.window),
            check_reverse: self.check_reverse.or(file.check_reverse),
            gvt_csv: self.gvt_csv.or(file.gvt_csv),
            safe_commit: self.safe_commit.or(file.safe_commit),
            gvt_every: self.gvt_every.or(file.gvt_every),
            preempt: self.preempt.or(file.preempt),
            max_suspended: self.max_suspended.or(file.max_suspended),
            tick_us: self.tick_us.or(file.tick_us),
            alpha: self.alpha.or(file.alpha),
            tick_interrupts: self.tick_interrupts.or(file.tick_interrupts),
            config: self.config,
            trace: self.trace,
            trace_lps: self.trace_lps,
        }
    }
}

/// A parsed TOML configuration file.
#[derive(Debug, Default)]
pub(crate) struct ConfigFile {
    path: String,
    table: toml::Table,
}

impl ConfigFile {
    /// Reads `path` (or nothing) and checks that every key is one of `common` or `model`.
    pub(crate) fn load(path: Option<&Path>, model_keys: &[&str]) -> Result<ConfigFile, Failure> {
        let Some(path) = path else {
            return Ok(ConfigFile::default());
        };
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::bad_input(format!("cannot read config file {shown}: {e}")))?;
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            Failure::bad_input(format!(
                "config file {shown} is not valid TOML: {}",
                one_line(e.message())
            ))
        })?;
        // The runner's flags are keys too, all but `--config` itself.
        let common = common_flags();
        let common: Vec<&str> = common
            .iter()
            .map(String::as_str)
            .filter(|k| *k != "config" && !RENAMED_KEYS.iter().any(|(old, _)| old == k))
            .collect();
        for key in table.keys() {
            if let Some((_, why)) = RENAMED_KEYS.iter().find(|(old, _)| old == key) {
                return Err(Failure::bad_input(format!(
                    "config file {shown}: key '{key}' {why}"
                )));
            }
            if !common.contains(&key.as_str()) && !model_keys.contains(&key.as_str()) {
                let mut allowed = common.clone();
                allowed.extend_from_slice(model_keys);
                return Err(Failure::bad_input(format!(
                    "unknown key '{key}' in {shown} (allowed: {})",
                    allowed.join(", ")
                )));
            }
        }
        Ok(ConfigFile { path: shown, table })
    }

    /// The file's path as given.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The file's keys.
    pub(crate) fn table(&self) -> &toml::Table {
        &self.table
    }

    /// The file's keys as `T` (keys `T` does not know are ignored: `load` checked them all).
    /// A value of the wrong type is an error naming the key and the file.
    pub(crate) fn get<T: for<'de> Deserialize<'de> + Default>(&self) -> Result<T, Failure> {
        if self.table.is_empty() {
            return Ok(T::default());
        }
        T::deserialize(self.table.clone()).map_err(|e| {
            // Find the key: every field of `T` is optional, so a table with one key
            // deserializes unless that key's value is wrong.
            let culprit = self.table.iter().find_map(|(k, v)| {
                let one: toml::Table = [(k.clone(), v.clone())].into_iter().collect();
                T::deserialize(one).err().map(|e| (k, e))
            });
            match culprit {
                Some((key, e)) => Failure::bad_input(format!(
                    "config file {}: key '{key}': {}",
                    self.path,
                    one_line(e.message())
                )),
                None => Failure::bad_input(format!(
                    "config file {}: {}",
                    self.path,
                    one_line(e.message())
                )),
            }
        })
    }
}
