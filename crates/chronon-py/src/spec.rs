//! [`PySpec`]: a Python model registered with the runner, so that `run` (every executor,
//! `--procs`), `check`, `sweep` and `bench` work for it as for a model written in Rust.

use std::sync::Mutex;

use chronon_cli::{ModelSpec, SimHook};
use pyo3::prelude::*;

use crate::model::PyModel;

/// The Python model object of the run going on in this process and its end time, set before
/// the runner starts (the runner builds models from parameters alone) and cleared after it, so
/// that one process may run one model after another.
static MODEL: Mutex<Option<(Py<PyAny>, Option<f64>)>> = Mutex::new(None);

/// Sets (or with None clears) the model of the next run in this process.
pub(crate) fn set_model(model: Option<(Py<PyAny>, Option<f64>)>) {
    *MODEL.lock().unwrap_or_else(|e| e.into_inner()) = model;
}

/// The model object of this process's run and its end time.
fn model(py: Python<'_>) -> Option<(Py<PyAny>, Option<f64>)> {
    let m = MODEL.lock().unwrap_or_else(|e| e.into_inner());
    m.as_ref().map(|(obj, end)| (obj.clone_ref(py), *end))
}

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
        let Some((obj, _)) = model(py) else {
            return Err("no Python model was given to this process".into());
        };
        let line = |e: PyErr| crate::error_line(py, &e);
        if self.param.is_empty() {
            return Ok(obj);
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
        MODEL
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|(_, end)| *end)
    }

    fn about() -> &'static str {
        "a model written in Python"
    }

    fn check_reverse() -> Option<SimHook<PyModel>> {
        Some(|s| s.check_reverse())
    }
}
