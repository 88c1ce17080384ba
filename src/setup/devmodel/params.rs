//! A modelled device's parameters: its service times, its budgets, its
//! write cache and the physics the model applies (see [`super::model`]).

use serde::{Deserialize, Serialize};

use super::model::Nanos;
use crate::rng::Rng;

/// A service time: lognormal with this mean (µs) and this σ of its log
/// (0 is a constant).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Service {
    /// The mean, µs.
    pub mean_us: f64,
    /// σ of ln(time); 0.3 spreads the middle half over about ±20%.
    pub sigma: f64,
}

impl Service {
    pub(super) fn draw(&self, rng: &mut Rng) -> Nanos {
        if self.sigma <= 0.0 {
            return (self.mean_us * 1e3) as Nanos;
        }
        // mean = exp(μ + σ²/2)
        let mu = (self.mean_us * 1e3).ln() - self.sigma * self.sigma / 2.0;
        (mu + self.sigma * rng.normal()).exp() as Nanos
    }
}

/// A write cache in front of the medium.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WriteCache {
    /// Its size in bytes.
    pub bytes: u64,
    /// Destage rate: writes per second taken to the medium.
    pub destage_iops: f64,
    /// Destage bandwidth, MB/s (10⁶ bytes).
    pub destage_mbps: f64,
    /// Battery-backed (a flush does not wait) or volatile (it waits).
    pub battery: bool,
    /// The time of a write into the cache, or a read from it, µs.
    pub hit_us: f64,
    /// How long a write stays in the cache before it destages, unless a
    /// flush or a full cache sends it sooner, µs (a drive's DRAM cache
    /// holding writes to combine them; 0: destage at once).
    #[serde(default)]
    pub delay_us: f64,
}

/// A device's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Parallel units: spindles or flash channels.
    pub units: u32,
    /// Bytes per stripe chunk (which unit an offset belongs to).
    pub stripe: u64,
    /// A random read's positioning (or flash read) time.
    pub read: Service,
    /// A random write's time at the medium.
    pub write: Service,
    /// A sequential IO's command overhead, µs.
    pub seq_us: f64,
    /// Transfer rate of one unit, MB/s.
    pub unit_mbps: f64,
    /// The shared IOPS budget.
    pub iops: f64,
    /// The shared bandwidth budget, MB/s.
    pub mbps: f64,
    /// A flush's time at the medium, µs (no cache, or a volatile one).
    pub flush_us: f64,
    /// The write cache, if any.
    pub cache: Option<WriteCache>,
    /// The path's own mean latency, µs: the loop device, the filesystem
    /// and FUSE between a request and the model, measured with a model
    /// that adds nothing, and taken off every IO's time (never below
    /// zero) so a QD1 IO takes the class's time, not the class's plus
    /// the path's.
    #[serde(default)]
    pub path_us: f64,
    /// Command queueing: how many more random IOs a unit serves at a
    /// depth of 32 than at 1, as a share (0.5: 50% more; 0: it does not
    /// reorder). A write cache's destage sorts by address the same way.
    /// See [`super::physics::queue_factor`].
    #[serde(default)]
    pub queueing: f64,
    /// Flash: spare area as a share of the user capacity (0: not flash,
    /// no garbage collection modelled).
    #[serde(default)]
    pub spare: f64,
    /// Flash at steady state: every block has been written (a
    /// preconditioning pass), so random writes pay garbage collection's
    /// write amplification ([`super::physics::write_amp`] of `spare`) at
    /// the medium, in time and in the budget. False: a fresh drive.
    #[serde(default)]
    pub preconditioned: bool,
}

impl Params {
    /// What garbage collection multiplies a random write's cost at the
    /// medium by: 1 on a fresh drive or a disk.
    pub fn gc_amp(&self) -> f64 {
        if self.preconditioned {
            super::physics::write_amp(self.spare)
        } else {
            1.0
        }
    }
}
