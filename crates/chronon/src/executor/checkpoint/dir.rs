//! A checkpoint's directory: built under a hidden name, checked, and renamed into place.

use std::path::{Path, PathBuf};

use super::part;
use super::{Manifest, PartEntry, FORMAT};
use crate::error::{Setting, SimError};
use crate::model::Time;

const MANIFEST: &str = "manifest.json";

/// The directory of the checkpoint at `cut` in `dir`: `dir/t<cut>`.
pub fn checkpoint_path(dir: &Path, cut: Time) -> PathBuf {
    dir.join(format!("t{cut}"))
}

/// Where the checkpoint at `cut` is built before it is renamed into place (`owner`: the
/// process that coordinates the run, so that its worker processes find it too).
pub(crate) fn staging_path(dir: &Path, cut: Time, owner: u32) -> PathBuf {
    dir.join(format!(".t{cut}.partial-{owner}"))
}

/// Creates the staging directory (and `dir`), empty.
pub(crate) fn create_staging(path: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(path);
    std::fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Checks every part in `staging`, writes the manifest (`base` with the parts and the
/// checksum), syncs, and renames the directory to `target`. Returns the bytes written. On an
/// error the staging directory is removed and nothing is left behind.
pub(crate) fn finalize(staging: &Path, target: &Path, base: Manifest) -> Result<u64, String> {
    let done = finalize_in(staging, target, base);
    if done.is_err() {
        let _ = std::fs::remove_dir_all(staging);
    }
    done
}

fn finalize_in(staging: &Path, target: &Path, mut m: Manifest) -> Result<u64, String> {
    let mut bytes = 0;
    m.parts.clear();
    // Every part file, in the order of their numbers (a process may number its parts from
    // where its range starts).
    let mut numbered: Vec<(usize, String)> = std::fs::read_dir(staging)
        .map_err(|e| format!("{}: {e}", staging.display()))?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let k = name
                .strip_prefix("part-")?
                .strip_suffix(".bin")?
                .parse()
                .ok()?;
            Some((k, name))
        })
        .collect();
    numbered.sort();
    for (_, file) in numbered {
        // The writer checked what it wrote and synced it; its trailer says what it holds
        // (a restore reads every byte against the CRC).
        let t = part::trailer(&staging.join(&file))?;
        bytes += t.bytes;
        m.parts.push(PartEntry {
            file,
            bytes: t.bytes,
            crc32: t.crc32,
            lps: t.lps,
            events: t.events,
        });
    }
    let held: u64 = m.parts.iter().map(|p| p.lps).sum();
    if held != u64::from(m.lps) {
        return Err(format!(
            "its parts hold {held} of the run's {} LPs (a part was not written)",
            m.lps
        ));
    }
    let text = manifest_text(&mut m);
    let path = staging.join(MANIFEST);
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&path).map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
        if durable(&path) {
            f.sync_all().map_err(io)?;
        }
    }
    bytes += text.len() as u64;
    sync_dir(staging)?;
    // A checkpoint already at `target` (a run saved at the same cut before) is replaced: moved
    // aside, the new one renamed in, the old one removed.
    let old = target.with_extension(format!("old-{}", std::process::id()));
    let had_old = target.exists();
    if had_old {
        std::fs::rename(target, &old).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    std::fs::rename(staging, target).map_err(|e| format!("{}: {e}", target.display()))?;
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    if let Some(parent) = target.parent() {
        sync_dir(parent)?;
    }
    Ok(bytes)
}

/// Whether what is written under `path` must survive a crash: a checkpoint must, a cut a
/// chain keeps for itself (`globals::cut_dir`: global events, LPs that move) is read back
/// by the same run and removed, so it is not synced to disk.
pub(crate) fn durable(path: &Path) -> bool {
    !path.ancestors().any(|a| {
        a.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n.trim_start_matches('.')
                .starts_with(super::globals::CUTS_PREFIX)
        })
    })
}

fn sync_dir(dir: &Path) -> Result<(), String> {
    if !durable(dir) {
        return Ok(());
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// The manifest as JSON with its checksum filled in: the CRC-32 of the text written with
/// `"checksum": 0`, so that a reader checks the very bytes it read.
fn manifest_text(m: &mut Manifest) -> String {
    m.checksum = 0;
    let unsummed = serde_json::to_string_pretty(m).expect("manifests serialize") + "\n";
    let crc = crc32fast::hash(unsummed.as_bytes());
    m.checksum = crc;
    let at = unsummed.rfind(CHECKSUM_ZERO).expect("the checksum field");
    format!(
        "{}\"checksum\": {crc}{}",
        &unsummed[..at],
        &unsummed[at + CHECKSUM_ZERO.len()..]
    )
}

const CHECKSUM_ZERO: &str = "\"checksum\": 0";

/// Whether `text` holds the checksum `stored` of itself (see [`manifest_text`]).
fn checksum_holds(text: &str, stored: u32) -> bool {
    let field = format!("\"checksum\": {stored}");
    match text.rfind(&field) {
        Some(at) => {
            let unsummed = format!(
                "{}{CHECKSUM_ZERO}{}",
                &text[..at],
                &text[at + field.len()..]
            );
            crc32fast::hash(unsummed.as_bytes()) == stored
        }
        None => false,
    }
}

/// Reads and checks the manifest of the checkpoint at `path` (its checksum and format; the
/// parts are checked when the checkpoint is restored).
pub fn read_manifest(path: &Path) -> Result<Manifest, SimError> {
    let bad = |problem: String| SimError::config(Setting::Restore, problem);
    let file = path.join(MANIFEST);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && path.is_dir() => {
            return Err(bad(format!(
                "{} is not a checkpoint: it has no {MANIFEST} (a checkpoint still being written has none)",
                path.display()
            )))
        }
        Err(e) => return Err(bad(format!("{}: {e}", file.display()))),
    };
    let m: Manifest = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "{} is truncated or corrupted ({e})",
            file.display()
        ))
    })?;
    if !checksum_holds(&text, m.checksum) {
        return Err(bad(format!(
            "{} fails its checksum: it was changed or corrupted",
            file.display()
        )));
    }
    if m.format != FORMAT {
        return Err(bad(format!(
            "{} has checkpoint format {}; this chronon ({}) reads format {FORMAT}",
            path.display(),
            m.format,
            env!("CARGO_PKG_VERSION")
        )));
    }
    Ok(m)
}

/// Removes what runs that were killed while saving left in `dir`: staging directories and the
/// cuts of global events whose coordinating process is gone (a checkpoint still being written
/// is never restored, but nothing half-written should stay behind either).
pub(super) fn remove_stale(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        // A staging directory (`.t<cut>.partial-<pid>`), or the cuts of a chain's global
        // events (`[.]chronon-cuts-<pid>-<n>`).
        let pid = if name.starts_with(".t") {
            name.rsplit_once(".partial-").map(|(_, pid)| pid)
        } else {
            name.trim_start_matches('.')
                .strip_prefix(super::globals::CUTS_PREFIX)
                .and_then(|rest| rest.split_once('-'))
                .map(|(pid, _)| pid)
        };
        let Some(pid) = pid.and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
