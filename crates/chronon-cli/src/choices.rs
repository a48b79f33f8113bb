//! The run options that choose among names (`--sync`, `--queue`, `--mapping`, `--state-saving`,
//! `--barrier`, `--runtime`, `--payload`, `--pin`): one enum each, parsed by clap from the
//! command line and by serde from a TOML file under the same kebab-case names, written back
//! into the report's `config` with those names, and mapped onto the library's settings. The
//! library does not depend on clap: these mirror its enums.

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// A choice enum: each value's one spelling (`Value = "value"`) is what `--help`, the parse
/// error, the TOML file and the report's `config` all use. `unnamed`: no `name()` (the report
/// writes the library's name for it).
macro_rules! choice {
    (unnamed $(#[$m:meta])* $name:ident { $($v:ident = $s:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize, Serialize)]
        pub(crate) enum $name {
            $(
                #[value(name = $s)]
                #[serde(rename = $s)]
                $v,
            )*
        }
    };
    ($(#[$m:meta])* $name:ident { $($v:ident = $s:literal),* $(,)? }) => {
        choice!(unnamed $(#[$m])* $name { $($v = $s),* });

        impl $name {
            /// The value's name on the command line and in config files.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $($name::$v => $s,)*
                }
            }
        }
    };
}

choice!(
    /// `--sync`: which executor.
    Sync {
        Seq = "seq",
        Window = "window",
        NullMessage = "null-message",
        Lockstep = "lockstep",
        Timewarp = "timewarp",
    }
);
choice!(
    unnamed
    /// `--queue`: the pending-event set.
    Queue {
        Heap = "heap",
        Ladder = "ladder",
    }
);
/// `--mapping`: LPs to workers: `block`, `round-robin`, or `profile:FILE` (contiguous blocks
/// of about equal cost from an earlier run's LP costs, `run/profile.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub(crate) enum MappingArg {
    Block,
    RoundRobin,
    Profile(std::path::PathBuf),
}

impl MappingArg {
    /// From the command line or a config file.
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        match s {
            "block" => Ok(MappingArg::Block),
            "round-robin" => Ok(MappingArg::RoundRobin),
            _ => match s.strip_prefix("profile:") {
                Some(f) if !f.is_empty() => Ok(MappingArg::Profile(f.into())),
                _ => Err(
                    "allowed: block, round-robin, profile:FILE (an LP-cost file that --lp-costs wrote)"
                        .to_string(),
                ),
            },
        }
    }

    /// As given on the command line and written in the report's `config`.
    pub(crate) fn name(&self) -> String {
        match self {
            MappingArg::Block => "block".into(),
            MappingArg::RoundRobin => "round-robin".into(),
            MappingArg::Profile(p) => format!("profile:{}", p.display()),
        }
    }
}

impl TryFrom<String> for MappingArg {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        MappingArg::parse(&s)
    }
}

impl From<MappingArg> for String {
    fn from(m: MappingArg) -> String {
        m.name()
    }
}
choice!(
    /// `--state-saving`: how Time Warp restores states.
    StateSaving {
        Copy = "copy",
        Reverse = "reverse",
        Auto = "auto",
    }
);
choice!(
    /// `--barrier`: the window and lock-step executors' barrier.
    Barrier {
        Std = "std",
        Semaphore = "semaphore",
        Spin = "spin",
        Tree = "tree",
    }
);
choice!(
    /// `--runtime`: the lock-step runtime system (seed 002).
    Runtime {
        Threads = "threads",
        WorkStealing = "work-stealing",
        ActiveThreads = "active-threads",
        Bsp = "bsp",
    }
);
choice!(
    /// `--payload`: how `--procs` moves `BPtr` payloads.
    Payload {
        ZeroCopy = "zero-copy",
        Copy = "copy",
    }
);
choice!(
    /// `--pin`: whether worker threads are pinned to cores.
    Pin {
        Auto = "auto",
        On = "on",
        Off = "off",
    }
);

impl std::fmt::Display for Sync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Queue> for chronon::QueueKind {
    fn from(q: Queue) -> Self {
        match q {
            Queue::Heap => chronon::QueueKind::Heap,
            Queue::Ladder => chronon::QueueKind::Ladder,
        }
    }
}

impl From<StateSaving> for chronon::StateSaving {
    fn from(s: StateSaving) -> Self {
        match s {
            StateSaving::Copy => chronon::StateSaving::Copy,
            StateSaving::Reverse => chronon::StateSaving::Reverse,
            StateSaving::Auto => chronon::StateSaving::Auto,
        }
    }
}

impl From<Pin> for chronon::placement::Pin {
    fn from(p: Pin) -> Self {
        match p {
            Pin::Auto => chronon::placement::Pin::Auto,
            Pin::On => chronon::placement::Pin::On,
            Pin::Off => chronon::placement::Pin::Off,
        }
    }
}

impl Barrier {
    /// The library's barrier, with `fan_in` for the tree.
    pub(crate) fn kind(self, fan_in: usize) -> chronon::barrier::BarrierKind {
        use chronon::barrier::BarrierKind;
        match self {
            Barrier::Std => BarrierKind::Std,
            Barrier::Semaphore => BarrierKind::Semaphore,
            Barrier::Spin => BarrierKind::Spin,
            Barrier::Tree => BarrierKind::Tree { fan_in },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's, serde's and `name`'s spellings agree, for every value of every choice.
    fn agree<T: ValueEnum + Serialize + Copy>(name: impl Fn(T) -> &'static str) {
        for v in T::value_variants() {
            let clap = v.to_possible_value().expect("no value is skipped");
            assert_eq!(clap.get_name(), name(*v));
            assert_eq!(
                serde_json::to_value(v).expect("serializes"),
                serde_json::Value::from(name(*v))
            );
        }
    }

    #[test]
    fn every_spelling_agrees() {
        agree(Sync::name);
        // The report writes the library's name for the queue.
        agree(|q: Queue| chronon::QueueKind::from(q).name());
        for m in ["block", "round-robin", "profile:a/b.csv"] {
            assert_eq!(MappingArg::parse(m).unwrap().name(), m);
        }
        assert!(MappingArg::parse("profile:").is_err());
        assert!(MappingArg::parse("blocks").is_err());
        agree(StateSaving::name);
        agree(Barrier::name);
        agree(Runtime::name);
        agree(Payload::name);
        agree(Pin::name);
        assert_eq!(
            chronon::placement::Pin::from(Pin::Off).name(),
            Pin::Off.name()
        );
    }
}
