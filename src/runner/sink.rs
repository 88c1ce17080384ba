//! The step sink: writes each interval's figures and latencies to the
//! results file as the driver reports them, checks the engine's memory
//! cgroup for OOM kills, and drives the progress spinner.

use anyhow::{Context, Result};
use indicatif::ProgressBar;

use crate::driver::{IntervalRecord, StepSink};
use crate::metrics::{self, Latency, WorkDone};
use crate::results::Results;
use crate::setup::cgroup::MemCgroup;
use crate::setup::oom::oom_kills;
use crate::workload::Workload;

/// Writes figures and latencies to the results file as the driver reports them.
pub(super) struct Sink<'r> {
    pub(super) results: &'r mut Results,
    /// The engine's memory cgroup, its OOM kills at the step's start, and
    /// the limit.
    pub(super) oom: Option<(&'r MemCgroup, u64, u64)>,
    pub(super) step: i64,
    pub(super) workload: &'r dyn Workload,
    pub(super) no_device: Option<String>,
    pub(super) bar: ProgressBar,
    pub(super) label: String,
    /// Groups intervals into `--slice` slices.
    pub(super) slicer: Option<super::Slicer>,
    /// The device model, if it serves the device: its death fails the
    /// step at once (a cached step may do no IO to fail on).
    pub(super) model: Option<&'r mut crate::setup::devmodel::Served>,
}

impl Sink<'_> {
    /// Records the last (possibly shorter) slice at the step's end.
    pub(super) fn finish_slices(&mut self) -> Result<()> {
        let live = self.workload.live_bytes();
        match self.slicer.as_mut().and_then(|s| s.finish(live)) {
            Some(s) => self
                .results
                .add_slice(self.step, &s)
                .context("writing a slice to the results file"),
            None => Ok(()),
        }
    }
}

/// Why a step must fail now: the device model died, or the OOM killer
/// killed a process of the engine's group (`oom`: the group, its kills
/// at the step's start and the limit) since the step began.
pub(super) fn health(
    model: Option<&mut crate::setup::devmodel::Served>,
    oom: Option<(&MemCgroup, u64, u64)>,
) -> Option<String> {
    if let Some(why) = model.and_then(|m| m.failure()) {
        return Some(why);
    }
    let (cg, before, limit) = oom?;
    (oom_kills(cg)? > before).then(|| {
        format!(
            "the out-of-memory killer killed a process of the engine at the --memory limit of {}; give more --memory or a smaller --cache",
            crate::units::format_size(limit)
        )
    })
}

impl StepSink for Sink<'_> {
    fn interval(&mut self, r: &IntervalRecord) -> Result<()> {
        let w = WorkDone {
            ops: r.ops,
            secs: r.end.t - r.start.t,
            logical_bytes: self.workload.live_bytes(),
            logical_written: r.written,
        };
        let figs = metrics::compute(
            &r.start,
            &r.end,
            &w,
            self.no_device.as_deref(),
            crate::probe::cpu::ticks_per_sec(),
        );
        self.results
            .add_interval(
                self.step,
                r.idx,
                (r.start.t, r.end.t),
                (r.ops, r.bg_ops, r.written),
                &figs,
                (&r.start, &r.end),
            )
            .context("writing an interval to the results file")?;
        let live = self.workload.live_bytes();
        if let Some(s) = self.slicer.as_mut().and_then(|s| s.push(r, live)) {
            self.results
                .add_slice(self.step, &s)
                .context("writing a slice to the results file")?;
        }
        Ok(())
    }
    fn interval_latency(&mut self, idx: usize, l: &[(String, Latency)]) -> Result<()> {
        self.results.add_latencies(self.step, idx as i64, l)
    }
    fn health(&mut self) -> Option<String> {
        health(self.model.as_deref_mut(), self.oom)
    }
    fn progress(&mut self, ops: u64, secs: f64) {
        let rate = if secs > 0.0 { ops as f64 / secs } else { 0.0 };
        self.bar.set_message(format!(
            "{}: {ops} ops, {rate:.0} ops/s, {secs:.0}s",
            self.label
        ));
        self.bar.tick();
    }
}
