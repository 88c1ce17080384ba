//! Probes: counters sampled at step start, every interval and step end.
//! A probe never knows which workload runs; it only reads counters.
//!
//! - the block device behind the data directory (/proc/diskstats),
//! - machine-wide CPU and context switches (/proc/stat),
//! - the engine's process (ourselves for embedded engines): IO bytes, CPU
//!   time, context switches, RSS (/proc/PID/{io,stat,status}, getrusage),
//! - the data directory's size, allocated and apparent,
//! - a server's own counters of its IO and size ([`server`]), and only
//!   those for a server on another host (an external target).

#![warn(missing_docs)]

// The core crate's modules, under the names the code has always used
// (`crate::testing` is ampbench-core's `testing`).
#[cfg(test)]
use ampbench_core::testing;

pub mod cpu;
pub mod device;
pub mod dirsize;
pub mod diskstats;
pub mod host;
pub mod loopback;
pub mod modelstats;
pub mod process;
pub mod server;
pub mod syscalls;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use cpu::MachineCpu;
pub use device::Device;
pub use dirsize::DirSize;
pub use diskstats::DiskCounters;
pub use host::{HostCounters, NodeExporter};
pub use process::ProcCounters;
pub use server::{CounterSource, ServerCounters};

/// CLOCK_MONOTONIC in ns: the clock `Instant` reads, as a plain integer, so
/// the measured path subtracts two u64s instead of normalising timespecs
/// into a checked `Duration` (about 80 instructions per operation less
/// under callgrind).
#[inline]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_MONOTONIC exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One reading of every counter.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the step's measured phase began.
    pub t: f64,
    /// Device counters, when the data dir has a block device.
    pub disk: Option<DiskCounters>,
    /// Machine-wide CPU and context switches.
    pub cpu: Option<MachineCpu>,
    /// The engine process's counters (with its children, for a server).
    pub process: Option<ProcCounters>,
    /// Our own counters when the engine is another process (a server): the
    /// client's cost, reported apart.
    #[serde(default)]
    pub client: Option<ProcCounters>,
    /// The database's size.
    pub dir: DirSize,
    /// The counters of the disk behind a dedicated (loop) device: the
    /// engine's IO as the machine's disk saw it.
    #[serde(default)]
    pub backing: Option<DiskCounters>,
    /// The device model's own counters, when a model serves the device
    /// (then `disk` is the model's count of the IOs it served).
    #[serde(default)]
    pub model: Option<modelstats::ModelCounters>,
    /// The server's own counters, for a server engine.
    #[serde(default)]
    pub server: Option<ServerCounters>,
    /// The engine is a server on another host (an external target): no
    /// process, device or data directory here is its.
    #[serde(default)]
    pub remote: bool,
    /// The server host's devices and CPU by its node exporter
    /// (`--host-metrics`).
    #[serde(default)]
    pub host: Option<HostCounters>,
}

/// What to sample: a data directory (and its device), a process, and a
/// server's own counters.
#[derive(Clone)]
pub struct Probe {
    paths: Vec<PathBuf>,
    device: Result<Device, String>,
    backing: Option<Device>,
    model: Option<std::sync::Arc<modelstats::Mapped>>,
    /// The engine's processes (one but for a cluster's servers); none:
    /// they are on another host.
    pids: Vec<u32>,
    server: Option<std::sync::Arc<dyn CounterSource>>,
    host: Option<std::sync::Arc<NodeExporter>>,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("paths", &self.paths)
            .field("device", &self.device)
            .field("pids", &self.pids)
            .field("server", &self.server.as_ref().map(|s| s.source()))
            .finish()
    }
}

impl Probe {
    /// A probe for data in `dir`, charged to process `pid`.
    pub fn new(dir: &Path, pid: u32) -> Probe {
        Probe::with_paths(dir, vec![dir.to_path_buf()], pid)
    }

    /// A probe whose device is the one behind `dir`, whose size is that of
    /// `paths` (files or directories), charged to `pid` (and its children
    /// when it is not us).
    pub fn with_paths(dir: &Path, paths: Vec<PathBuf>, pid: u32) -> Probe {
        let device = device::device_for(dir);
        Probe {
            paths,
            backing: device.as_ref().ok().and_then(device::backing_of),
            model: device
                .as_ref()
                .ok()
                .and_then(|d| modelstats::Mapped::of_loop(&d.name))
                .map(std::sync::Arc::new),
            device,
            pids: vec![pid],
            server: None,
            host: None,
        }
    }

    /// A probe of a server on another host: only its own counters and
    /// this machine's CPU (ampbench's own cost) are read; the device is
    /// none of this machine's, said as `why`.
    pub fn remote(server: std::sync::Arc<dyn CounterSource>, why: &str) -> Probe {
        Probe {
            paths: Vec::new(),
            device: Err(why.to_string()),
            backing: None,
            model: None,
            pids: Vec::new(),
            server: Some(server),
            host: None,
        }
    }

    /// The same probe, charged to these processes and their children
    /// instead (a cluster's servers); none: unchanged.
    pub fn with_pids(mut self, pids: Vec<u32>) -> Probe {
        if !pids.is_empty() {
            self.pids = pids;
        }
        self
    }

    /// The same probe, also reading a server's own counters.
    pub fn with_server(mut self, server: Option<std::sync::Arc<dyn CounterSource>>) -> Probe {
        self.server = server;
        self
    }

    /// The same probe, also reading a host's node exporter.
    pub fn with_host(mut self, host: Option<std::sync::Arc<NodeExporter>>) -> Probe {
        self.host = host;
        self
    }

    /// The node exporter read, when one is.
    pub fn host_source(&self) -> Option<&str> {
        self.host.as_ref().map(|h| h.url())
    }

    /// Where the server's counters come from, when they are read.
    pub fn server_source(&self) -> Option<&'static str> {
        self.server.as_ref().map(|s| s.source())
    }

    /// The block device, or why there is none.
    pub fn device(&self) -> &Result<Device, String> {
        &self.device
    }

    /// Reads every counter now; `t` is stored as given.
    pub fn sample(&self, t: f64) -> Sample {
        let model = self.model.as_ref().map(|m| m.sample());
        Sample {
            t,
            disk: match model {
                Some((_, d)) => Some(d),
                None => self
                    .device
                    .as_ref()
                    .ok()
                    .and_then(|d| diskstats::read(&d.name)),
            },
            model: model.map(|m| m.0),
            cpu: cpu::read(),
            process: match self.pids[..] {
                [] => None,
                [p] if p == std::process::id() => process::read(p),
                _ => process::read_trees(&self.pids),
            },
            client: (self.pids[..] != [std::process::id()])
                .then(|| process::read(std::process::id()))
                .flatten(),
            dir: dirsize::measure_all(&self.paths),
            backing: self.backing.as_ref().and_then(|d| diskstats::read(&d.name)),
            server: self.server.as_ref().and_then(|s| s.read()),
            remote: self.pids.is_empty(),
            host: self.host.as_ref().and_then(|h| h.read().ok()),
        }
    }
}
