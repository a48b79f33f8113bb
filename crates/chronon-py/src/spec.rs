//! [`PySpec`]: a Python model registered with the runner, so that `run` (every executor,
//! `--procs`), `check`, `sweep` and `bench` work for it as for a model written in Rust.

use std::sync::OnceLock;

use chronon_cli::{ModelSpec, SimHook};
use pyo3::prelude::*;

use crate::model::PyModel;

/// The process's Python model object and its end time, set by `main` before the runner
/// starts (the runner builds models from parameters alone).
pub(crate) static MODEL: OnceLock<(Py<PyAny>, Option<f64>)> = OnceLock::new();

/// The parameters of a Python model on the command line: the object itself comes from the
/// Python side; `--param NAME=VALUE` sets one of its attributes for this run.
#[derive(Clone, Debug, Default, clap::Args, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PySpec {
    /// An attribute of the model to set for this run, as NAME=VALUE (VALUE a Python literal:
    /// 0.5, 'text', [1, 2]; anything else is a string). Repeat it for several.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub param: Vec<String>,
}

impl PySpec {
    /// A copy of the model object with the parameters set.
    fn object(&self, py: Python<'_>) -> Result<Py<PyAny>, String> {
        let Some((obj, _)) = MODEL.get() else {
            return Err("no Python model was given to this process".into());
        };
        let line = |e: PyErr| crate::error_line(py, &e);
        if self.param.is_empty() {
            return Ok(obj.clone_ref(py));
        }
        let copy = py
            .import("copy")
            .and_then(|m| m.getattr("copy"))
            .and_then(|f| f.call1((obj.bind(py),)))
            .map_err(line)?;
        let literal = py
            .import("ast")
            .and_then(|m| m.getattr("literal_eval"))
            .map_err(line)?;
        for p in &self.param {
            let Some((name, value)) = p.split_once('=') else {
                return Err(format!("--param {p}: give NAME=VALUE"));
            };
            let name = name.trim();
            if !copy.hasattr(name).map_err(line)? {
                return Err(format!("--param {p}: the model has no attribute '{name}'"));
            }
            let v = literal
                .call1((value,))
                .unwrap_or_else(|_| pyo3::types::PyString::new(py, value).into_any());
            copy.setattr(name, v).map_err(line)?;
        }
        Ok(copy.unbind())
    }
}

impl ModelSpec for PySpec {
    type Model = PyModel;

    fn build(&self) -> Result<PyModel, String> {
        crate::gil::attach(|py| {
            let obj = self.object(py)?;
            PyModel::new(py, obj)
        })
    }

    fn default_end() -> Option<f64> {
        MODEL.get().and_then(|(_, end)| *end)
    }

    fn about() -> &'static str {
        "a model written in Python"
    }

    fn check_reverse() -> Option<SimHook<PyModel>> {
        Some(|s| s.check_reverse())
    }
}
