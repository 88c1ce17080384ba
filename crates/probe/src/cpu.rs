//! Machine-wide CPU time and context switches from /proc/stat.

use serde::{Deserialize, Serialize};

/// Cumulative machine-wide counters, CPU times in clock ticks summed over
/// all CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineCpu {
    /// user + nice ticks.
    pub user: u64,
    /// system + irq + softirq ticks.
    pub system: u64,
    /// iowait ticks.
    pub iowait: u64,
    /// idle ticks.
    pub idle: u64,
    /// steal ticks (a VM's CPU taken by the host).
    pub steal: u64,
    /// Context switches.
    pub ctxt: u64,
}

/// Parses /proc/stat text.
pub fn parse(text: &str) -> Option<MachineCpu> {
    let mut m = MachineCpu::default();
    let mut found = false;
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.first() {
            Some(&"cpu") if f.len() >= 8 => {
                let n = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
                m.user = n(1) + n(2);
                m.system = n(3) + n(6) + n(7);
                m.idle = n(4);
                m.iowait = n(5);
                m.steal = n(8);
                found = true;
            }
            Some(&"ctxt") => m.ctxt = f.get(1).and_then(|s| s.parse().ok()).unwrap_or(0),
            _ => {}
        }
    }
    found.then_some(m)
}

/// Reads the counters now.
pub fn read() -> Option<MachineCpu> {
    parse(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
pub fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_stat() {
        let t = "cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\nctxt 123456\nbtime 1\n";
        let m = super::parse(t).unwrap();
        assert_eq!(
            (m.user, m.system, m.idle, m.iowait, m.steal, m.ctxt),
            (105, 55, 1000, 20, 1, 123456)
        );
    }
}
