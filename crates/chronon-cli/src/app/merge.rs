//! A model's parameters from its flags and a `--config` file: a flag given on the command line
//! wins, then the file's key of the same name (the flag's long name), then the flag's default.
//! The merge goes through the parameters' serde form, so it works for any parameter struct.

use clap::parser::ValueSource;
use clap::{ArgMatches, Command};
use serde_json::Value;

use super::entry::clap_failure;
use super::spec::ModelSpec;
use crate::args::ConfigFile;
use crate::Failure;

/// The flags of `S` (long names), which are also its TOML keys.
pub(crate) fn keys<S: ModelSpec>() -> Vec<String> {
    args::<S>().into_iter().map(|(_, long)| long).collect()
}

/// (id, long name) of every long flag of `S`.
fn args<S: ModelSpec>() -> Vec<(String, String)> {
    S::augment_args(Command::new("model"))
        .get_arguments()
        .filter_map(|a| {
            a.get_long()
                .map(|l| (a.get_id().as_str().to_string(), l.to_string()))
        })
        .collect()
}

/// The default parameters (no flag given), if `S` has no required flag.
pub(crate) fn defaults<S: ModelSpec>() -> Option<S> {
    let m = S::augment_args(Command::new("model").no_binary_name(true))
        .try_get_matches_from(Vec::<String>::new())
        .ok()?;
    S::from_arg_matches(&m).ok()
}

/// The parameters: `m`'s flags over `file`'s keys over the defaults.
pub(crate) fn resolve<S: ModelSpec>(m: &ArgMatches, file: &ConfigFile) -> Result<S, Failure> {
    let given = S::from_arg_matches(m).map_err(|e| clap_failure(&e))?;
    if file.table().is_empty() {
        return Ok(given);
    }
    let base = serde_json::to_value(&given)
        .map_err(|e| Failure::runtime(format!("the model's parameters do not serialize: {e}")))?;
    let Value::Object(fields) = &base else {
        return Err(Failure::runtime(
            "the model's parameters serialize to no struct; they cannot be read from --config",
        ));
    };
    let mut taken = Vec::new();
    for (id, long) in args::<S>() {
        let Some(value) = file.table().get(&long) else {
            continue;
        };
        if matches!(
            m.value_source(&id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        // The field's serde name: the flag's id (the field name) or its long name (a struct
        // with `rename_all = "kebab-case"`).
        let key = if fields.contains_key(&id) || !fields.contains_key(&long) {
            id
        } else {
            long.clone()
        };
        if let Some(x) = non_finite(value) {
            return Err(Failure::bad_input(format!(
                "config file {}: key '{long}': {x} is not a finite number (the flag --{long} \
                 refuses it too where the model does; a config file holds finite numbers only)",
                file.path()
            )));
        }
        let value = serde_json::to_value(value).map_err(|e| {
            Failure::bad_input(format!("config file {}: key '{long}': {e}", file.path()))
        })?;
        taken.push((long, key, value));
    }
    let with = |items: &[(String, String, Value)]| {
        let mut v = base.clone();
        for (_, key, value) in items {
            v[key.as_str()] = value.clone();
        }
        serde_json::from_value::<S>(v)
    };
    with(&taken).map_err(|e| {
        // Name the key whose value is wrong.
        let culprit = taken
            .iter()
            .find_map(|t| with(std::slice::from_ref(t)).err().map(|e| (&t.0, e)));
        match culprit {
            Some((long, e)) => Failure::bad_input(format!(
                "config file {}: key '{long}': {}",
                file.path(),
                crate::one_line(&e.to_string())
            )),
            None => Failure::bad_input(format!(
                "config file {}: {}",
                file.path(),
                crate::one_line(&e.to_string())
            )),
        }
    })
}

/// The first non-finite float in `value` (`nan`, `inf`, `-inf`), if any. The merge goes through
/// JSON, which has no such numbers: they would turn into `null` and the parameter would take
/// its default, silently.
fn non_finite(value: &toml::Value) -> Option<f64> {
    match value {
        toml::Value::Float(x) if !x.is_finite() => Some(*x),
        toml::Value::Array(items) => items.iter().find_map(non_finite),
        toml::Value::Table(t) => t.values().find_map(non_finite),
        _ => None,
    }
}
