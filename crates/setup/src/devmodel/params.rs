//! A modelled device's parameters: its service times, its budgets, its
//! write cache and the physics the model applies (see [`super::model`]).

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// Nanoseconds on the model's clock.
pub type Nanos = u64;

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

impl Params {
    /// A device that adds nothing: a class the model does not serve, in a
    /// sweep with classes it does.
    pub fn transparent() -> Params {
        let zero = Service {
            mean_us: 0.0,
            sigma: 0.0,
        };
        Params {
            units: 64,
            stripe: 64 << 10,
            read: zero,
            write: zero,
            seq_us: 0.0,
            unit_mbps: 1e9,
            iops: 1e12,
            mbps: 1e9,
            flush_us: 0.0,
            cache: None,
            path_us: 0.0,
            queueing: 0.0,
            spare: 0.0,
            preconditioned: false,
        }
    }

    /// The budgets (IOPS, MB/s, the cache's destage rates) times `f`, the
    /// latencies as they are (`--io-scale`).
    pub fn scaled(&self, f: f64) -> Params {
        let mut p = *self;
        p.iops *= f;
        p.mbps *= f;
        if let Some(c) = p.cache.as_mut() {
            c.destage_iops *= f;
            c.destage_mbps *= f;
        }
        p
    }

    /// True for [`Params::transparent`].
    pub fn is_transparent(&self) -> bool {
        Params {
            path_us: 0.0,
            ..*self
        } == Params::transparent()
    }

    /// `10 units, random read 7.5 ms / write 8.5 ms, 1000 IOPS and 1000 MB/s shared, 512 MB battery-backed cache destaging 400/s`.
    pub fn show(&self) -> String {
        if self.is_transparent() {
            return "not modelled here: served without delay through the model's FUSE path from the host's page cache (not the machine's disk)".into();
        }
        // Up to 4 significant digits, no trailing zeros: 7.5 ms, 83.33 IOPS.
        let n = |v: f64| {
            let digits = (3 - v.abs().max(1e-9).log10().floor() as i32).clamp(0, 6) as usize;
            let s = format!("{v:.digits$}");
            if s.contains('.') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s
            }
        };
        let t = |us: f64| {
            if us >= 1000.0 {
                format!("{} ms", n(us / 1000.0))
            } else {
                format!("{} µs", n(us))
            }
        };
        let cache = match &self.cache {
            None => "no write cache".to_string(),
            Some(c) => format!(
                "{} MB {} write cache destaging {}/s{}",
                c.bytes >> 20,
                if c.battery {
                    "battery-backed"
                } else {
                    "volatile"
                },
                n(c.destage_iops),
                if c.delay_us > 0.0 {
                    format!(" after holding a write {}", t(c.delay_us))
                } else {
                    String::new()
                }
            ),
        };
        let mut extra = String::new();
        if self.queueing > 0.0 {
            extra.push_str(&format!(
                "; {}% more random IOs per unit at depth 32 (command queueing, sorted destage)",
                n(self.queueing * 100.0)
            ));
        }
        if self.spare > 0.0 {
            extra.push_str(&if self.preconditioned {
                format!(
                    "; at steady state, {}% spare: a random write costs {} at the flash (garbage collection)",
                    n(self.spare * 100.0),
                    n(self.gc_amp())
                )
            } else {
                format!("; fresh flash ({}% spare, no garbage collection yet)", n(self.spare * 100.0))
            });
        }
        format!(
            "{} units, random read {} / write {}, {} IOPS and {} MB/s shared by reads and writes, {cache}{extra}",
            self.units,
            t(self.read.mean_us),
            t(self.write.mean_us),
            n(self.iops),
            n(self.mbps)
        )
    }
}
