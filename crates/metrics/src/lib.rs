//! Figures: what a step (or an interval) measured, each with one definition,
//! written here and nowhere else.
//!
//! A figure is a number or "not measured" with the reason (never a silent 0):
//! per-op figures need ops > 0; device figures need a block device; process
//! figures need /proc; ratios need a non-zero denominator.

#![warn(missing_docs)]

// The crates below, under the module names the code has always used:
// `crate::probe` is the ampbench-probe crate (Cargo.toml lists them).
use ampbench_core::named;
use ampbench_probe as probe;

pub mod latency;
pub mod stats;
pub mod usl;

use serde::{Deserialize, Serialize};

use crate::probe::Sample;

pub use latency::{Latency, LatencySummary, Recorder};

/// A measured value, or why it was not measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Figure {
    /// The value.
    Value(f64),
    /// Not measured, and why.
    NotMeasured(String),
}

impl Figure {
    /// The value, if measured.
    pub fn value(&self) -> Option<f64> {
        match self {
            Figure::Value(v) => Some(*v),
            Figure::NotMeasured(_) => None,
        }
    }
    /// Why it was not measured, if it was not.
    pub fn why(&self) -> Option<&str> {
        match self {
            Figure::Value(_) => None,
            Figure::NotMeasured(why) => Some(why),
        }
    }
    fn ratio(num: Option<f64>, den: f64, why_num: &str, why_den: &str) -> Figure {
        match num {
            None => Figure::NotMeasured(why_num.to_string()),
            Some(_) if den <= 0.0 => Figure::NotMeasured(why_den.to_string()),
            Some(n) => Figure::Value(n / den),
        }
    }
}

/// What the workload tells about a step, beside the samples.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct WorkDone {
    /// Foreground operations measured (as the workload counts them: e.g.
    /// documents for a load in batches, documents returned for range reads).
    pub ops: u64,
    /// Seconds of the measured phase.
    pub secs: f64,
    /// Live user key+value bytes at the end (for space-amp).
    pub logical_bytes: u64,
    /// User key+value bytes written by the workload during the phase,
    /// foreground and background (for write-amp).
    pub logical_written: u64,
}

