//! Output files: every path is checked before the run starts, and every file is written
//! atomically after it.
//!
//! * [`Outputs::plan`] resolves each output to the file it will write, refuses two outputs that
//!   resolve to the same file (or to the `--config` file being read), creates missing parent
//!   directories, refuses a target that exists but is not a regular file, and proves each
//!   directory writable by creating and removing a probe file there. So a run that would end in
//!   "cannot write" fails in milliseconds, before it starts, with exit code 2.
//! * [`write_atomic`] writes a temporary file in the target's directory, flushes it to disk and
//!   renames it over the target: a full disk or a crash leaves either the old file or the
//!   complete new one, never a truncated one, and a failed write removes its temporary file.
//!   If the write still fails after the run (the disk filled up meanwhile), the caller keeps the
//!   results through [`rescue`].
//!
//! The environment variable `CHRONON_TEST_FAIL_WRITE=NAME` makes the write of every output
//! file named `NAME` fail half-way with "No space left on device": the tests use it to check
//! that a failed write leaves neither a truncated file nor a temporary file behind (a real
//! full disk cannot be staged portably; `/dev/full` is refused as not a regular file).

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::Failure;

/// The test hook described in the module documentation.
const FAIL_ENV: &str = "CHRONON_TEST_FAIL_WRITE";

/// One output file: the flag that asked for it and the file it writes.
#[derive(Clone, Debug)]
pub(crate) struct Output {
    /// The flag, as the user gave it (`--output`, `--gvt-csv`).
    pub flag: &'static str,
    /// The file written (a symbolic link is resolved to its target).
    pub path: PathBuf,
}

/// The output files of one run, checked.
#[derive(Debug, Default)]
pub(crate) struct Outputs {
    files: Vec<Output>,
}

/// Whether `p` names a directory: an existing one, a path ending in `/`, or a path that does
/// not exist and whose last part has no extension (`out/seq`: a report file is `.json`, so a
/// name without one is a directory the user means to create).
pub(crate) fn is_dir_arg(p: &Path) -> bool {
    p.is_dir()
        || p.as_os_str().to_string_lossy().ends_with('/')
        || (fs::symlink_metadata(p).is_err() && p.file_name().is_some() && p.extension().is_none())
}

