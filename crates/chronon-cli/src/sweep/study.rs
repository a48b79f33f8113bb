//! A study's directory (`--out DIR`): `study.json` says which study it holds (model and run
//! flags), `runs/` holds one finished run's report per file (`p<point>-r<replication>.json`,
//! moved there only once the run completed), and the results beside them. A rerun of the same
//! study finds its finished runs there and skips them.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::write_atomic;
use crate::Failure;

/// What `study.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Definition {
    /// Marks the file as a sweep's, with the format's version.
    pub format: String,
    pub model: String,
    /// The run flags as given (lists and ranges unexpanded).
    pub args: Vec<String>,
    /// Replications per point (a rerun may raise it: the runs already finished stay valid).
    pub replications: u64,
}

pub(crate) const FORMAT: &str = "chronon-sweep 1";
const STUDY: &str = "study.json";

impl Definition {
    /// Whether `other` is the same study (replications may differ).
    fn same_study(&self, other: &Definition) -> bool {
        self.model == other.model && self.args == other.args
    }
}

/// An open study directory.
pub(crate) struct Study {
    pub dir: PathBuf,
}

/// The definition in `dir`, if `dir` holds a study.
pub(crate) fn read_definition(dir: &Path) -> Result<Option<Definition>, Failure> {
    let path = dir.join(STUDY);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Failure::bad_input(format!(
                "cannot read {}: {e}",
                path.display()
            )))
        }
    };
    match serde_json::from_str::<Definition>(&text) {
        Ok(d) if d.format == FORMAT => Ok(Some(d)),
        _ => Err(Failure::bad_input(format!(
            "{} is not a chronon sweep's study file",
            path.display()
        ))),
    }
}

impl Study {
    /// Checks that `dir` can hold `def` (it does not exist, is empty, or holds the same study)
    /// without writing anything; `Ok(true)` when it holds the same study already.
    pub(crate) fn check(dir: &Path, def: &Definition) -> Result<bool, Failure> {
        if !dir.exists() {
            return Ok(false);
        }
        if !dir.is_dir() {
            return Err(Failure::bad_input(format!(
                "--out {} is a file; give a directory",
                dir.display()
            )));
        }
        match read_definition(dir)? {
            Some(old) if old.same_study(def) => Ok(true),
            Some(old) => Err(Failure::bad_input(format!(
                "--out {} holds another study (chronon sweep {} {}); give another directory",
                dir.display(),
                old.model,
                old.args.join(" ")
            ))),
            None => {
                let empty = fs::read_dir(dir)
                    .map_err(|e| {
                        Failure::bad_input(format!("cannot read --out {}: {e}", dir.display()))
                    })?
                    .next()
                    .is_none();
                if empty {
                    Ok(false)
                } else {
                    Err(Failure::bad_input(format!(
                        "--out {} holds other files and no study; give a new or empty directory",
                        dir.display()
                    )))
                }
            }
        }
    }

    /// Creates (or reopens) the directory and writes `study.json`; leftovers of runs that
    /// never finished are removed.
    pub(crate) fn open(dir: &Path, def: Definition) -> Result<Study, Failure> {
        let runs = dir.join("runs");
        fs::create_dir_all(&runs).map_err(|e| {
            Failure::bad_input(format!("--out: cannot create {}: {e}", runs.display()))
        })?;
        let text = serde_json::to_string_pretty(&def).expect("definitions serialize") + "\n";
        write_atomic(&dir.join(STUDY), text.as_bytes()).map_err(|e| {
            Failure::runtime(format!(
                "--out: cannot write {}: {e}",
                dir.join(STUDY).display()
            ))
        })?;
        if let Ok(rd) = fs::read_dir(&runs) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.ends_with(".part.json") || name.ends_with(".err") {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        Ok(Study {
            dir: dir.to_path_buf(),
        })
    }

    pub(crate) fn runs_dir(&self) -> PathBuf {
        self.dir.join("runs")
    }

    /// Where the finished report of run `id` lives.
    pub(crate) fn report_path(&self, id: &str) -> PathBuf {
        report_path(&self.dir, id)
    }

    /// Keeps a finished run's report.
    pub(crate) fn keep(&self, id: &str, report: &str) -> Result<(), Failure> {
        let p = self.report_path(id);
        write_atomic(&p, report.as_bytes())
            .map_err(|e| Failure::runtime(format!("--out: cannot write {}: {e}", p.display())))
    }
}

/// The name of run (point, replication).
pub(crate) fn run_id(point: usize, rep: u64) -> String {
    format!("p{point}-r{rep}")
}

/// Where the finished report of run `id` lives in study directory `dir`.
pub(crate) fn report_path(dir: &Path, id: &str) -> PathBuf {
    dir.join("runs").join(format!("{id}.json"))
}

/// The finished report of run `id` in `dir`, if there is a complete one.
pub(crate) fn finished(dir: &Path, id: &str) -> Option<Value> {
    let text = fs::read_to_string(report_path(dir, id)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    (v["complete"] == Value::Bool(true)).then_some(v)
}
