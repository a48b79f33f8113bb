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
    stat_fields("/proc/self/stat")
        .and_then(|f| {
            // `f` starts at the state (3rd field of the line): utime is the 14th, stime the 15th.
            let ticks = |i: usize| f.get(i - 3)?.parse::<u64>().ok();
            Some((ticks(14)? + ticks(15)? + ticks(16)? + ticks(17)?) as f64 / 100.0)
        })
        .unwrap_or(0.0)
}

/// The fields of a `/proc/PID/stat` file after the command name, from the state (the line's
/// 3rd field) on: `[state, ppid, ...]`. The name can hold spaces and parentheses, so the fields
/// start after the last ')'. `None` where the file cannot be read.
pub(crate) fn stat_fields(path: impl AsRef<std::path::Path>) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(String::from).collect())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// The fields start at the state: the second is the parent pid.
    #[test]
    fn stat_fields_start_after_the_command_name() {
        let f = super::stat_fields("/proc/self/stat").expect("/proc/self/stat");
        assert!(["R", "S", "D"].contains(&f[0].as_str()), "{f:?}");
        assert_eq!(f[1], std::os::unix::process::parent_id().to_string());
        assert!(super::stat_fields("/proc/self/no-such-file").is_none());
    }

    /// Busy work shows in this process's CPU seconds (within 10 s of wall time, however
    /// loaded the machine; a parse that fails gives 0 and never grows).
    #[test]
    fn cpu_seconds_count_this_process() {
        let before = super::cpu_seconds();
        let t0 = std::time::Instant::now();
        let mut x = 1u64;
        while super::cpu_seconds() <= before && t0.elapsed() < std::time::Duration::from_secs(10) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            }
        }
        assert!(super::cpu_seconds() > before, "{x}");
    }
}

/// A program that runs this program's command lines in child processes: this program itself
/// ([`chronon::program`]: its binary, or what its host set), or another binary (`check
/// --binary`).
#[derive(Clone, Debug)]
pub(crate) struct SelfCommand {
    exe: std::path::PathBuf,
    prefix: Vec<std::ffi::OsString>,
}

impl SelfCommand {
    /// This program.
    pub(crate) fn this() -> Result<SelfCommand, crate::Failure> {
        let (exe, prefix) = chronon::program().map_err(|e| {
            crate::Failure::runtime(format!("cannot find this program's binary: {e}"))
        })?;
        Ok(SelfCommand { exe, prefix })
    }

    /// Another binary.
    pub(crate) fn binary(exe: std::path::PathBuf) -> SelfCommand {
        SelfCommand {
            exe,
            prefix: Vec::new(),
        }
    }

    /// A command that runs the program: add a command line.
    pub(crate) fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(&self.exe);
        c.args(&self.prefix);
        c
    }

    /// The program's words on `mpirun`'s command line: the executable, then its prefix.
    pub(crate) fn words(&self) -> impl Iterator<Item = &std::ffi::OsStr> {
        std::iter::once(self.exe.as_os_str()).chain(self.prefix.iter().map(|p| p.as_os_str()))
    }

    /// The executable, for messages.
    pub(crate) fn display(&self) -> std::path::Display<'_> {
        self.exe.display()
    }
}

/// The cores this process may run on (1 where the system does not say).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
