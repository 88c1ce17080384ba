//! Block device counters from /proc/diskstats.

use serde::{Deserialize, Serialize};

/// Cumulative counters of one device since boot. Sectors are 512 bytes in
/// /proc/diskstats whatever the device's sector size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskCounters {
    /// Reads completed.
    pub reads: u64,
    /// Sectors read.
    pub sectors_read: u64,
    /// Writes completed.
    pub writes: u64,
    /// Sectors written.
    pub sectors_written: u64,
}

/// Parses the line for `device` out of /proc/diskstats text.
pub fn parse(text: &str, device: &str) -> Option<DiskCounters> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 10 || f[2] != device {
            return None;
        }
        let n = |i: usize| f[i].parse::<u64>().ok();
        Some(DiskCounters {
            reads: n(3)?,
            sectors_read: n(5)?,
            writes: n(7)?,
            sectors_written: n(9)?,
        })
    })
}

/// Reads the counters of `device` now.
pub fn read(device: &str) -> Option<DiskCounters> {
    parse(&std::fs::read_to_string("/proc/diskstats").ok()?, device)
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_a_line() {
        let t = " 254       0 vda 1000 5 80000 300 2000 10 160000 900 0 100 1200 0 0 0 0\n 254       1 vda1 1 2 3 4 5 6 7 8 0 0 0\n";
        let c = super::parse(t, "vda").unwrap();
        assert_eq!(
            (c.reads, c.sectors_read, c.writes, c.sectors_written),
            (1000, 80000, 2000, 160000)
        );
        assert!(super::parse(t, "sda").is_none());
    }
}
