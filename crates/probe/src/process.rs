//! Counters of one process: IO bytes, CPU time, context switches, RSS.

use serde::{Deserialize, Serialize};

/// Cumulative counters of a process (all its threads, including exited ones
/// where the kernel keeps them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcCounters {
    /// Bytes the process caused to be read from storage (/proc/PID/io read_bytes).
    pub read_bytes: u64,
    /// Bytes the process caused to be written to storage (/proc/PID/io write_bytes).
    pub write_bytes: u64,
    /// User + system CPU time, µs.
    pub cpu_us: u64,
    /// User CPU time, µs.
    #[serde(default)]
    pub user_us: u64,
    /// System CPU time, µs.
    #[serde(default)]
    pub sys_us: u64,
    /// System calls, when counted (our own process only; see
    /// [`syscalls`](super::syscalls)).
    #[serde(default)]
    pub syscalls: Option<u64>,
    /// Voluntary + involuntary context switches.
    pub ctx_switches: u64,
    /// Resident set size now, bytes.
    pub rss: u64,
    /// Peak resident set size, bytes.
    pub rss_peak: u64,
}

impl ProcCounters {
    /// Adds another process's counters (a tree, a cluster); the system
    /// calls stay ours (counted for our own process only).
    pub fn add(&mut self, c: &ProcCounters) {
        self.read_bytes += c.read_bytes;
        self.write_bytes += c.write_bytes;
        self.cpu_us += c.cpu_us;
        self.user_us += c.user_us;
        self.sys_us += c.sys_us;
        self.ctx_switches += c.ctx_switches;
        self.rss += c.rss;
        self.rss_peak += c.rss_peak;
    }
}

fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.trim_start_matches(':').trim();
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Reads the counters of `pid`. For ourselves, CPU time and context
/// switches come from `getrusage(RUSAGE_SELF)` (µs resolution, all threads
/// including exited ones); for another process, from /proc/PID/stat and
/// the sum over /proc/PID/task/*/status.
pub fn read(pid: u32) -> Option<ProcCounters> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let mut c = ProcCounters {
        read_bytes: field(&io, "read_bytes")?,
        write_bytes: field(&io, "write_bytes")?,
        rss: field(&status, "VmRSS").unwrap_or(0) * 1024,
        rss_peak: field(&status, "VmHWM").unwrap_or(0) * 1024,
        ..Default::default()
    };
    if pid == std::process::id() {
        // SAFETY: getrusage writes into the zeroed struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0 {
            let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
            c.user_us = us(ru.ru_utime);
            c.sys_us = us(ru.ru_stime);
            c.cpu_us = c.user_us + c.sys_us;
            c.ctx_switches = (ru.ru_nvcsw + ru.ru_nivcsw) as u64;
        }
        c.syscalls = super::syscalls::read();
    } else {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the parenthesized command name; utime, stime are 14, 15.
        let after = stat.rsplit_once(')')?.1;
        let f: Vec<&str> = after.split_whitespace().collect();
        // utime + stime, plus cutime + cstime: children it has reaped
        // (a server's finished backends) stay charged to it.
        let n = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        let us = |ticks: u64| (ticks as f64 * 1e6 / super::cpu::ticks_per_sec()) as u64;
        c.user_us = us(n(11) + n(13));
        c.sys_us = us(n(12) + n(14));
        c.cpu_us = us(n(11) + n(12) + n(13) + n(14));
        let mut cs = 0;
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in tasks.flatten() {
                if let Ok(s) = std::fs::read_to_string(t.path().join("status")) {
                    cs += field(&s, "voluntary_ctxt_switches").unwrap_or(0)
                        + field(&s, "nonvoluntary_ctxt_switches").unwrap_or(0);
                }
            }
        }
        c.ctx_switches = cs;
    }
    Some(c)
}

/// The counters of `pid` and all its descendants, summed: a server that
/// works in child processes (PostgreSQL's backends) is charged in full.
/// RSS is the sum of the processes' RSS (shared pages count once per
/// process that touched them).
pub fn read_tree(pid: u32) -> Option<ProcCounters> {
    let mut parent: Vec<(u32, u32)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            let Some(after) = stat.rsplit_once(')').map(|x| x.1) else {
                continue;
            };
            if let Some(pp) = after
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<u32>().ok())
            {
                parent.push((p, pp));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let cur = tree[i];
        tree.extend(parent.iter().filter(|(_, pp)| *pp == cur).map(|(p, _)| *p));
        i += 1;
    }
    let mut total = read(pid)?;
    for p in &tree[1..] {
        if let Some(c) = read(*p) {
            total.add(&c);
        }
    }
    Some(total)
}

/// [`read_tree`] of each of `pids`, summed (a cluster's servers); None
/// when any of them is gone.
pub fn read_trees(pids: &[u32]) -> Option<ProcCounters> {
    let mut all = pids.iter().map(|p| read_tree(*p));
    let mut total = all.next()??;
    for c in all {
        let c = c?;
        total.add(&c);
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_self_and_sees_writes() {
        let a = read(std::process::id()).unwrap();
        assert!(a.rss > 0 && a.rss_peak >= a.rss);
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![1u8; 1 << 20]).unwrap();
        std::fs::File::open(&p).unwrap().sync_all().unwrap();
        let b = read(std::process::id()).unwrap();
        // write_bytes counts what this process dirtied (1 MiB), when the
        // filesystem is block-backed; tmpfs dirties nothing.
        if super::super::device::device_for(d.path()).is_ok() {
            assert!(b.write_bytes - a.write_bytes >= 1 << 20, "{a:?} {b:?}");
        }
        assert!(b.cpu_us >= a.cpu_us);
    }

    #[test]
    fn parses_fields() {
        assert_eq!(field("VmRSS:\t  1234 kB\n", "VmRSS"), Some(1234));
        assert_eq!(field("read_bytes: 77\n", "read_bytes"), Some(77));
    }
}
