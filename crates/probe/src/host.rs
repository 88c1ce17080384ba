//! A host's own counters from Prometheus' node exporter (`--host-metrics
//! http://host:9100/metrics`, Debian's `prometheus-node-exporter`): the
//! device reads, bytes and CPU of the host a server runs on when that
//! host is not this one. Read over plain HTTP each interval, parsed from
//! the exporter's text format: `node_disk_*_total{device=…}` summed over
//! the chosen devices, `node_cpu_seconds_total{mode=…}` summed over the
//! CPUs and the busy modes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

/// One reading of a host's counters (each since the host booted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCounters {
    /// Reads completed by the chosen devices.
    pub reads: u64,
    /// Bytes those reads moved.
    pub read_bytes: u64,
    /// Writes completed by the chosen devices.
    pub writes: u64,
    /// Bytes those writes moved.
    pub written_bytes: u64,
    /// CPU time of every CPU in a busy mode (all but idle, iowait and
    /// steal), µs.
    pub cpu_busy_us: u64,
}

/// How long the exporter may take to answer, all of it (a reading holds
/// up the interval it belongs to).
const TIMEOUT: Duration = Duration::from_secs(5);

/// The most of an answer read (a host with many devices and CPUs sends
/// a few hundred KB).
const MAX_BODY: u64 = 16 << 20;

/// Devices left out by default: device-mapper, software RAID and virtual
/// devices, whose IO is their underlying disks' again (node exporter
/// leaves partitions out itself).
const VIRTUAL: &[&str] = &["dm-", "md", "loop", "ram", "zram", "sr", "nbd", "fd"];

/// A node exporter to read.
#[derive(Clone, Debug)]
pub struct NodeExporter {
    url: String,
    host: String,
    at: SocketAddr,
    path: String,
    /// The devices to sum (`?device=sda,nvme0n1`); empty: every device
    /// but the virtual ones.
    devices: Vec<String>,
}

