//! Process figures from /proc.

/// The peak resident set size of this process, in bytes (0 where /proc is unavailable).
pub(crate) fn peak_rss_bytes() -> u64 {
    status_kib("VmHWM:") * 1024
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// User plus system CPU seconds of this process so far, every thread included (`utime` and
/// `stime` of /proc/self/stat, in the kernel's 1/100 s ticks; 0 where /proc is unavailable),
/// plus those of its children that were waited for (`cutime`, `cstime`: the worker processes
/// of a `--procs` run; nothing otherwise).
pub(crate) fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // The command name can hold spaces: the fields after it start after the last ')'.
            let rest = &s[s.rfind(')')? + 1..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            // After the name: state (3rd field of the line) ... utime is the 14th, stime the 15th.
            let ticks = |i: usize| f.get(i - 3)?.parse::<u64>().ok();
            Some((ticks(14)? + ticks(15)? + ticks(16)? + ticks(17)?) as f64 / 100.0)
        })
        .unwrap_or(0.0)
}
