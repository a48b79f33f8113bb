//! The models shipped with chronon (`chronon_models`), registered with the runner through the
//! same API as any user's model ([`ModelSpec`]; `App::builtins` names them): each has a
//! parameter struct whose fields are its flags and TOML keys, every one optional with the
//! model's own default.

mod draws;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::registry::{Draw, Flags, ModelSpec, SimHook};

/// PHOLD's flags and TOML keys.
#[derive(Clone, Debug, Default, Args, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
#[command(next_help_heading = "Model options")]
pub(crate) struct PholdArgs {
    /// Number of LPs [default: 1024].
    #[arg(long)]
    lps: Option<u32>,
    /// Events each LP starts with [default: 10].
    #[arg(long)]
    start_events: Option<u32>,
    /// Probability that an event goes to a random LP [default: 0.1].
    #[arg(long)]
    remote: Option<f64>,
    /// Minimum delay of every event [default: 0.1].
    #[arg(long)]
    lookahead: Option<f64>,
    /// Mean delay of every event, lookahead included [default: 1.0].
    #[arg(long)]
    mean: Option<f64>,
    /// Busy work per event in microseconds of wall time [default: 0].
    #[arg(long)]
    work_us: Option<f64>,
    /// Bytes of state per LP [default: 0].
    #[arg(long)]
    state_bytes: Option<usize>,
    /// Communication graph: mesh (any LP) or mesh2d (neighbours on a 2-D torus) [default: mesh].
    #[arg(long)]
    topology: Option<String>,
    /// K consecutive LPs are hot: they spin --hot-work-us more per event [default: 0].
    #[arg(long)]
    hot_lps: Option<u32>,
    /// Extra busy work per event of a hot LP, in microseconds [default: 0].
    #[arg(long)]
    hot_work_us: Option<f64>,
    /// Every T time units the hot region moves on by --hot-lps LPs; 0: never [default: 0].
    #[arg(long)]
    hot_move: Option<f64>,
}

impl PholdArgs {
    /// The parameters with every flag not given at its default.
    fn resolve(&self) -> Result<chronon_models::Phold, String> {
        let d = chronon_models::Phold::default();
        Ok(chronon_models::Phold {
            lps: self.lps.unwrap_or(d.lps),
            start_events: self.start_events.unwrap_or(d.start_events),
            remote: self.remote.unwrap_or(d.remote),
            lookahead: self.lookahead.unwrap_or(d.lookahead),
            mean: self.mean.unwrap_or(d.mean),
            work_us: self.work_us.unwrap_or(d.work_us),
            state_bytes: self.state_bytes.unwrap_or(d.state_bytes),
            hot_lps: self.hot_lps.unwrap_or(d.hot_lps),
            hot_work_us: self.hot_work_us.unwrap_or(d.hot_work_us),
            hot_move: self.hot_move.unwrap_or(d.hot_move),
            topology: match &self.topology {
                None => d.topology,
                Some(t) => t.parse()?,
            },
        })
    }
}

impl ModelSpec for PholdArgs {
    type Model = chronon_models::Phold;

    fn build(&self) -> Result<chronon_models::Phold, String> {
        let model = self.resolve()?;
        model.validate()?;
        Ok(model)
    }

    fn config(&self) -> serde_json::Value {
        let model = self.resolve().unwrap_or_default();
        serde_json::to_value(&model).expect("PHOLD parameters serialize")
    }

    fn default_end() -> Option<f64> {
        Some(1000.0)
    }

    fn about() -> &'static str {
        "PHOLD: the standard PDES benchmark (ROSS semantics)."
    }

    fn changeable() -> &'static [&'static str] {
        // What an LP does with its next events; an LP's state means the same under any.
        &["remote", "mean", "work-us", "hot-work-us", "hot-move"]
    }

    fn draw(draw: &mut Draw, flags: &mut Flags) {
        draws::phold(draw, flags)
    }

    fn check_reverse() -> Option<SimHook<Self::Model>> {
        Some(chronon::Simulation::check_reverse)
    }
}

