//! Giving the allocator's free memory back to the operating system (glibc's `malloc_trim`).
//!
//! Each thread that allocates gets a glibc arena of its own, and memory a worker frees stays
//! in its arena, resident, until the allocator reuses it. Under Time Warp that slack comes and
//! goes with rollbacks and fossil collection, and it counts in the VmRSS that `--max-memory`
//! bounds though it holds nothing: on a 9-LP star-clique run with 4 threads thrashing on 2
//! cores, the peak RSS was 2.4 times the bytes Time Warp held. The memory bound trims before
//! it judges a sample too large (time_warp/memory.rs).

/// Returns the free memory of every arena to the OS where the allocator can (glibc); `true`
/// when some was released.
pub(crate) fn release_free_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // Safety: `malloc_trim` takes no pointer and touches only the allocator's own state,
        // under each arena's lock (glibc: MT-Safe).
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    /// VmRSS in bytes.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn rss() -> u64 {
        let s = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 1024
    }

    #[test]
    fn free_memory_in_the_middle_of_an_arena_goes_back_to_the_os() {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // 64 MB in 1000-byte blocks (arena chunks, not mmapped ones); every 16th is kept,
            // so the arena cannot shrink from its top: only a trim gives the rest back.
            let mut blocks: Vec<Vec<u8>> = (0..64 * 1024).map(|i| vec![i as u8; 1000]).collect();
            let mut i = 0;
            blocks.retain(|_| {
                i += 1;
                i % 16 == 0
            });
            let freed = rss();
            assert!(super::release_free_memory(), "nothing was released");
            let trimmed = rss();
            assert!(
                trimmed + (30 << 20) < freed,
                "RSS {freed} with 60 MB freed in the middle of the arena, {trimmed} after the trim"
            );
            assert_eq!(blocks.len(), 4096);
        }
    }
}
