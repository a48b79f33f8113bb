//! Time Warp over each transport across parts: a part over worker processes (`shm.rs`); over
//! MPI ranks, `../ranks/`. The run on threads (`setup.rs`) names only the seam
//! (`transport::tw::threads`).

#[cfg(all(target_os = "linux", not(chronon_loom)))]
mod shm;
