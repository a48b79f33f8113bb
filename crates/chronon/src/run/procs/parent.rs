//! The parent of a run over processes, for every family: the heap directory and pipes, the
//! launch, and the coordinator that reads the children's outputs while they run.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsFd;

use super::{ProcsOptions, RUN_ENV};
use crate::error::io_error;
use crate::error::SimError;
use crate::executor::part_out::PartOut;
use crate::executor::RunConfig;
use crate::model::{Model, ModelStats};
use crate::run::coordinate::{coordinate, first_error, Parts};
use crate::shm::registry::Directory;
use crate::shm::{Control, Launcher};

/// The parent's part of every multi-process run (conservative or Time Warp): starts the
/// children with the control and net segments, gathers their reports and `model_stats`, and
/// returns the children's outcomes once every child has exited; the first error (earliest
/// (time, LP)) if any child failed.
#[allow(clippy::too_many_arguments)]
pub(super) fn parent_run<M: Model>(
    model: &M,
    cfg: &RunConfig,
    opts: &ProcsOptions,
    threads: usize,
    owner: &[u32],
    sig: &str,
    control: &Control,
    net: &crate::shm::Segment,
) -> Result<(Vec<PartOut>, ModelStats), SimError> {
    let procs = opts.procs;
    let dir = Directory::create().map_err(io_error("cannot create the heap directory"))?;
    // Per child: a result pipe (child → parent: its report, then finish replies) and a
    // request pipe (parent → child: finish requests; closing it lets the child exit).
    let mut results_r = Vec::with_capacity(procs);
    let mut results_w = Vec::with_capacity(procs);
    let mut requests_r = Vec::with_capacity(procs);
    let mut requests_w = Vec::with_capacity(procs);
    for _ in 0..procs {
        let (r, w) = pipe().map_err(io_error("cannot create a pipe"))?;
        results_r.push(r);
        results_w.push(w);
        let (r, w) = pipe().map_err(io_error("cannot create a pipe"))?;
        requests_r.push(r);
        requests_w.push(w);
    }
    let args = opts
        .args
        .clone()
        .unwrap_or_else(crate::program::program_args);
    let (launched, gathered) = std::thread::scope(|s| {
        // The coordinator reads every child's report, then completes `model_stats` (asking
        // children to run `Model::finish` where it reads figures), then closes the request
        // pipes so the children exit. It never blocks forever: once every child is gone and
        // our own write ends are closed (`launch` returns), every read ends.
        let coordinator = s.spawn(|| {
            let mut pipes = Pipes {
                readers: results_r,
                requests: requests_w,
            };
            coordinate(model, cfg, owner, threads, &mut pipes)
        });
        let segment = cfg.ckpt.as_ref().map_or(0, |c| c.segment);
        let launched = launch(
            (procs, segment),
            cfg,
            args,
            control,
            net,
            &dir,
            sig,
            results_w,
            requests_r,
        );
        (launched, coordinator.join().unwrap_or(None))
    });
    if let Err(e) = launched {
        return Err(SimError::Process(e.to_string()));
    }
    let Some((mut outs, stats)) = gathered else {
        return Err(SimError::Process(
            "a worker process exited without a readable report".into(),
        ));
    };
    if let Some(e) = first_error(&mut outs) {
        return Err(e);
    }
    crate::run::coordinate::note_part_errors(cfg, &mut outs);
    Ok((outs, stats?))
}

/// Worker processes' pipes.
struct Pipes {
    readers: Vec<std::fs::File>,
    requests: Vec<std::fs::File>,
}

impl Parts for Pipes {
    fn read(&mut self, p: usize) -> Option<Vec<u8>> {
        read_msg(&mut self.readers[p])
    }
    fn write(&mut self, p: usize, bytes: &[u8]) -> bool {
        self.requests
            .get_mut(p)
            .is_some_and(|w| write_msg(w, bytes).is_ok())
    }
    fn close(&mut self) {
        self.requests.clear();
    }
    fn count(&self) -> usize {
        self.readers.len()
    }
}

/// Starts the children with the segments and their pipe ends, waits for them all, and closes
/// this process's copies of the children's pipe ends.
#[allow(clippy::too_many_arguments)]
fn launch(
    (procs, segment): (usize, usize),
    cfg: &RunConfig,
    args: Vec<OsString>,
    control: &Control,
    net: &crate::shm::Segment,
    dir: &Directory,
    sig: &str,
    results_w: Vec<std::fs::File>,
    requests_r: Vec<std::fs::File>,
) -> Result<(), crate::shm::LaunchError> {
    let mut launcher = Launcher::new(procs)
        .args(args)
        .segment(control.segment())
        .segment(net)
        .env(RUN_ENV, sig)
        .env(
            crate::executor::checkpoint::SEGMENT_ENV,
            segment.to_string(),
        )
        .env(
            crate::executor::checkpoint::LINK_END_ENV,
            format!("{:x}", cfg.end.to_bits()),
        )
        .interrupt_on(cfg.progress.clone())
        .quiet();
    // The cut a link of a chain starts from and the directory it saves into (they depend on
    // the global events the chain ran, which only this process knows).
    if let Some(ck) = &cfg.ckpt {
        if let (true, Some(from)) = (segment > 0, &ck.start) {
            launcher = launcher.env(
                crate::executor::checkpoint::LINK_FROM_ENV,
                from.path.clone(),
            );
        }
        if let Some(save) = &ck.save {
            launcher = launcher.env(crate::executor::checkpoint::LINK_SAVE_ENV, save.clone());
        }
        // The LPs' workers where the chain moved them (`--balance`).
        if let Some(map) = &ck.owners_file {
            launcher = launcher.env(crate::executor::checkpoint::LINK_MAPPING_ENV, map.clone());
        }
    }
    for w in &results_w {
        launcher = launcher.fd(w.as_fd());
    }
    for r in &requests_r {
        launcher = launcher.fd(r.as_fd());
    }
    // Descriptor 2 + 2P: where every process announces its heap segments.
    launcher = launcher.segment(dir.segment());
    launcher.run()
}

/// A pipe (read end, write end), both close-on-exec (the launcher passes the child's ends).
fn pipe() -> std::io::Result<(std::fs::File, std::fs::File)> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    Ok((std::fs::File::from(r), std::fs::File::from(w)))
}

/// Reads one length-prefixed message.
pub(super) fn read_msg(r: &mut impl Read) -> Option<Vec<u8>> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len).ok()?;
    let mut buf = vec![0u8; usize::try_from(u64::from_le_bytes(len)).ok()?];
    r.read_exact(&mut buf).ok()?;
    Some(buf)
}

/// Writes one length-prefixed message.
pub(super) fn write_msg(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    w.write_all(&(bytes.len() as u64).to_le_bytes())?;
    w.write_all(bytes)?;
    w.flush()
}