impl NodeExporter {
    /// Parses `http://HOST[:PORT][/PATH][?device=NAME[,NAME…]]` (port
    /// 9100 and `/metrics` by default) and resolves the host. Errors are
    /// one line naming the part.
    pub fn parse(url: &str) -> Result<NodeExporter> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            anyhow!("--host-metrics {url}: give an http:// URL (the node exporter's, e.g. http://db1:9100/metrics)")
        })?;
        let (hostport, tail) = match rest.find(['/', '?']) {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
        let path = if path.is_empty() { "/metrics" } else { path };
        // `[v6]:port`, `[v6]`, `host:port`, `host`.
        let (host, port) = match hostport.strip_prefix('[') {
            Some(v6) => {
                let (h, after) = v6
                    .split_once(']')
                    .ok_or_else(|| anyhow!("--host-metrics {url}: unclosed '['"))?;
                match after.strip_prefix(':') {
                    Some(p) => (h, p),
                    None if after.is_empty() => (h, ""),
                    None => bail!("--host-metrics {url}: '{after}' after the address"),
                }
            }
            None => hostport.split_once(':').unwrap_or((hostport, "")),
        };
        let port = match port {
            "" => 9100,
            p => p
                .parse::<u16>()
                .map_err(|_| anyhow!("--host-metrics {url}: port '{p}' is not a number"))?,
        };
        if host.is_empty() {
            bail!("--host-metrics {url}: no host");
        }
        let mut devices = Vec::new();
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            match kv.split_once('=') {
                Some(("device", v)) => {
                    devices.extend(v.split(',').filter(|d| !d.is_empty()).map(String::from))
                }
                _ => bail!("--host-metrics {url}: unknown parameter '{kv}' (known: device)"),
            }
        }
        let at = (host, port)
            .to_socket_addrs()
            .with_context(|| format!("--host-metrics: cannot resolve host '{host}'"))?
            .next()
            .ok_or_else(|| anyhow!("--host-metrics: host '{host}' has no address"))?;
        Ok(NodeExporter {
            url: url.to_string(),
            host: host.to_string(),
            at,
            path: path.to_string(),
            devices,
        })
    }

    /// The URL as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Reads the counters now; the error is one line naming the URL.
    pub fn read(&self) -> Result<HostCounters> {
        let body = self
            .fetch()
            .with_context(|| format!("--host-metrics {}", self.url))?;
        parse(&body, &self.devices).with_context(|| format!("--host-metrics {}", self.url))
    }

    /// The devices whose counters are summed, as the exporter names them.
    pub fn devices(&self) -> Result<Vec<String>> {
        let body = self.fetch()?;
        Ok(chosen(&body, &self.devices))
    }

    /// GETs the metrics page over HTTP/1.0 (the answer ends when the
    /// connection does), all within [`TIMEOUT`].
    fn fetch(&self) -> Result<String> {
        let deadline = std::time::Instant::now() + TIMEOUT;
        let mut s = TcpStream::connect_timeout(&self.at, TIMEOUT)
            .with_context(|| format!("cannot connect to {}", self.at))?;
        s.set_write_timeout(Some(TIMEOUT))?;
        let host = match self.at {
            SocketAddr::V6(_) if self.host.contains(':') => format!("[{}]", self.host),
            _ => self.host.clone(),
        };
        write!(
            s,
            "GET {} HTTP/1.0\r\nHost: {host}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n",
            self.path
        )?;
        let mut raw = Vec::new();
        let mut chunk = [0u8; 64 << 10];
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                bail!("no whole answer within {} s", TIMEOUT.as_secs());
            }
            s.set_read_timeout(Some(left))?;
            match s.read(&mut chunk)? {
                0 => break,
                n => raw.extend_from_slice(&chunk[..n]),
            }
            if raw.len() as u64 > MAX_BODY {
                bail!("an answer of more than {} MB", MAX_BODY >> 20);
            }
        }
        let text = String::from_utf8_lossy(&raw);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .ok_or_else(|| anyhow!("not an HTTP answer"))?;
        let status = head.lines().next().unwrap_or_default();
        if status.split_whitespace().nth(1) != Some("200") {
            bail!("the exporter answered '{status}'");
        }
        Ok(body.to_string())
    }
}

/// One sample line: its name, its labels, its value.
fn lines(body: &str) -> impl Iterator<Item = (&str, &str, f64)> {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            // Counters only: a value that is not a finite count is dropped.
            let value: f64 = value
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)?;
            let (name, labels) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            Some((name, labels, value))
        })
}

/// The value of label `key` in `labels` (`a="x",b="y"`).
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    let at = labels.find(&format!("{key}=\""))? + key.len() + 2;
    let end = labels[at..].find('"')?;
    Some(&labels[at..at + end])
}

/// True when `device` is summed: named, or (none named) not virtual.
fn counted(device: &str, named: &[String]) -> bool {
    if named.is_empty() {
        !VIRTUAL.iter().any(|p| device.starts_with(p))
    } else {
        named.iter().any(|n| n == device)
    }
}

