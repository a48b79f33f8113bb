//! The conservative family over each transport: the run on threads (`threads.rs`), a part over
//! worker processes (`shm.rs`) and over MPI ranks (`mpi.rs`). The only files of the family that
//! name a concrete transport.

#[cfg(feature = "mpi")]
mod mpi;
#[cfg(all(target_os = "linux", not(chronon_loom)))]
mod shm;
pub(super) mod threads;
