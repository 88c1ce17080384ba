//! Figures: what a step (or an interval) measured, each with one definition,
//! written here and nowhere else.
//!
//! A figure is a number or "not measured" with the reason (never a silent 0):
//! per-op figures need ops > 0; device figures need a block device; process
//! figures need /proc; ratios need a non-zero denominator.

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
    let no_ops = "no operations in this phase";
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
    let per_op = |v: Option<f64>, why: &str| Figure::ratio(v, ops, why, no_ops);
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
        (Metric::ClientCpuUsPerOp, client(|c| Some(c.cpu_us))),
        (Metric::ClientUserUsPerOp, client(|c| Some(c.user_us))),
        (Metric::ClientSysUsPerOp, client(|c| Some(c.sys_us))),
        (Metric::ClientCsPerOp, client(|c| Some(c.ctx_switches))),
        (Metric::ClientSyscallsPerOp, client(|c| c.syscalls)),
        (Metric::SysCpuUsPerOp, per_op(sys.map(|s| s.0), cpu_why)),
        (Metric::CsPerOp, per_op(pd(|p| p.ctx_switches), proc_why)),
        (Metric::SysCsPerOp, per_op(sys.map(|s| s.1), cpu_why)),
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
                disk.map(|d| d.2),
                w.logical_written as f64,
                dev_why,
                "the workload wrote nothing in this phase",
            ),
        ),
    ];
    out.extend([
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
    ]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{DirSize, DiskCounters, MachineCpu, ProcCounters};

    fn samples() -> (Sample, Sample) {
        let a = Sample {
            t: 0.0,
            disk: Some(DiskCounters {
                reads: 100,
                sectors_read: 1000,
                writes: 5,
                sectors_written: 2000,
            }),
            cpu: Some(MachineCpu {
                user: 1000,
                system: 500,
                iowait: 0,
                idle: 0,
                steal: 0,
                ctxt: 10_000,
            }),
            process: Some(ProcCounters {
                read_bytes: 0,
                write_bytes: 1 << 20,
                cpu_us: 1_000_000,
                ctx_switches: 50,
                rss: 1,
                rss_peak: 1,
                ..Default::default()
            }),
            client: None,
            backing: None,
            model: None,
            server: None,
            remote: false,
            dir: DirSize {
                allocated: 0,
                apparent: 0,
                files: 0,
            },
        };
        let b = Sample {
            t: 10.0,
            // +300 reads, +2048 sectors read (1 MiB), +20480 sectors written (10 MiB)
            disk: Some(DiskCounters {
                reads: 400,
                sectors_read: 3048,
                writes: 105,
                sectors_written: 22480,
            }),
            // +200 ticks of user+system at 100 Hz = 2 s; +4000 context switches
            cpu: Some(MachineCpu {
                user: 1150,
                system: 550,
                iowait: 7,
                idle: 9,
                steal: 0,
                ctxt: 14_000,
            }),
            process: Some(ProcCounters {
                read_bytes: 512 << 10,
                write_bytes: 5 << 20,
                cpu_us: 1_500_000,
                ctx_switches: 1050,
                rss: 300 << 20,
                rss_peak: 400 << 20,
                ..Default::default()
            }),
            client: None,
            backing: None,
            model: None,
            server: None,
            remote: false,
            dir: DirSize {
                allocated: 30 << 20,
                apparent: 25 << 20,
                files: 4,
            },
        };
        (a, b)
    }

    fn get(f: &[(Metric, Figure)], n: &str) -> Option<f64> {
        let m = Metric::parse(n).unwrap();
        f.iter().find(|(k, _)| *k == m).and_then(|(_, v)| v.value())
    }

    #[test]
    fn client_cost_split_by_hand() {
        let (mut a, mut b) = samples();
        let c = |user_us, sys_us, cs, sc| ProcCounters {
            user_us,
            sys_us,
            cpu_us: user_us + sys_us,
            ctx_switches: cs,
            syscalls: sc,
            ..Default::default()
        };
        a.client = Some(c(1000, 500, 10, Some(100)));
        b.client = Some(c(41_000, 20_500, 1010, Some(3100)));
        let w = WorkDone {
            ops: 1000,
            secs: 10.0,
            ..Default::default()
        };
        let f = compute(&a, &b, &w, None, 100.0);
        assert_eq!(get(&f, "client_cpu_us_per_op"), Some(60.0));
        assert_eq!(get(&f, "client_user_us_per_op"), Some(40.0));
        assert_eq!(get(&f, "client_sys_us_per_op"), Some(20.0));
        assert_eq!(get(&f, "client_cs_per_op"), Some(1.0));
        assert_eq!(get(&f, "client_syscalls_per_op"), Some(3.0));
        // Not counted: said, not 0.
        b.client = Some(c(41_000, 20_500, 1010, None));
        let f = compute(&a, &b, &w, None, 100.0);
        assert_eq!(get(&f, "client_syscalls_per_op"), None);
        // An embedded engine has no client figures.
        let (a, b) = samples();
        let f = compute(&a, &b, &w, None, 100.0);
        assert_eq!(get(&f, "client_cpu_us_per_op"), None);
    }

    #[test]
    fn hand_computed_figures() {
        let (a, b) = samples();
        let w = WorkDone {
            ops: 1000,
            secs: 10.0,
            logical_bytes: 10 << 20,
            logical_written: 5 << 20,
        };
        let f = compute(&a, &b, &w, None, 100.0);
        assert_eq!(f.len(), Metric::ALL.len());
        for ((n, _), want) in f.iter().zip(Metric::ALL) {
            assert_eq!(n, want);
        }
        assert_eq!(get(&f, "ops"), Some(1000.0));
        assert_eq!(get(&f, "ops_per_sec"), Some(100.0));
        assert_eq!(get(&f, "r_per_op"), Some(0.3)); // 300 reads / 1000 ops
        assert_eq!(get(&f, "rkb_per_op"), Some(1.024)); // 1024 KiB / 1000
        assert_eq!(get(&f, "wkb_per_op"), Some(10.24)); // 10240 KiB / 1000
        assert_eq!(get(&f, "proc_rkb_per_op"), Some(0.512)); // 512 KiB / 1000
        assert_eq!(get(&f, "proc_wkb_per_op"), Some(4.096)); // 4 MiB / 1000
        assert_eq!(get(&f, "cpu_us_per_op"), Some(500.0)); // 0.5 s / 1000
        assert_eq!(get(&f, "sys_cpu_us_per_op"), Some(2000.0)); // 2 s / 1000
        assert_eq!(get(&f, "cs_per_op"), Some(1.0));
        assert_eq!(get(&f, "sys_cs_per_op"), Some(4.0));
        assert_eq!(get(&f, "rss_bytes"), Some((300 << 20) as f64));
        assert_eq!(get(&f, "db_bytes"), Some((30 << 20) as f64));
        assert_eq!(get(&f, "db_apparent_bytes"), Some((25 << 20) as f64));
        assert_eq!(get(&f, "space_amp"), Some(3.0)); // 30 MiB / 10 MiB
        assert_eq!(get(&f, "write_amp"), Some(2.0)); // 10 MiB / 5 MiB
    }

    #[test]
    fn device_model_figures_by_hand() {
        use crate::probe::modelstats::ModelCounters;
        let (mut a, mut b) = samples();
        let w = WorkDone {
            ops: 1000,
            secs: 10.0,
            ..Default::default()
        };
        let f = compute(&a, &b, &w, None, 100.0);
        assert_eq!(get(&f, "dev_latency_us"), None, "not modelled: said, not 0");
        a.t = 0.0;
        b.t = 10.0;
        a.model = Some(ModelCounters {
            ios: 100,
            flushes: 10,
            waited: 5,
            medium_writes: 50,
            latency_ns: 1_000_000,
            ..Default::default()
        });
        b.model = Some(ModelCounters {
            ios: 2100,
            flushes: 510,
            waited: 505,
            medium_writes: 850,
            latency_ns: 16_001_000_000,
            ..Default::default()
        });
        let f = compute(&a, &b, &w, None, 100.0);
        assert_eq!(get(&f, "dev_flush_per_op"), Some(0.5)); // 500 / 1000 ops
        assert_eq!(get(&f, "dev_latency_us"), Some(8000.0)); // 16 s / 2000 IOs
        assert_eq!(get(&f, "dev_qd"), Some(1.6)); // 16 s of latency in 10 s
        assert_eq!(get(&f, "dev_waited_share"), Some(0.25)); // 500 / 2000
        assert_eq!(get(&f, "dev_medium_w_per_op"), Some(0.8)); // 800 / 1000
    }

    #[test]
    fn server_counters_by_hand_and_a_remote_server() {
        use crate::probe::ServerCounters;
        let (mut a, mut b) = samples();
        let w = WorkDone {
            ops: 1000,
            secs: 10.0,
            logical_bytes: 10 << 20,
            ..Default::default()
        };
        let f = compute(&a, &b, &w, None, 100.0);
        assert_eq!(get(&f, "srv_r_per_op"), None, "no counters: said, not 0");
        a.server = Some(ServerCounters {
            reads: Some(100),
            read_bytes: Some(100 * 16384),
            data_written: Some(1 << 20),
            log_written: Some(0),
            db_bytes: Some(1),
        });
        b.server = Some(ServerCounters {
            reads: Some(600),
            read_bytes: Some(600 * 16384),
            data_written: Some(9 << 20),
            log_written: Some(2 << 20),
            db_bytes: None,
        });
        let f = compute(&a, &b, &w, None, 100.0);
        assert_eq!(get(&f, "srv_r_per_op"), Some(0.5)); // 500 / 1000
        assert_eq!(get(&f, "srv_rkb_per_op"), Some(8.0)); // 500 × 16 KiB / 1000
        assert_eq!(get(&f, "srv_wkb_per_op"), Some(10.24)); // (8 + 2) MiB / 1000
        assert_eq!(get(&f, "srv_log_kb_per_op"), Some(2.048));
        assert_eq!(get(&f, "srv_db_bytes"), None);
        // Local figures stand beside them.
        assert_eq!(get(&f, "db_bytes"), Some((30 << 20) as f64));
        assert_eq!(get(&f, "space_amp"), Some(3.0));
        // A remote server: no process, files or device here are its.
        b.remote = true;
        b.process = None;
        b.server.as_mut().unwrap().db_bytes = Some(20 << 20);
        let f = compute(&a, &b, &w, Some("external target"), 100.0);
        assert_eq!(get(&f, "db_bytes"), None);
        assert_eq!(get(&f, "cpu_us_per_op"), None);
        assert_eq!(get(&f, "space_amp"), Some(2.0)); // 20 MiB on the server / 10 MiB
        assert_eq!(get(&f, "srv_db_bytes"), Some((20 << 20) as f64));
        let why = |n: &str| {
            let m = Metric::parse(n).unwrap();
            match &f.iter().find(|(k, _)| *k == m).unwrap().1 {
                Figure::NotMeasured(w) => w.clone(),
                Figure::Value(v) => panic!("{n} = {v}"),
            }
        };
        assert!(why("cpu_us_per_op").contains("another host"));
        assert!(why("db_bytes").contains("another host"));
    }

    #[test]
    fn missing_device_and_zero_ops_are_not_zero() {
        let (mut a, b) = samples();
        a.disk = None;
        let w = WorkDone {
            ops: 0,
            secs: 1.0,
            logical_bytes: 0,
            logical_written: 0,
        };
        let f = compute(&a, &b, &w, Some("tmpfs"), 100.0);
        let fig = |n: &str| {
            let m = Metric::parse(n).unwrap();
            f.iter().find(|(k, _)| *k == m).unwrap().1.clone()
        };
        assert_eq!(fig("r_per_op"), Figure::NotMeasured("tmpfs".into()));
        assert_eq!(
            fig("cpu_us_per_op"),
            Figure::NotMeasured("no operations in this phase".into())
        );
        assert!(matches!(fig("space_amp"), Figure::NotMeasured(_)));
        assert!(matches!(fig("write_amp"), Figure::NotMeasured(_)));
        assert_eq!(fig("ops"), Figure::Value(0.0));
    }
}