/// The devices of `body` that are summed.
fn chosen(body: &str, named: &[String]) -> Vec<String> {
    let mut v: Vec<String> = lines(body)
        .filter(|(n, _, _)| *n == "node_disk_reads_completed_total")
        .filter_map(|(_, l, _)| label(l, "device"))
        .filter(|d| counted(d, named))
        .map(String::from)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The counters in a metrics page.
fn parse(body: &str, named: &[String]) -> Result<HostCounters> {
    let mut c = HostCounters::default();
    let (mut disks, mut cpus) = (0, 0);
    for (name, labels, v) in lines(body) {
        let field = match name {
            "node_disk_reads_completed_total" => &mut c.reads,
            "node_disk_read_bytes_total" => &mut c.read_bytes,
            "node_disk_writes_completed_total" => &mut c.writes,
            "node_disk_written_bytes_total" => &mut c.written_bytes,
            "node_cpu_seconds_total" => {
                if !matches!(label(labels, "mode"), Some("idle" | "iowait" | "steal")) {
                    c.cpu_busy_us = c.cpu_busy_us.saturating_add((v * 1e6) as u64);
                }
                cpus += 1;
                continue;
            }
            _ => continue,
        };
        if label(labels, "device").is_some_and(|d| counted(d, named)) {
            *field = field.saturating_add(v as u64);
            disks += 1;
        }
    }
    if cpus == 0 {
        bail!("no node_cpu_seconds_total in the answer: is this a node exporter?");
    }
    if disks == 0 {
        match named {
            [] => bail!("no disk counters (node_disk_*) in the answer"),
            _ => bail!("no disk counters for device {}", named.join(",")),
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "\
# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 1000.5
node_cpu_seconds_total{cpu=\"0\",mode=\"iowait\"} 7
node_cpu_seconds_total{cpu=\"0\",mode=\"system\"} 20.25
node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 30.5
node_cpu_seconds_total{cpu=\"1\",mode=\"user\"} 1.25e+01
node_cpu_seconds_total{cpu=\"1\",mode=\"steal\"} 3
node_disk_reads_completed_total{device=\"sda\"} 100
node_disk_reads_completed_total{device=\"dm-0\"} 90
node_disk_reads_completed_total{device=\"nvme0n1\"} 5
node_disk_read_bytes_total{device=\"sda\"} 409600
node_disk_read_bytes_total{device=\"dm-0\"} 368640
node_disk_read_bytes_total{device=\"nvme0n1\"} 20480
node_disk_writes_completed_total{device=\"sda\"} 40
node_disk_written_bytes_total{device=\"sda\"} 1.6384e+05
node_disk_written_bytes_total{device=\"nvme0n1\"} 4096
node_disk_io_now{device=\"sda\"} 0
node_disk_reads_completed_total{device=\"sdb\"} NaN
node_disk_reads_completed_total{device=\"sdc\"} +Inf
";

    #[test]
    fn disks_and_busy_cpu_are_summed_without_virtual_devices() {
        let c = parse(PAGE, &[]).unwrap();
        assert_eq!(c.reads, 105, "sda + nvme0n1, not dm-0");
        assert_eq!(c.read_bytes, 409_600 + 20_480);
        assert_eq!(c.writes, 40);
        assert_eq!(c.written_bytes, 163_840 + 4096);
        // system 20.25 + user 30.5 + user 12.5; idle, iowait, steal out.
        assert_eq!(c.cpu_busy_us, 63_250_000);
        assert_eq!(chosen(PAGE, &[]), vec!["nvme0n1", "sda"]);
        let only = parse(PAGE, &["dm-0".into()]).unwrap();
        assert_eq!((only.reads, only.read_bytes), (90, 368_640));
        let e = parse(PAGE, &["sdz".into()]).unwrap_err();
        assert!(e.to_string().contains("device sdz"), "{e}");
        let e = parse("up 1\n", &[]).unwrap_err();
        assert!(e.to_string().contains("node exporter"), "{e}");
    }

    #[test]
    fn urls() {
        let n = NodeExporter::parse("http://127.0.0.1").unwrap();
        assert_eq!((n.at.port(), n.path.as_str()), (9100, "/metrics"));
        let n = NodeExporter::parse("http://127.0.0.1:9200/m?device=sda,sdb").unwrap();
        assert_eq!((n.at.port(), n.path.as_str()), (9200, "/m"));
        assert_eq!(n.devices, vec!["sda", "sdb"]);
        let n = NodeExporter::parse("http://[::1]/metrics").unwrap();
        assert_eq!((n.host.as_str(), n.at.port()), ("::1", 9100));
        let n = NodeExporter::parse("http://[::1]:9300").unwrap();
        assert_eq!(n.at.port(), 9300);
        for (bad, says) in [
            ("https://h:9100", "http://"),
            ("http://127.0.0.1:x/", "port 'x'"),
            ("http://127.0.0.1/?dev=sda", "unknown parameter 'dev=sda'"),
            ("http://:9100/", "no host"),
            ("http://[::1/", "unclosed"),
        ] {
            let e = NodeExporter::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