/// Declares a shipped model's parameter struct: its flags (which are also its TOML keys,
/// kebab-case), each optional with the model's default, and its [`ModelSpec`]. Every field of
/// the model struct is listed, so a new model parameter that is not exposed does not compile.
/// Models whose parameters are not the runnable model name a `build` step from one to the other.
macro_rules! model_spec {
    (
        args: $Args:ident, model: $Model:ty,
        about: $about:literal, end: $end:expr, draw: $draw:path,
        fields { $( $(#[doc = $doc:literal])* $field:ident : $ty:ty, )* }
    ) => {
        model_spec! {
            args: $Args, model: $Model, runnable: $Model,
            build: |m: &$Model| -> Result<$Model, String> { Ok(m.clone()) },
            about: $about, end: $end, draw: $draw,
            fields { $( $(#[doc = $doc])* $field: $ty, )* }
        }
    };
    (
        args: $Args:ident, model: $Model:ty, runnable: $Run:ty, build: $build:expr,
        about: $about:literal, end: $end:expr, draw: $draw:path,
        fields { $( $(#[doc = $doc:literal])* $field:ident : $ty:ty, )* }
    ) => {
        #[derive(Clone, Debug, Default, Args, Deserialize, Serialize)]
        #[serde(rename_all = "kebab-case")]
        #[command(next_help_heading = "Model options")]
        pub(crate) struct $Args {
            $( $(#[doc = $doc])* #[arg(long)] $field: Option<$ty>, )*
        }

        impl $Args {
            /// The parameters with every flag not given at its default.
            fn resolve(&self) -> $Model {
                type M = $Model;
                let d = M::default();
                M { $( $field: self.$field.clone().unwrap_or(d.$field), )* }
            }
        }

        impl ModelSpec for $Args {
            type Model = $Run;

            fn build(&self) -> Result<$Run, String> {
                let model = self.resolve();
                model.validate()?;
                ($build)(&model)
            }

            fn config(&self) -> serde_json::Value {
                serde_json::to_value(self.resolve()).expect("model parameters serialize")
            }

            fn default_end() -> Option<f64> {
                Some($end)
            }

            fn about() -> &'static str {
                $about
            }

            fn draw(draw: &mut Draw, flags: &mut Flags) {
                $draw(draw, flags)
            }
        }
    };
}

model_spec! {
    args: PholdPhasesArgs, model: chronon_models::PholdPhases,
    about: "PHOLD on a 2-D mesh in three phases of growing event cost (seed 003, §3.2).",
    end: 3.0, draw: draws::phold_phases,
    fields {
        /// Mesh columns [default: 45].
        width: u32,
        /// Mesh rows [default: 45].
        height: u32,
        /// Wrap the mesh into a torus: true or false [default: false].
        wrap: bool,
        /// Jobs each object starts with [default: 5].
        jobs_per_object: u32,
        /// Minimum hop delay, the lookahead [default: 0.1].
        lookahead: f64,
        /// Mean hop delay, lookahead included [default: 1.0].
        mean: f64,
        /// Virtual duration of each phase; run with --end 3 x this [default: 10].
        phase_length: f64,
        /// Busy work per event in phase A, microseconds [default: 30].
        work_a_us: f64,
        /// Busy work per event in phase B, microseconds [default: 150].
        work_b_us: f64,
        /// Busy work per event in phase C, microseconds [default: 300].
        work_c_us: f64,
    }
}

model_spec! {
    args: SimplesimArgs, model: chronon_models::SimpleSim,
    about: "SimpleSim: random messages, bounded queues, sized payloads (seed 000, §4.1).",
    end: 100.0, draw: draws::simplesim,
    fields {
        /// Number of LPs [default: 8].
        lps: u32,
        /// Queue size below which an event sends a second message [default: 5000].
        queue_bound: u32,
        /// Constant added to every delay [default: 5].
        lookahead: f64,
        /// Smallest random part of a delay [default: 1].
        delay_min: f64,
        /// Largest random part of a delay [default: 5].
        delay_max: f64,
        /// Payload bytes per message [default: 7000].
        payload_bytes: usize,
        /// Start events fall in [0, this) [default: 5].
        start_window: f64,
        /// Events before this time are left out of steady_events [default: 0].
        warmup: f64,
        /// What the model does with each payload byte: none (untouched, the seed's), read
        /// (the receiver sums it) or write (the sender fills it, the receiver checks it)
        /// [default: none].
        touch: chronon_models::simplesim::Touch,
    }
}

model_spec! {
    args: ManufacturingArgs, model: chronon_models::Manufacturing,
    about: "Production lines, assembly and testing stations (seed 002, §2.2).",
    end: 10_000.0, draw: draws::manufacturing,
    fields {
        /// Production lines [default: 4].
        lines: u32,
        /// Processing stations per line, each followed by a control station [default: 3].
        stations_per_line: u32,
        /// Assembly stations; 0 = parts leave after their line [default: 2].
        assembly_stations: u32,
        /// Testing stations [default: 3].
        testing_stations: u32,
        /// Mean time between part arrivals per line [default: 10].
        interarrival: f64,
        /// Mean processing time [default: 5].
        processing_mean: f64,
        /// Mean control time [default: 2].
        control_mean: f64,
        /// Mean assembly time [default: 8].
        assembly_mean: f64,
        /// Mean testing time [default: 15].
        testing_mean: f64,
        /// Probability that control sends a part back [default: 0.1].
        rework: f64,
        /// Transport time between stations, the lookahead [default: 0.5].
        transfer: f64,
        /// Statistics count parts arriving after this time [default: 0].
        warmup: f64,
        /// Busy work per event, microseconds (seed 002: 1-50) [default: 0].
        work_us: f64,
    }
}

model_spec! {
    args: PcsArgs, model: chronon_models::Pcs,
    about: "Personal communication system: cells, channels, calls, handoffs (seed 003, §3.4).",
    end: 5.0, draw: draws::pcs,
    fields {
        /// Cells per row of the hexagonal grid [default: 32].
        width: u32,
        /// Rows of cells [default: 32].
        height: u32,
        /// Channels per cell [default: 1000].
        channels: u32,
        /// Mean minutes between new calls in a cell [default: 0.004].
        call_interarrival: f64,
        /// Mean call duration, minutes [default: 2].
        call_duration: f64,
        /// Mean residence time in a cell, minutes; 0 = no handoffs [default: 5].
        residence: f64,
        /// Handoff transfer time, the lookahead, minutes [default: 0.01].
        handoff_delay: f64,
        /// Fading recomputation passes over the active calls per call setup [default: 0].
        fading_work: u32,
        /// Minutes between periodic fading recomputations per cell; 0 = none, else at least
        /// handoff-delay [default: 0].
        fading_period: f64,
        /// Statistics count calls after this time [default: 0].
        warmup: f64,
        /// Minutes between channel-occupancy samples (a global event; the report's
        /// model_series); 0 = none [default: 0].
        sample_period: f64,
    }
}

model_spec! {
    args: DatastoreArgs, model: chronon_models::DataStore,
    about: "Partitioned key/value store with batched transactions (seed 003, §3.3).",
    end: 200.0, draw: draws::datastore,
    fields {
        /// Nodes, one LP each [default: 64].
        nodes: u32,
        /// Partitions per node [default: 8].
        partitions_per_node: u32,
        /// Keys per partition [default: 1000].
        keys_per_partition: u32,
        /// Transactions per batch [default: 10].
        batching_factor: u32,
        /// Accesses per transaction [default: 4].
        ops_per_tx: u32,
        /// Probability that an access goes to another node [default: 0.2].
        remote: f64,
        /// Mean time between batches at a node [default: 1].
        batch_interarrival: f64,
        /// Lease time of an access; 0 = no conflicts [default: 0.5].
        hold: f64,
        /// One-way network delay, the lookahead [default: 0.05].
        net_delay: f64,
        /// Busy work per transaction and per remote request, microseconds (the example's
        /// figure, about the seed's 300 us per batch of 10) [default: 30].
        work_us: f64,
        /// Statistics count transactions decided after this time [default: 0].
        warmup: f64,
        /// When a batch allocates its request meta-data: round-robin (per access, the seed's
        /// original) or upfront (all at the batch start, the seed's "varied") [default: round-robin].
        alloc: chronon_models::datastore::Alloc,
    }
}

model_spec! {
    args: StarCliqueArgs, model: chronon_models::StarClique,
    runnable: chronon_models::net::NetModel, build: chronon_models::StarClique::build,
    about: "Packet network: one star per partition, hubs in a clique, UDP on/off (seed 000, §4.2).",
    end: 100.0, draw: draws::star_clique,
    fields {
        /// Stars, one per partition; the network has stars^2 nodes [default: 8].
        stars: u32,
        /// Leaf-hub bandwidth, bits/s [default: 10e6].
        leaf_bandwidth: f64,
        /// Leaf-hub delay, seconds [default: 0.001].
        leaf_delay: f64,
        /// Hub-hub bandwidth, bits/s [default: 100e6].
        hub_bandwidth: f64,
        /// Hub-hub delay, seconds [default: 0.01].
        hub_delay: f64,
        /// Packets each link direction may queue [default: 100].
        queue_packets: u32,
        /// Bytes per UDP packet [default: 1024].
        packet_bytes: u32,
        /// Mean source rate as a fraction of the leaf bandwidth [default: 0.2].
        load: f64,
        /// Mean on period, seconds [default: 0.5].
        on_mean: f64,
        /// Mean off period, seconds; 0 = always on [default: 0.5].
        off_mean: f64,
        /// Sources start uniformly in [0, this) seconds [default: 0.5].
        start_window: f64,
        /// Packets carry their bytes of data in a body the events of every hop share, checked
        /// at the sink; false: a packet's size is only a number [default: true].
        data: bool,
        /// How packet bodies are counted: heap (shared-heap BPtrs), or a chronon::refcount
        /// scheme: locked, lock-add, xadd, cas, per-thread, buffered, buffered-thread
        /// (seed 001 §3.3) [default: heap].
        refcount: chronon_models::net::Refcount,
    }
}

model_spec! {
    args: CampusArgs, model: chronon_models::Campus,
    runnable: chronon_models::net::NetModel, build: chronon_models::Campus::build,
    about: "Packet network: a ring of campus networks (seed 001, §1.3).",
    end: 2.0, draw: draws::campus,
    fields {
        /// Campuses on the ring [default: 4].
        campuses: u32,
        /// Servers per campus (Net1) [default: 4].
        servers: u32,
        /// LANs in each client subnetwork, Net2 and Net3 [default: 2].
        lans_per_net: u32,
        /// Clients per LAN [default: 42].
        clients_per_lan: u32,
        /// Access link bandwidth, bits/s [default: 100e6].
        lan_bandwidth: f64,
        /// Access link delay, seconds [default: 0.0005].
        lan_delay: f64,
        /// Campus backbone bandwidth, bits/s [default: 1e9].
        backbone_bandwidth: f64,
        /// Campus backbone delay, seconds [default: 0.001].
        backbone_delay: f64,
        /// Ring link bandwidth, bits/s [default: 1e9].
        ring_bandwidth: f64,
        /// Ring link delay, seconds [default: 0.01].
        ring_delay: f64,
        /// Packets each link direction may queue [default: 100].
        queue_packets: u32,
        /// Bytes per UDP packet [default: 512].
        packet_bytes: u32,
        /// Each client's mean rate as a fraction of its link [default: 0.01].
        load: f64,
        /// Mean on period, seconds [default: 0.5].
        on_mean: f64,
        /// Mean off period, seconds; 0 = always on [default: 0.5].
        off_mean: f64,
        /// Sources start uniformly in [0, this) seconds [default: 0.5].
        start_window: f64,
        /// Seconds between throughput samples (a global event; the report's model_series);
        /// 0 = none [default: 0].
        sample_period: f64,
        /// Packets carry their bytes of data in a body the events of every hop share, checked
        /// at the server [default: false].
        data: bool,
        /// How packet bodies are counted: heap (shared-heap BPtrs), or a chronon::refcount
        /// scheme: locked, lock-add, xadd, cas, per-thread, buffered, buffered-thread
        /// (seed 001 §3.3) [default: heap].
        refcount: chronon_models::net::Refcount,
    }
}

model_spec! {
    args: RandomArgs, model: chronon_models::Random,
    about: "A randomized test model: idle LPs, zero delays, ties, global events, uneven load (`chronon check` draws its parameters).",
    end: 1000.0, draw: draws::random,
    fields {
        /// Number of LPs [default: 16].
        lps: u32,
        /// Out-links per LP [default: 3].
        degree: u32,
        /// Smallest positive link lookahead [default: 0.5].
        lookahead: f64,
        /// Probability that a link has lookahead 0 [default: 0].
        zero_links: f64,
        /// Zero-lookahead links only go to higher LP ids: true or false [default: true].
        zero_acyclic: bool,
        /// Probability that a self-send has delay 0, at most 0.5 [default: 0].
        zero_self: f64,
        /// Delays are a lookahead plus 0, 1 or 2 quanta [default: 0.25].
        quantum: f64,
        /// The first K LPs start with no event [default: 4].
        idle_lps: u32,
        /// The other LPs start at this time or later [default: 1].
        start_at: f64,
        /// The last K LPs do extra work per event [default: 2].
        hot_lps: u32,
        /// Rounds of hashing per event of a hot LP [default: 200].
        hot_work: u32,
        /// Period of the global events; 0 = none [default: 0].
        global_period: f64,
        /// The global events also change LP states and send LP events: true or false
        /// [default: false].
        global_writes: bool,
        /// Seed of the random topology [default: 1].
        topology_seed: u64,
    }
}

/// The faulty model's flags (a test model that breaks a rule on purpose).
#[derive(Clone, Debug, Args, Deserialize, Serialize)]
pub(crate) struct FaultyArgs {
    /// bad-destination, negative-delay, nan-delay, below-lookahead, panic, finish-panic,
    /// topology-panic or global-panic.
    #[arg(long)]
    fault: String,
    /// Number of LPs.
    #[arg(long, default_value_t = 8)]
    lps: u32,
}

impl ModelSpec for FaultyArgs {
    type Model = chronon_models::faulty::Faulty;

    fn build(&self) -> Result<Self::Model, String> {
        if self.lps < 2 {
            return Err("--lps must be at least 2 for the faulty model".into());
        }
        Ok(chronon_models::faulty::Faulty {
            fault: self.fault.parse()?,
            culprit: 1,
            at: 3.0,
            lps: self.lps,
        })
    }

    fn default_end() -> Option<f64> {
        Some(1000.0)
    }

    fn about() -> &'static str {
        "A model that breaks a rule on purpose (for testing error reporting)."
    }
}
