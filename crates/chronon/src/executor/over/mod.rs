//! The seams between the part runner (`crate::run`) and a family's part over each transport
//! across parts: a family implements [`shm::OverProcs`] (worker processes) and
//! [`mpi::OverRanks`] (MPI ranks) in its own `over/` folder, the only place where it names a
//! concrete transport. Adding a transport across parts: its folder under `transport/`, a seam
//! here, a part in each family's `over/`, and one arm in the part runner's dispatch.

#[cfg(feature = "mpi")]
pub(crate) mod mpi;
#[cfg(all(target_os = "linux", not(chronon_loom)))]
pub(crate) mod shm;
