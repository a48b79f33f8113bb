//! Under `mpirun` (MPICH's hydra, Linux, feature `mpi`): one line naming a rank that a signal
//! killed, and every other rank of its machine ended with it. The protocol, its invariants and
//! why the line is printed exactly once are in this folder's README.
//!
//! Each rank process splits itself in two before anything else runs ([`supervise`], the first
//! call of `main`): the process hydra started becomes a small *parent* that only waits, and its
//! forked *child* runs chronon — MPI, the model, everything. The parent is the child's parent,
//! so it learns how the child ended from `waitpid` (no race with anyone's reaping); and hydra
//! only sees the parent, so nothing of hydra acts on the death before the parent has said it.

mod parent;
mod siblings;

pub(crate) use parent::supervise;

/// The name the running rank (the child) gives itself once `MPI_Init` has returned:
/// `chronon-rank-R` in `ps -o comm` and `/proc/PID/comm` (15 bytes at most, the kernel's limit).
pub(crate) fn name_rank(rank: usize) {
    parent::set_name(&format!("chronon-rank-{rank}"));
}