impl Outputs {
    /// Checks `wanted` (flag, file) before the run; `inputs` are files the run reads (the
    /// `--config` file), which no output may overwrite.
    pub(crate) fn plan(
        wanted: &[(&'static str, PathBuf)],
        inputs: &[(&'static str, &Path)],
    ) -> Result<Outputs, Failure> {
        let mut files: Vec<Output> = Vec::new();
        for (flag, path) in wanted {
            let shown = path.display();
            if path.as_os_str().is_empty() {
                return Err(Failure::bad_input(format!(
                    "{flag} is empty; give a file path"
                )));
            }
            if path.is_dir() {
                return Err(Failure::bad_input(format!(
                    "{flag} {shown} is a directory; give a file path"
                )));
            }
            let dir = parent(path);
            fs::create_dir_all(&dir).map_err(|e| {
                // `create_dir_all` reports "File exists" when a component is a file.
                let not_dir = dir.ancestors().find(|a| a.is_file());
                let why = match not_dir {
                    Some(f) => format!("{} is a file, not a directory", f.display()),
                    None => short(&e),
                };
                Failure::bad_input(format!(
                    "{flag} {shown}: cannot create directory {}: {why}",
                    dir.display()
                ))
            })?;
            // Where the file really is: its directory without links, then the file (or the
            // file a link points to).
            let real = match fs::symlink_metadata(path) {
                Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path).map_err(|e| {
                    Failure::bad_input(format!(
                        "{flag} {shown} is a link chronon cannot follow: {}",
                        short(&e)
                    ))
                })?,
                _ => canonical_dir(&dir)?.join(file_name(path, flag)?),
            };
            if let Ok(m) = fs::metadata(&real) {
                if !m.is_file() {
                    return Err(Failure::bad_input(format!(
                        "{flag} {shown} exists and is not a regular file; chronon writes a \
                         temporary file and renames it over the target, so give a file path"
                    )));
                }
            }
            for (input, p) in inputs {
                if fs::canonicalize(p).is_ok_and(|p| p == real) {
                    return Err(Failure::bad_input(format!(
                        "{flag} {shown} is the {input} file this run reads; give another path"
                    )));
                }
            }
            if let Some(other) = files.iter().find(|o| o.path == real) {
                return Err(Failure::bad_input(format!(
                    "{flag} {shown} and {} both write {}; give them different paths",
                    other.flag,
                    real.display()
                )));
            }
            probe(&real).map_err(|e| {
                Failure::bad_input(format!(
                    "{flag} {shown}: cannot write in {}: {}",
                    parent(&real).display(),
                    short(&e)
                ))
            })?;
            files.push(Output { flag, path: real });
        }
        Ok(Outputs { files })
    }

    /// The file `flag` writes, if it was asked for.
    pub(crate) fn path(&self, flag: &str) -> Option<&Path> {
        self.files
            .iter()
            .find(|o| o.flag == flag)
            .map(|o| o.path.as_path())
    }

    /// Every file `flag` writes, in the order planned.
    pub(crate) fn paths<'a>(&'a self, flag: &'a str) -> impl Iterator<Item = &'a Path> + 'a {
        self.files
            .iter()
            .filter(move |o| o.flag == flag)
            .map(|o| o.path.as_path())
    }
}

/// The directory `path` is in (`.` for a bare file name).
fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn file_name(path: &Path, flag: &str) -> Result<OsString, Failure> {
    path.file_name().map(OsString::from).ok_or_else(|| {
        Failure::bad_input(format!(
            "{flag} {} does not name a file; give a file path",
            path.display()
        ))
    })
}

fn canonical_dir(dir: &Path) -> Result<PathBuf, Failure> {
    fs::canonicalize(dir).map_err(|e| {
        Failure::bad_input(format!(
            "cannot resolve directory {}: {}",
            dir.display(),
            short(&e)
        ))
    })
}

/// An I/O error in a few words, without the "(os error N)" suffix.
fn short(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A temporary name beside `target`, unique to this process and attempt.
fn temp_beside(target: &Path, what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // Ordering: a counter that only has to be unique.
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent(target).join(format!(".{name}.{what}-{}-{n}", std::process::id()))
}

/// Creates and removes a file beside `target`: the directory accepts new files.
fn probe(target: &Path) -> io::Result<()> {
    let p = temp_beside(target, "probe");
    let f = OpenOptions::new().write(true).create_new(true).open(&p);
    let removed = fs::remove_file(&p);
    f?;
    removed
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to
/// disk, then renamed over `path`. On failure the temporary file is removed and `path` is left
/// as it was.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_beside(path, "tmp");
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        write_all(&mut f, path, bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn write_all(f: &mut File, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let fail =
        std::env::var_os(FAIL_ENV).is_some_and(|name| path.file_name() == Some(name.as_os_str()));
    if fail {
        f.write_all(&bytes[..bytes.len() / 2])?;
        return Err(io::Error::from_raw_os_error(28)); // ENOSPC
    }
    f.write_all(bytes)
}

/// Writes an output file after the run; if that fails, saves the content in the system's
/// temporary directory instead, so that the results of a long run are not lost, and returns
/// the one-line error naming both.
pub(crate) fn write_or_rescue(flag: &str, path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    write_atomic(path, bytes).map_err(|e| {
        let what = format!("{flag}: cannot write {}: {}", path.display(), short(&e));
        match rescue(path, bytes) {
            Some(saved) => Failure::runtime(format!(
                "{what}; the content is saved in {} instead",
                saved.display()
            )),
            None => Failure::runtime(what),
        }
    })
}

/// Saves `bytes` in the temporary directory under `path`'s file name; the file saved.
fn rescue(path: &Path, bytes: &[u8]) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let target = std::env::temp_dir().join(format!("chronon-{}-{name}", std::process::id()));
    // The hook fails writes by file name; the rescue file has another name.
    write_atomic(&target, bytes).ok().map(|()| target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("chronon-output-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn write_atomic_replaces_the_file_and_leaves_nothing_else() {
        let d = scratch("atomic");
        let p = d.join("r.json");
        write_atomic(&p, b"old").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(entries(&d), ["r.json"]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn plan_refuses_the_same_file_twice_and_probes_nothing_behind() {
        let d = scratch("plan");
        let a = d.join("x.json");
        let b = d.join("sub/../x.json");
        fs::create_dir_all(d.join("sub")).unwrap();
        let e = Outputs::plan(&[("--output", a), ("--gvt-csv", b)], &[]).unwrap_err();
        assert!(e.message.contains("both write"), "{}", e.message);
        assert_eq!(entries(&d), ["sub"]);
        fs::remove_dir_all(&d).unwrap();
    }
}
