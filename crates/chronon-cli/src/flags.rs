//! The library's configuration errors in the command line's words: each
//! [`chronon::Setting`] has the flag (and TOML key) that sets it, so a refusal from the library
//! reads as one of the CLI's own (`--procs is 0; it must be at least 1 worker process`).

use chronon::{ConfigError, Setting, SimError};

/// The flag that sets `setting`; `None` for what no flag sets (the model's own declarations,
/// the run as a whole).
pub(crate) fn flag(setting: Setting) -> Option<&'static str> {
    Some(match setting {
        Setting::Lps => "--lps",
        Setting::EndTime => "--end",
        Setting::Executor => "--sync",
        Setting::Threads => "--threads",
        Setting::Processes => "--procs",
        Setting::Ranks => "--ranks",
        Setting::CheckReverse => "--check-reverse",
        Setting::HeapClasses => "--heap-classes",
        Setting::HeapSegments => "--heap-segments",
        Setting::StateSaving => "--state-saving",
        Setting::SaveEvery => "--save-every",
        Setting::MaxMemory => "--max-memory",
        Setting::Window => "--window",
        Setting::GvtEvery => "--gvt-every",
        Setting::Preempt => "--preempt",
        Setting::TickPeriod => "--tick-us",
        Setting::Alpha => "--alpha",
        Setting::MaxSuspended => "--max-suspended",
        Setting::Barrier => "--barrier",
        Setting::Dedicated => "--dedicated",
        Setting::SharedSets => "--shared-sets",
        Setting::MaxNullMessages => "--max-null-messages",
        Setting::Runtime => "--runtime",
        Setting::Threshold => "--threshold",
        Setting::Mapping => "--mapping",
        Setting::CheckpointEvery => "--checkpoint-every",
        Setting::CheckpointAt => "--checkpoint-at",
        Setting::CheckpointDir => "--checkpoint-dir",
        Setting::Restore => "--restore",
        Setting::Reseed => "--reseed",
        Setting::Balance => "--balance",
        _ => return None,
    })
}

/// A configuration error as the CLI says it: `FLAG is VALUE; PROBLEM`, every setting the
/// problem mentions named by its flag.
pub(crate) fn config(e: &ConfigError) -> String {
    let problem = e.render(|s| flag(s).map_or_else(|| s.name().to_string(), str::to_string));
    match flag(e.setting) {
        Some(f) if !e.value.is_empty() => format!("{f} is {}; {problem}", e.value),
        _ if !e.value.is_empty() => format!("{}({}): {problem}", e.setting.name(), e.value),
        _ => problem,
    }
}

/// A library error's one-line message, configuration errors in flag names.
pub(crate) fn render(e: &SimError) -> String {
    match e {
        SimError::Config(c) => format!("invalid configuration: {}", config(c)),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_refusal_names_the_flag() {
        let e = SimError::Config(ConfigError::new(
            Setting::Processes,
            0,
            "it must be at least 1 worker process",
        ));
        assert_eq!(
            e.to_string(),
            "invalid configuration: processes(0): it must be at least 1 worker process"
        );
        assert_eq!(
            render(&e),
            "invalid configuration: --procs is 0; it must be at least 1 worker process"
        );
        let whole = SimError::Config(ConfigError::about(Setting::Model, "a whole sentence"));
        assert_eq!(render(&whole), "invalid configuration: a whole sentence");
        let named = SimError::Config(ConfigError::about(
            Setting::Processes,
            "$runtime work-stealing does not run across processes; leave out $processes",
        ));
        assert_eq!(
            render(&named),
            "invalid configuration: --runtime work-stealing does not run across processes; leave out --procs"
        );
    }
}