crate::named! {
    /// Every figure, in report order: its doc comment is its definition
    /// (Δ = end − start of the phase), its name the JSON key and the results
    /// file's.
    pub enum Metric: "figure" {
        /// Foreground operations in the phase (as the workload counts them).
        Ops = "ops",
        /// `ops / secs`.
        OpsPerSec = "ops_per_sec",
        /// Δ device reads completed / ops.
        RPerOp = "r_per_op",
        /// Δ device sectors read × 512 / 1024 / ops.
        RkbPerOp = "rkb_per_op",
        /// Δ device sectors written × 512 / 1024 / ops.
        WkbPerOp = "wkb_per_op",
        /// Δ `/proc/PID/io` read_bytes / 1024 / ops, for the engine's process.
        ProcRkbPerOp = "proc_rkb_per_op",
        /// Δ `/proc/PID/io` write_bytes / 1024 / ops, for the engine's process.
        ProcWkbPerOp = "proc_wkb_per_op",
        /// Δ engine process user+system CPU µs / ops (for a server: the server
        /// and its child processes).
        CpuUsPerOp = "cpu_us_per_op",
        /// Δ ampbench's own CPU µs / ops, when the engine is a server (for an
        /// embedded engine it is in `cpu_us_per_op`).
        ClientCpuUsPerOp = "client_cpu_us_per_op",
        /// The user part of `client_cpu_us_per_op`.
        ClientUserUsPerOp = "client_user_us_per_op",
        /// The system part of `client_cpu_us_per_op`.
        ClientSysUsPerOp = "client_sys_us_per_op",
        /// Δ ampbench's own context switches / ops, when the engine is a server.
        ClientCsPerOp = "client_cs_per_op",
        /// Δ ampbench's own system calls / ops, when the engine is a server
        /// (a perf counter on raw_syscalls:sys_enter).
        ClientSyscallsPerOp = "client_syscalls_per_op",
        /// Δ machine-wide user+nice+system+irq+softirq ticks, in µs, / ops
        /// (vmstat's us+sy as the seeds use it).
        SysCpuUsPerOp = "sys_cpu_us_per_op",
        /// Δ engine process context switches / ops.
        CsPerOp = "cs_per_op",
        /// Δ machine-wide context switches / ops (vmstat cs).
        SysCsPerOp = "sys_cs_per_op",
        /// The engine process's RSS at the end.
        RssBytes = "rss_bytes",
        /// The engine process's peak RSS at the end.
        RssPeakBytes = "rss_peak_bytes",
        /// The data paths' allocated size at the end (like `du`).
        DbBytes = "db_bytes",
        /// The data paths' apparent size at the end (like `du --apparent-size`).
        DbApparentBytes = "db_apparent_bytes",
        /// Live user key+value bytes at the end.
        LogicalBytes = "logical_bytes",
        /// `db_bytes / logical_bytes`.
        SpaceAmp = "space_amp",
        /// Δ device bytes written / logical bytes written in the phase.
        WriteAmp = "write_amp",
        /// Δ flushes (fsync) the device model served / ops.
        DevFlushPerOp = "dev_flush_per_op",
        /// The device model's mean latency per IO, µs: Δ summed latency /
        /// Δ IOs.
        DevLatencyUs = "dev_latency_us",
        /// The device's mean queue depth (Little's law): Δ summed latency /
        /// the phase's length.
        DevQueueDepth = "dev_qd",
        /// Δ IOs that waited for the device's budget or for room in its
        /// write cache / Δ IOs.
        DevWaitedShare = "dev_waited_share",
        /// Δ writes that reached the medium (a write cache's destages
        /// included) / ops.
        DevMediumWPerOp = "dev_medium_w_per_op",
        /// Δ IOs the device model's server answered more than 20 µs
        /// after their time (its own delay: a wake-up, the host file) /
        /// Δ IOs.
        DevLateShare = "dev_late_share",
        /// How late those IOs were, mean, µs.
        DevLateUs = "dev_late_us",
        /// Δ writes the device's cache absorbed (every block already
        /// dirty: nothing more to destage) / ops.
        DevAbsorbedPerOp = "dev_absorbed_per_op",
        /// Δ reads the device's cache served / ops.
        DevCacheRPerOp = "dev_cache_r_per_op",
        /// Mean dirty bytes in the device's write cache over the phase,
        /// MB (2^20 bytes).
        DevDirtyMb = "dev_dirty_mb",
        /// Δ data reads the server counted itself / ops (InnoDB
        /// `Innodb_data_reads`; PostgreSQL `blks_read`, which the OS page
        /// cache may have served): see `probe::server`.
        SrvRPerOp = "srv_r_per_op",
        /// Δ bytes of those reads / 1024 / ops.
        SrvRkbPerOp = "srv_rkb_per_op",
        /// Δ (data pages + redo log or WAL) bytes the server counted as
        /// written / 1024 / ops.
        SrvWkbPerOp = "srv_wkb_per_op",
        /// The redo log or WAL part of `srv_wkb_per_op`.
        SrvLogKbPerOp = "srv_log_kb_per_op",
        /// The benchmark database's size as the server reports it, at the
        /// end.
        SrvDbBytes = "srv_db_bytes",
        /// Δ reads of the server host's devices / ops, by its node
        /// exporter (`--host-metrics`): see `probe::host`.
        HostRPerOp = "host_r_per_op",
        /// Δ bytes those reads moved / 1024 / ops.
        HostRkbPerOp = "host_rkb_per_op",
        /// Δ bytes written to the host's devices / 1024 / ops.
        HostWkbPerOp = "host_wkb_per_op",
        /// Δ CPU time the host's CPUs were busy / ops, µs (every process
        /// of that host).
        HostCpuUsPerOp = "host_cpu_us_per_op",
    }
}

