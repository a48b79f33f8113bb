//! A model's parameters from its flags and a `--config` file: a flag given on the command line
//! wins, then the file's key of the same name (the flag's long name), then the flag's default.
//! The merge goes through the parameters' serde form, so it works for any parameter struct.

use clap::parser::ValueSource;
use clap::{ArgMatches, Command};
use serde_json::Value;

use crate::args::ConfigFile;
use crate::registry::ModelSpec;
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

/// A model configuration's keys in flag spelling (`arrival_scale` -> `arrival-scale`): what a
/// report's `config` and a checkpoint's manifest hold, so that a key reads as the flag it is.
pub(crate) fn flag_spelling(config: Value) -> Value {
    match config {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (k.replace('_', "-"), v))
                .collect(),
        ),
        other => other,
    }
}

/// The parameters: `m`'s flags over `file`'s keys over `saved` (the configuration a
/// checkpoint recorded, keys in either spelling) over the defaults.
pub(crate) fn resolve<S: ModelSpec>(
    m: &ArgMatches,
    file: &ConfigFile,
    saved: Option<&Value>,
) -> Result<S, Failure> {
    let given = S::from_arg_matches(m).map_err(|e| Failure::clap(&e))?;
    let saved = saved.cloned().map(flag_spelling);
    let saved = saved.as_ref().and_then(Value::as_object);
    if file.table().is_empty() && saved.is_none() {
        return Ok(given);
    }
    let base = serde_json::to_value(&given)
        .map_err(|e| Failure::runtime(format!("the model's parameters do not serialize: {e}")))?;
    let Value::Object(fields) = &base else {
        return Err(Failure::runtime(
            "the model's parameters serialize to no struct; they cannot be read from --config or a checkpoint",
        ));
    };
    let mut taken = Vec::new();
    for (id, long) in args::<S>() {
        if matches!(
            m.value_source(&id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        if let Some(x) = file.table().get(&long).and_then(non_finite) {
            return Err(Failure::bad_input(format!(
                "config file {}: key '{long}': {x} is not a finite number (the flag --{long} \
                 refuses it too where the model does; a config file holds finite numbers only)",
                file.path()
            )));
        }
        let value = match (file.table().get(&long), saved.and_then(|s| s.get(&long))) {
            (Some(v), _) => serde_json::to_value(v).map_err(|e| {
                Failure::bad_input(format!("config file {}: key '{long}': {e}", file.path()))
            })?,
            (None, Some(v)) => v.clone(),
            (None, None) => continue,
        };
        let from = if file.table().contains_key(&long) {
            format!("config file {}", file.path())
        } else {
            "the checkpoint's configuration".to_string()
        };
        // The field's serde name: the flag's id (the field name) or its long name (a struct
        // with `rename_all = "kebab-case"`).
        let key = if fields.contains_key(&id) || !fields.contains_key(&long) {
            id
        } else {
            long.clone()
        };
        taken.push((long, key, value, from));
    }
    let with = |items: &[(String, String, Value, String)]| {
        let mut v = base.clone();
        for (_, key, value, _) in items {
            v[key.as_str()] = value.clone();
        }
        serde_json::from_value::<S>(v)
    };
    with(&taken).map_err(|e| {
        // Name the key whose value is wrong.
        let culprit = taken
            .iter()
            .find_map(|t| with(std::slice::from_ref(t)).err().map(|e| (t, e)));
        match culprit {
            Some((t, e)) => Failure::bad_input(format!(
                "{}: key '{}': {}",
                t.3,
                t.0,
                crate::one_line(&e.to_string())
            )),
            None => Failure::bad_input(format!(
                "model parameters from a config file or checkpoint: {}",
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
