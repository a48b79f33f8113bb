//! The one system call of placement: setting the calling thread's CPU affinity
//! (`sched_setaffinity(2)` through rustix's safe wrapper; no `unsafe` here), and reading the
//! CPUs this process may use.

/// Whether this OS lets a thread choose its core.
pub(super) const SUPPORTED: bool = cfg!(target_os = "linux");

/// Pins the calling thread to `cpu` alone.
#[cfg(target_os = "linux")]
pub(super) fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    use rustix::thread::{sched_setaffinity, CpuSet};
    if cpu >= CpuSet::MAX_CPU {
        return Err(std::io::Error::other("CPU number out of range"));
    }
    let mut set = CpuSet::new();
    set.set(cpu);
    // `None`: the calling thread (pid 0 to the kernel's per-thread call).
    sched_setaffinity(None, &set).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn pin_current_thread(_cpu: usize) -> std::io::Result<()> {
    Err(std::io::Error::other("pinning is supported on Linux only"))
}

/// The CPUs the calling thread may run on (inherited from the process: a `taskset` or a
/// container's cpuset narrows it), in increasing order; empty where unknown.
#[cfg(target_os = "linux")]
pub(super) fn allowed_cpus() -> Vec<usize> {
    use rustix::thread::{sched_getaffinity, CpuSet};
    match sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}
