//! Response time: HDR histograms in µs with 3 significant digits, and their
//! summary (count, mean, p50, p95, p99, p99.9, max).

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use serde::{Deserialize, Serialize};

/// The highest latency tracked exactly: one hour in µs (larger values are
/// clamped, so `max` never lies low by more than the clamp).
const MAX_US: u64 = 3_600_000_000;

/// A latency histogram in µs.
#[derive(Clone, Debug)]
pub struct Latency {
    h: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency::new()
    }
}

impl Latency {
    /// An empty histogram (1 µs to 1 hour, 3 significant digits).
    pub fn new() -> Latency {
        Latency {
            // Bounds are constants within hdrhistogram's limits.
            h: Histogram::new_with_bounds(1, MAX_US, 3).expect("valid constant bounds"),
        }
    }

    /// Records one response time in µs (0 is recorded as 1 µs, the floor).
    #[inline]
    pub fn record(&mut self, us: u64) {
        self.h.saturating_record(us.clamp(1, MAX_US));
    }

    /// Records `n` response times of `us` µs each.
    pub fn record_n(&mut self, us: u64, n: u64) {
        self.h.saturating_record_n(us.clamp(1, MAX_US), n);
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides: add cannot fail.
        let _ = self.h.add(&other.h);
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Empties the histogram.
    pub fn reset(&mut self) {
        self.h.reset();
    }

    /// The summary of the values.
    pub fn summary(&self) -> LatencySummary {
        let q = |p: f64| self.h.value_at_quantile(p);
        LatencySummary {
            count: self.h.len(),
            mean: self.h.mean(),
            p50: q(0.50),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: self.h.max(),
        }
    }

    /// The percentile spectrum HdrHistogram's tools plot: the value at
    /// percentiles 1 − 10^(−k/4) for k = 0…16 (0, 43.8, 68.4, 82.2, 90, …,
    /// 99, …, 99.9, …, 99.99), evenly spaced on a "nines" axis, as
    /// (percentile, µs). Empty for an empty histogram.
    pub fn spectrum(&self) -> Vec<(f64, u64)> {
        if self.h.is_empty() {
            return Vec::new();
        }
        (0..=16)
            .map(|k| {
                let q = 1.0 - 10f64.powf(-(k as f64) / 4.0);
                (q * 100.0, self.h.value_at_quantile(q))
            })
            .collect()
    }

    /// The underlying HdrHistogram (for interval logs).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.h
    }

    /// Serializes in the HdrHistogram V2 format (for the results file).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        V2Serializer::new()
            .serialize(&self.h, &mut out)
            .map_err(|e| anyhow::anyhow!("serializing histogram: {e:?}"))?;
        Ok(out)
    }

    /// Reads a histogram written by [`to_bytes`](Latency::to_bytes).
    pub fn from_bytes(b: &[u8]) -> Result<Latency> {
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut std::io::Cursor::new(b))
            .map_err(|e| anyhow::anyhow!("{e:?}"))
            .context("reading a histogram from the results file")?;
        Ok(Latency { h })
    }
}

/// Response times below this many µs are counted exactly by a [`Recorder`]
/// in a flat array before they reach the histogram: 1 ms covers a cached
/// engine's operations, most reads from a device, and a cached read slowed
/// a hundredfold under callgrind (bench/vs-db_bench.sh), so that the
/// instructions counted there are those of the path real runs take. 8 KB
/// per operation kind and thread.
const SMALL_US: usize = 1024;

/// The measured path's front to a [`Latency`]: a response time under 1 ms
/// (most of them, for an embedded engine) increments one counter of a flat
/// array, one cache line touched; a longer one goes straight into the
/// histogram. [`take`](Recorder::take) adds the counters to the histogram
/// and hands it over. What it hands over is what recording every value
/// into the histogram gives.
#[derive(Clone, Debug)]
pub struct Recorder {
    small: [u64; SMALL_US],
    hist: Latency,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Recorder {
        Recorder {
            small: [0; SMALL_US],
            hist: Latency::new(),
        }
    }

    /// Records one response time in µs.
    #[inline]
    pub fn record(&mut self, us: u64) {
        match self.small.get_mut(us as usize) {
            Some(n) => *n += 1,
            None => self.hist.record(us),
        }
    }

    /// Adds everything recorded since the last drain to each of `into`,
    /// and starts empty again, keeping its histogram's memory: a thread
    /// hands its interval over without allocating (a fresh histogram per
    /// operation kind, thread and interval, freed by another thread, made
    /// mimalloc's resident memory climb through a long run).
    pub fn drain_into(&mut self, into: &mut [&mut Latency]) {
        for (us, n) in self.small.iter_mut().enumerate() {
            if *n > 0 {
                self.hist.record_n(us as u64, *n);
                *n = 0;
            }
        }
        for l in into.iter_mut() {
            l.merge(&self.hist);
        }
        self.hist.reset();
    }

    /// Everything recorded since the last take, as a histogram; the
    /// recorder starts empty again.
    pub fn take(&mut self) -> Latency {
        for (us, n) in self.small.iter_mut().enumerate() {
            if *n > 0 {
                self.hist.record_n(us as u64, *n);
                *n = 0;
            }
        }
        std::mem::take(&mut self.hist)
    }
}

/// Summary of a latency histogram, µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of operations.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_1_to_1000() {
        let mut l = Latency::new();
        for us in 1..=1000 {
            l.record(us);
        }
        let s = l.summary();
        assert_eq!(s.count, 1000);
        assert_eq!(s.p50, 500);
        assert_eq!(s.p95, 950);
        assert_eq!(s.p99, 990);
        assert_eq!(s.p999, 999);
        assert_eq!(s.max, 1000);
        assert!((s.mean - 500.5).abs() < 0.5);
    }

    #[test]
    fn recorder_hands_over_what_the_histogram_records() {
        let mut r = Recorder::new();
        let mut l = Latency::new();
        for us in [0, 1, 3, 3, 63, 64, 65, 1_000, 7, 250_000] {
            r.record(us);
            l.record(us);
        }
        let got = r.take();
        assert_eq!(got.count(), 10);
        assert_eq!(got.summary(), l.summary());
        assert_eq!(got.to_bytes().unwrap(), l.to_bytes().unwrap());
        // Taken means emptied.
        assert_eq!(r.take().count(), 0);
        r.record(5);
        assert_eq!(r.take().summary().max, 5);
        // Draining adds the same values to each target, and empties.
        r.record(3);
        r.record(5000);
        let (mut a, mut b) = (Latency::new(), Latency::new());
        a.record(7);
        r.drain_into(&mut [&mut a, &mut b]);
        assert_eq!((a.count(), b.count()), (3, 2));
        // 5000 µs at three significant digits.
        assert!(
            (5000..=5005).contains(&b.summary().max),
            "{:?}",
            b.summary()
        );
        assert_eq!(r.take().count(), 0);
    }

    #[test]
    fn merge_and_roundtrip() {
        let mut a = Latency::new();
        let mut b = Latency::new();
        a.record(10);
        b.record(20_000);
        a.merge(&b);
        let c = Latency::from_bytes(&a.to_bytes().unwrap()).unwrap();
        assert_eq!(c.count(), 2);
        assert_eq!(c.summary().max, a.summary().max);
        // 3 significant digits: the max is reported as its bucket's top.
        assert!(
            (20_000..=20_031).contains(&c.summary().max),
            "{}",
            c.summary().max
        );
    }
}
