//! Thread barriers behind one trait (seed 001 §3.2): `std::sync::Barrier`, a master/slave
//! semaphore barrier with two alternating slave semaphores, a global sense-reversing spin barrier
//! and a tree of spin barriers with fan-in `m`. Spinning backs off, then yields, then parks, so
//! more threads than cores still make progress. The protocols and their proofs are in
//! `README.md` beside this file; `chronon bench barriers` measures them.

pub(crate) mod park;
mod semaphore;
mod spin;

use std::fmt;

pub use semaphore::SemaphoreBarrier;
pub use spin::{SpinBarrier, TreeBarrier};

/// A reusable barrier for a fixed set of threads, each with an index `0..threads()`.
pub trait Barrier: Send + Sync + fmt::Debug {
    /// Blocks until every one of the `threads()` threads has called `wait` in this round. Each
    /// thread passes its own index, and no two threads pass the same index in one round.
    fn wait(&self, me: usize);
    /// The number of threads the barrier waits for.
    fn threads(&self) -> usize;
}

/// Which barrier a parallel executor uses (`--barrier`, `--fan-in`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BarrierKind {
    /// `std::sync::Barrier` (a mutex and a condition variable).
    Std,
    /// Master/slave semaphores ([`SemaphoreBarrier`]).
    Semaphore,
    /// One global sense-reversing spin barrier ([`SpinBarrier`]).
    Spin,
    /// A tree of spin barriers with the given fan-in ([`TreeBarrier`]).
    Tree {
        /// Children per node (at least 1).
        fan_in: usize,
    },
}

impl Default for BarrierKind {
    /// The tree with fan-in 4, the seed's choice.
    fn default() -> Self {
        BarrierKind::Tree { fan_in: 4 }
    }
}

impl BarrierKind {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BarrierKind::Std => "std",
            BarrierKind::Semaphore => "semaphore",
            BarrierKind::Spin => "spin",
            BarrierKind::Tree { .. } => "tree",
        }
    }

    /// Parses a `--barrier` name; `fan_in` is used by `tree` (it must be at least 1).
    pub fn parse(name: &str, fan_in: usize) -> Result<Self, String> {
        if fan_in == 0 {
            return Err("--fan-in is 0; it must be at least 1".into());
        }
        match name {
            "std" => Ok(BarrierKind::Std),
            "semaphore" => Ok(BarrierKind::Semaphore),
            "spin" => Ok(BarrierKind::Spin),
            "tree" => Ok(BarrierKind::Tree { fan_in }),
            other => Err(format!(
                "unknown --barrier '{other}' (allowed: std, semaphore, spin, tree)"
            )),
        }
    }

    /// A barrier of this kind for `threads` threads (at least 1).
    pub fn build(self, threads: usize) -> Box<dyn Barrier> {
        let n = threads.max(1);
        match self {
            BarrierKind::Std => Box::new(StdBarrier::new(n)),
            BarrierKind::Semaphore => Box::new(SemaphoreBarrier::new(n)),
            BarrierKind::Spin => Box::new(SpinBarrier::new(n)),
            BarrierKind::Tree { fan_in } => Box::new(TreeBarrier::new(n, fan_in.max(1))),
        }
    }
}

/// `std::sync::Barrier` behind the [`Barrier`] trait.
#[derive(Debug)]
pub struct StdBarrier {
    inner: std::sync::Barrier,
    n: usize,
}

impl StdBarrier {
    /// A barrier for `n` threads.
    pub fn new(n: usize) -> Self {
        StdBarrier {
            inner: std::sync::Barrier::new(n),
            n,
        }
    }
}

impl Barrier for StdBarrier {
    fn wait(&self, _me: usize) {
        self.inner.wait();
    }
    fn threads(&self) -> usize {
        self.n
    }
}

#[cfg(all(test, chronon_loom))]
mod loom_tests;
#[cfg(all(test, not(chronon_loom)))]
mod tests;