/// Computes every [`Metric`], in order, from the samples at the start and
/// end of a phase and the work done in it. `no_device` is the reason device
/// figures are missing, when they are.
pub fn compute(
    a: &Sample,
    b: &Sample,
    w: &WorkDone,
    no_device: Option<&str>,
    ticks_per_sec: f64,
) -> Vec<(Metric, Figure)> {
    let ops = w.ops as f64;
    let dev_why = no_device.unwrap_or("device counters could not be read");
    let disk = match (a.disk, b.disk) {
        (Some(x), Some(y)) => Some((
            y.reads.saturating_sub(x.reads) as f64,
            y.sectors_read.saturating_sub(x.sectors_read) as f64 * 512.0,
            y.sectors_written.saturating_sub(x.sectors_written) as f64 * 512.0,
        )),
        _ => None,
    };
    let remote = b.remote;
    let proc_why = if remote {
        "external target: its processes are on another host"
    } else {
        "process counters could not be read from /proc"
    };
    let proc = match (a.process, b.process) {
        (Some(x), Some(y)) => Some((x, y)),
        _ => None,
    };
    let pd = |f: fn(&crate::probe::ProcCounters) -> u64| {
        proc.map(|(x, y)| f(&y).saturating_sub(f(&x)) as f64)
    };
    let cpu_why = "/proc/stat could not be read";
    let sys = match (a.cpu, b.cpu) {
        (Some(x), Some(y)) => Some((
            (y.user + y.system).saturating_sub(x.user + x.system) as f64 * 1e6 / ticks_per_sec,
            y.ctxt.saturating_sub(x.ctxt) as f64,
        )),
        _ => None,
    };
    let per_op = |v: Option<f64>, why: &str| per_op(v, ops, why);
    let mut out = vec![
        (Metric::Ops, Figure::Value(ops)),
        (
            Metric::OpsPerSec,
            Figure::ratio(Some(ops), w.secs, "", "phase lasted no time"),
        ),
        (Metric::RPerOp, per_op(disk.map(|d| d.0), dev_why)),
        (
            Metric::RkbPerOp,
            per_op(disk.map(|d| d.1 / 1024.0), dev_why),
        ),
        (
            Metric::WkbPerOp,
            per_op(disk.map(|d| d.2 / 1024.0), dev_why),
        ),
        (
            Metric::ProcRkbPerOp,
            per_op(pd(|p| p.read_bytes).map(|v| v / 1024.0), proc_why),
        ),
        (
            Metric::ProcWkbPerOp,
            per_op(pd(|p| p.write_bytes).map(|v| v / 1024.0), proc_why),
        ),
        (Metric::CpuUsPerOp, per_op(pd(|p| p.cpu_us), proc_why)),
    ];
    out.extend(client(a, b, ops));
    out.extend([
        (Metric::SysCpuUsPerOp, per_op(sys.map(|s| s.0), cpu_why)),
        (Metric::CsPerOp, per_op(pd(|p| p.ctx_switches), proc_why)),
        (Metric::SysCsPerOp, per_op(sys.map(|s| s.1), cpu_why)),
    ]);
    out.extend(sizes(b, w, disk.map(|d| d.2), dev_why, proc_why));
    out.extend(device_model(a, b, ops));
    out.extend(server(a, b, ops));
    out.extend(host(a, b, ops));
    out
}

/// What the harness's own process (a server engine's client) cost, per
/// operation (`client_*`).
fn client(a: &Sample, b: &Sample, ops: f64) -> Vec<(Metric, Figure)> {
    let per_op = |v: Option<f64>, why: &str| per_op(v, ops, why);
    let client = |f: fn(&crate::probe::ProcCounters) -> Option<u64>| match (a.client, b.client) {
        (Some(x), Some(y)) => match (f(&x), f(&y)) {
            (Some(x), Some(y)) => per_op(Some(y.saturating_sub(x) as f64), ""),
            _ => Figure::NotMeasured(
                crate::probe::syscalls::not_counted().unwrap_or_else(|| "not counted".into()),
            ),
        },
        _ => Figure::NotMeasured(
            "embedded engine: the client's cost is in the engine's figures".into(),
        ),
    };
    vec![
        (Metric::ClientCpuUsPerOp, client(|c| Some(c.cpu_us))),
        (Metric::ClientUserUsPerOp, client(|c| Some(c.user_us))),
        (Metric::ClientSysUsPerOp, client(|c| Some(c.sys_us))),
        (Metric::ClientCsPerOp, client(|c| Some(c.ctx_switches))),
        (Metric::ClientSyscallsPerOp, client(|c| c.syscalls)),
    ]
}

