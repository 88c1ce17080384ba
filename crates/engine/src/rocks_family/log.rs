//! Bytes written per column family, from the `EVENT_LOG_v1` lines RocksDB
//! (and MyRocks) write to their `LOG`: every SST file a flush or a
//! compaction creates is a `table_file_creation` event with its column
//! family, job and exact size; a job is a flush when a `flush_started`
//! event names it. The printed compaction statistics round writes to 0.1
//! GB, too coarse for a short step; these events are exact.

use std::collections::BTreeMap;
use std::path::Path;

/// The statistic's prefix for a column family's memtable bytes (what it
/// holds that no flush has written yet): `cf.memtable_bytes.CF`.
pub const MEMTABLE_STAT: &str = "cf.memtable_bytes.";

/// What one column family has written since the database was created.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CfWrites {
    /// Bytes of SST files written by flushes: the column family's ingest
    /// as it first reaches storage.
    pub flush_bytes: u64,
    /// Bytes of SST files written by compactions.
    pub compaction_bytes: u64,
    /// Logical (uncompressed key + value) bytes in the flushed files.
    pub flush_raw_bytes: u64,
    /// Data-block bytes in the flushed files (for the compression ratio).
    pub flush_data_bytes: u64,
}

impl CfWrites {
    /// Flush + compaction bytes over flush bytes; None before a flush.
    pub fn write_amp(&self) -> Option<f64> {
        (self.flush_bytes > 0)
            .then(|| (self.flush_bytes + self.compaction_bytes) as f64 / self.flush_bytes as f64)
    }
}

fn num(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

/// The JSON of an event line that matters here (a flush's start or a
/// file's creation); other lines are passed over unparsed.
fn event(line: &str) -> Option<serde_json::Value> {
    let (_, j) = line.split_once("EVENT_LOG_v1 ")?;
    if !(j.contains("\"table_file_creation\"") || j.contains("\"flush_started\"")) {
        return None;
    }
    serde_json::from_str(j).ok()
}

/// Adds one LOG's events to `out` as they come: a flush's
/// `flush_started` precedes the files it creates.
fn add(
    lines: impl Iterator<Item = String>,
    flush_jobs: &mut std::collections::HashSet<u64>,
    out: &mut BTreeMap<String, CfWrites>,
) {
    for e in lines.filter_map(|l| event(&l)) {
        if e["event"] == "flush_started" {
            flush_jobs.extend(e["job"].as_u64());
            continue;
        }
        let Some(cf) = e["cf_name"].as_str() else {
            continue;
        };
        let w = out.entry(cf.to_string()).or_default();
        let size = num(&e, "file_size");
        if e["job"].as_u64().is_some_and(|j| flush_jobs.contains(&j)) {
            let p = &e["table_properties"];
            w.flush_bytes += size;
            w.flush_raw_bytes += num(p, "raw_key_size") + num(p, "raw_value_size");
            w.flush_data_bytes += num(p, "data_size");
        } else {
            w.compaction_bytes += size;
        }
    }
}

/// Parses a LOG's text: writes per column family name.
pub fn parse(text: &str) -> BTreeMap<String, CfWrites> {
    let (mut jobs, mut out) = (Default::default(), BTreeMap::new());
    add(text.lines().map(str::to_string), &mut jobs, &mut out);
    out
}

/// Reads `dir/LOG` (and rotated `LOG.old.*`) line by line, keeping only
/// the events that matter (the process may run under a memory limit);
/// an empty map when there is none.
pub fn read(dir: &Path) -> BTreeMap<String, CfWrites> {
    use std::io::BufRead;
    let (mut jobs, mut out) = (Default::default(), BTreeMap::new());
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut names: Vec<_> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n == "LOG" || n.starts_with("LOG.old."))
            .collect();
        names.sort();
        for n in names {
            if let Ok(f) = std::fs::File::open(dir.join(n)) {
                let lines = std::io::BufReader::new(f).lines().map_while(Result::ok);
                add(lines, &mut jobs, &mut out);
            }
        }
    }
    out
}

/// The writes as engine statistics: `cf.flush_bytes.CF`,
/// `cf.compaction_bytes.CF`, `cf.flush_raw_bytes.CF`,
/// `cf.flush_data_bytes.CF`, cumulative since the database was created.
pub fn stats(w: &BTreeMap<String, CfWrites>) -> Vec<(String, f64)> {
    let mut v = Vec::new();
    for (cf, x) in w {
        for (k, n) in [
            ("flush_bytes", x.flush_bytes),
            ("compaction_bytes", x.compaction_bytes),
            ("flush_raw_bytes", x.flush_raw_bytes),
            ("flush_data_bytes", x.flush_data_bytes),
        ] {
            v.push((format!("cf.{k}.{cf}"), n as f64));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"2026/11/24-12:17:33.377398 32106 EVENT_LOG_v1 {"time_micros": 1, "job": 2, "event": "flush_started", "num_memtables": 1}
2026/11/24-12:17:33.617390 32106 EVENT_LOG_v1 {"time_micros": 2, "cf_name": "link", "job": 2, "event": "table_file_creation", "file_number": 15, "file_size": 1000, "table_properties": {"data_size": 900, "raw_key_size": 600, "raw_value_size": 1200}}
2026/11/24-12:17:34.000000 32106 [db/compaction/compaction_job.cc:1] [link] Compacting 4@0 files to L1
2026/11/24-12:17:35.000000 32106 EVENT_LOG_v1 {"time_micros": 3, "job": 3, "event": "compaction_started", "cf_name": "link"}
2026/11/24-12:17:35.100000 32106 EVENT_LOG_v1 {"time_micros": 4, "cf_name": "link", "job": 3, "event": "table_file_creation", "file_number": 16, "file_size": 1500, "table_properties": {"data_size": 1400}}
2026/11/24-12:17:35.200000 32106 EVENT_LOG_v1 {"time_micros": 5, "cf_name": "link", "job": 3, "event": "table_file_creation", "file_number": 17, "file_size": 500, "table_properties": {"data_size": 450}}
2026/11/24-12:17:36.000000 32106 EVENT_LOG_v1 {"time_micros": 6, "job": 4, "event": "flush_started"}
2026/11/24-12:17:36.100000 32106 (Original Log Time 2026/11/24-12:17:36) EVENT_LOG_v1 {"time_micros": 7, "cf_name": "count", "job": 4, "event": "table_file_creation", "file_size": 300, "table_properties": {"data_size": 290, "raw_key_size": 100, "raw_value_size": 200}}
"#;

    #[test]
    fn flush_and_compaction_bytes_per_column_family() {
        let w = parse(LOG);
        let link = &w["link"];
        assert_eq!(link.flush_bytes, 1000);
        assert_eq!(link.compaction_bytes, 2000);
        assert_eq!(link.flush_raw_bytes, 1800);
        assert_eq!(link.flush_data_bytes, 900);
        assert_eq!(link.write_amp(), Some(3.0));
        assert_eq!(w["count"].flush_bytes, 300);
        assert_eq!(w["count"].compaction_bytes, 0);
        assert_eq!(w.len(), 2);
        assert_eq!(CfWrites::default().write_amp(), None);
        let s = stats(&w);
        assert!(s.contains(&("cf.compaction_bytes.link".into(), 2000.0)));
    }
}