/// Memory and sizes at the phase's end, and the amplification they give
/// (`written`: the device bytes written in the phase).
fn sizes(
    b: &Sample,
    w: &WorkDone,
    written: Option<f64>,
    dev_why: &str,
    proc_why: &str,
) -> Vec<(Metric, Figure)> {
    let remote = b.remote;
    let logical = w.logical_bytes as f64;
    let local_size = |v: u64| {
        if remote {
            Figure::NotMeasured(
                "external target: its files are on another host (srv_db_bytes is the server's figure)"
                    .into(),
            )
        } else {
            Figure::Value(v as f64)
        }
    };
    vec![
        (
            Metric::RssBytes,
            b.process.map_or(Figure::NotMeasured(proc_why.into()), |p| {
                Figure::Value(p.rss as f64)
            }),
        ),
        (
            Metric::RssPeakBytes,
            b.process.map_or(Figure::NotMeasured(proc_why.into()), |p| {
                Figure::Value(p.rss_peak as f64)
            }),
        ),
        (Metric::DbBytes, local_size(b.dir.allocated)),
        (Metric::DbApparentBytes, local_size(b.dir.apparent)),
        (Metric::LogicalBytes, Figure::Value(logical)),
        (
            Metric::SpaceAmp,
            Figure::ratio(
                match (remote, b.server.and_then(|s| s.db_bytes)) {
                    (false, _) => Some(b.dir.allocated as f64),
                    (true, v) => v.map(|v| v as f64),
                },
                logical,
                "external target: the server did not report the database's size",
                "no live logical bytes",
            ),
        ),
        (
            Metric::WriteAmp,
            Figure::ratio(
                written,
                w.logical_written as f64,
                dev_why,
                "the workload wrote nothing in this phase",
            ),
        ),
    ]
}

/// `v / ops`, or why it is not measured.
fn per_op(v: Option<f64>, ops: f64, why: &str) -> Figure {
    Figure::ratio(v, ops, why, "no operations in this phase")
}

/// The modelled device's figures (`dev_*`), over `ops` operations.
fn device_model(a: &Sample, b: &Sample, ops: f64) -> Vec<(Metric, Figure)> {
    let per_op = |v: Option<f64>, why: &str| per_op(v, ops, why);
    let not_modelled = "the device is not modelled (disk-array and slow-ssd are)";
    let model = match (a.model, b.model) {
        (Some(x), Some(y)) => Some((x, y)),
        _ => None,
    };
    let md = |f: fn(&crate::probe::modelstats::ModelCounters) -> u64| {
        model.map(|(x, y)| f(&y).saturating_sub(f(&x)) as f64)
    };
    let dev_ios = md(|m| m.ios).unwrap_or(0.0);
    let of_ios = |v: Option<f64>, scale: f64| match v {
        None => Figure::NotMeasured(not_modelled.into()),
        Some(_) if dev_ios <= 0.0 => Figure::NotMeasured("the device served no IO".into()),
        Some(v) => Figure::Value(v / dev_ios / scale),
    };
    vec![
        (
            Metric::DevFlushPerOp,
            per_op(md(|m| m.flushes), not_modelled),
        ),
        (Metric::DevLatencyUs, of_ios(md(|m| m.latency_ns), 1000.0)),
        (
            Metric::DevQueueDepth,
            match md(|m| m.latency_ns) {
                None => Figure::NotMeasured(not_modelled.into()),
                Some(_) if b.t <= a.t => Figure::NotMeasured("phase lasted no time".into()),
                Some(ns) => Figure::Value(ns / 1e9 / (b.t - a.t)),
            },
        ),
        (Metric::DevWaitedShare, of_ios(md(|m| m.waited), 1.0)),
        (
            Metric::DevMediumWPerOp,
            per_op(md(|m| m.medium_writes), not_modelled),
        ),
        (Metric::DevLateShare, of_ios(md(|m| m.late), 1.0)),
        (
            Metric::DevLateUs,
            match (md(|m| m.late), md(|m| m.late_ns)) {
                (Some(n), Some(ns)) if n > 0.0 => Figure::Value(ns / n / 1000.0),
                (Some(_), _) => Figure::Value(0.0),
                _ => Figure::NotMeasured(not_modelled.into()),
            },
        ),
        (
            Metric::DevAbsorbedPerOp,
            per_op(md(|m| m.absorbed), not_modelled),
        ),
        (
            Metric::DevCacheRPerOp,
            per_op(md(|m| m.cache_reads), not_modelled),
        ),
        (
            Metric::DevDirtyMb,
            match md(|m| m.dirty_byte_ms) {
                None => Figure::NotMeasured(not_modelled.into()),
                Some(_) if b.t <= a.t => Figure::NotMeasured("phase lasted no time".into()),
                Some(v) => Figure::Value(v / 1e3 / (b.t - a.t) / (1u64 << 20) as f64),
            },
        ),
    ]
}

/// The figures the server counted itself (`srv_*`), over `ops`
/// operations.
fn server(a: &Sample, b: &Sample, ops: f64) -> Vec<(Metric, Figure)> {
    let per_op = |v: Option<f64>, why: &str| per_op(v, ops, why);
    let no_server = if a.server.is_none() || b.server.is_none() {
        "no server counters: not a server engine, or the server could not be asked"
    } else {
        "the server keeps no such counter"
    };
    let sd = |f: fn(&crate::probe::ServerCounters) -> Option<u64>| match (a.server, b.server) {
        (Some(x), Some(y)) => match (f(&x), f(&y)) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x) as f64),
            _ => None,
        },
        _ => None,
    };
    let srv_written = match (sd(|s| s.data_written), sd(|s| s.log_written)) {
        (Some(d), Some(l)) => Some(d + l),
        _ => None,
    };
    vec![
        (Metric::SrvRPerOp, per_op(sd(|s| s.reads), no_server)),
        (
            Metric::SrvRkbPerOp,
            per_op(sd(|s| s.read_bytes).map(|v| v / 1024.0), no_server),
        ),
        (
            Metric::SrvWkbPerOp,
            per_op(srv_written.map(|v| v / 1024.0), no_server),
        ),
        (
            Metric::SrvLogKbPerOp,
            per_op(sd(|s| s.log_written).map(|v| v / 1024.0), no_server),
        ),
        (
            Metric::SrvDbBytes,
            match b.server.and_then(|s| s.db_bytes) {
                Some(v) => Figure::Value(v as f64),
                None => Figure::NotMeasured(no_server.into()),
            },
        ),
    ]
}

/// The server host's figures by its node exporter (`host_*`), over `ops`
/// operations.
fn host(a: &Sample, b: &Sample, ops: f64) -> Vec<(Metric, Figure)> {
    let per_op = |v: Option<f64>, why: &str| per_op(v, ops, why);
    let no_host = if a.host.is_none() || b.host.is_none() {
        "no node exporter: give --host-metrics http://HOST:9100/metrics, or it did not answer"
    } else {
        ""
    };
    let hd = |f: fn(&crate::probe::HostCounters) -> u64| match (a.host, b.host) {
        (Some(x), Some(y)) => Some(f(&y).saturating_sub(f(&x)) as f64),
        _ => None,
    };
    vec![
        (Metric::HostRPerOp, per_op(hd(|h| h.reads), no_host)),
        (
            Metric::HostRkbPerOp,
            per_op(hd(|h| h.read_bytes).map(|v| v / 1024.0), no_host),
        ),
        (
            Metric::HostWkbPerOp,
            per_op(hd(|h| h.written_bytes).map(|v| v / 1024.0), no_host),
        ),
        (
            Metric::HostCpuUsPerOp,
            per_op(hd(|h| h.cpu_busy_us), no_host),
        ),
    ]
}

#[cfg(test)]
mod tests;
