//! One step of an engine run: planned by the workload, driven, and its
//! figures, notes, predictions, latencies and engine statistics recorded.

use std::io::Write;

use anyhow::Result;

use super::sink::Sink;
use super::{After, EngineMem, Level, Run, Slicer, predict, progress_bar, step_ctx};
use crate::driver::{self, StepSink};
use crate::engine::Engine;
use crate::metrics::{self, Metric, WorkDone};
use crate::names::Status;
use crate::probe::Probe;
use crate::record::{Harness, Note, SLICES, StepExtras};
use crate::setup::cgroup::MemCgroup;
use crate::setup::oom::oom_kills;
use crate::workload::{Step, Workload};

/// One step: planned by the workload, driven, its figures, notes, latencies
/// and engine statistics recorded, settled after a load with `--settle`,
/// and a line printed.
// Long: the step's sequence (memory group, warm-up, meeting the other clients,
// the driver, the figures, the model, the line printed) shares the run, the
// context and the measured result.
pub(super) fn run_step(
    r: &mut Run<'_>,
    eng: &dyn Engine,
    workload: &dyn Workload,
    probe: &Probe,
    mem: &EngineMem,
    (si, step, at): (usize, Step, Level),
    out: &mut dyn Write,
) -> Result<After> {
    if let Some(c) = mem.cg.as_ref() {
        c.reset_peak();
    }
    let mut ctx = step_ctx(r.cfg, si, at.threads, at.pass)?;
    // A cluster's nodes first apply what the last step wrote (an index
    // the next step's queries name).
    if let crate::engine::EngineRef::Sql(s) = eng.face() {
        if let Err(e) = s.before_step() {
            writeln!(out, "  {step}: FAILED: {e:#}")?;
            r.status = Status::Failed;
            return Ok(After::Failed);
        }
    }
    // --warmup-steady: warmed up before the step begins (and before
    // several clients meet to start it), so its measured phase needs no
    // more.
    let mut warmed = None;
    if let Some(max) = r.cfg.warmup_steady {
        let oom = oom_of(mem, r.cfg.memory);
        let mut health = || {
            let model = r.storage.device.as_mut().and_then(|d| d.model.as_mut());
            super::sink::health(model, oom)
        };
        match super::warm::warm_up(
            step,
            eng,
            workload,
            probe,
            &ctx,
            (r.cfg.warmup, max),
            &mut health,
        ) {
            Ok(Some(w)) => {
                writeln!(out, "{}", w.line(&at.label(step)))?;
                ctx.warmup = std::time::Duration::ZERO;
                warmed = Some(w);
                // The step's own figures start here: the workload's
                // totals (LinkBench's client costs, rows, multiget) are
                // dropped, the engine's column-family counters and the
                // memory peak start again.
                workload.discard(step);
                if let Ok(st) = eng.stats() {
                    let now = predict::cf_counters(&st.values);
                    if !now.is_empty() {
                        r.cf_before = now;
                    }
                }
                if let Some(c) = mem.cg.as_ref() {
                    c.reset_peak();
                }
            }
            Ok(None) => {}
            Err(e) if e.chain().any(|c| c.is::<crate::UsageError>()) => return Err(e),
            Err(e) => {
                // Said as a measured step's failure is (the memory limit,
                // a hung server, a full device), and recorded as the
                // step's, so the results say where the run stopped.
                let mut why = format!("{e:#}");
                explain(eng, health(), &mut why);
                let label = at.label(step);
                let spec = step_spec(r, eng, &ctx, (step, at), None, None);
                let id = r
                    .results
                    .begin_step(r.id, (r.ordinal, r.rep), &r.label, &label, &spec)?;
                r.ordinal += 1;
                r.results
                    .end_step(id, Status::Failed, Some(&why), 0.0, None)?;
                writeln!(out, "  {label}: FAILED: {why}")?;
                r.status = Status::Failed;
                return Ok(After::Failed);
            }
        }
    }
    let planned = match workload.plan(step, eng.face(), &ctx) {
        Ok(p) => p,
        Err(e) if e.chain().any(|c| c.is::<crate::UsageError>()) => return Err(e),
        Err(e) => {
            writeln!(out, "  {step}: FAILED: {e:#}")?;
            r.status = Status::Failed;
            return Ok(After::Failed);
        }
    };
    let spec_json = step_spec(
        r,
        eng,
        &ctx,
        (step, at),
        Some(&planned.spec),
        warmed.as_ref(),
    );
    // A sweep's steps are named by their level: `pq.n@8`, `request@disk-array`.
    let label = at.label(step);
    let id = r
        .results
        .begin_step(r.id, (r.ordinal, r.rep), &r.label, &label, &spec_json)?;
    r.ordinal += 1;
    // The engine's own counters at the step's start as well as its end,
    // so the step's are its own: differencing two steps' ends counts the
    // consistency check between them (on InnoDB's l.i1, Handler_read_next
    // came out at 21 per row where the step reads about 1).
    if let Ok(st) = eng.stats() {
        r.results.add_engine_stats(id, &st, "start")?;
    }
    let s = StepRun {
        id,
        step,
        label,
        eng,
        workload,
        probe,
        mem,
    };
    // Several clients: the step starts when all are ready, its start
    // recorded on the store's clock (how their intervals line up), and
    // it is recorded (its checks run) once all have ended it.
    let starting = format!("step {} start", r.ordinal - 1);
    r.barrier(&starting, None)?;
    let t0 = r.meeting.as_ref().map(|m| m.store_now());
    let o = s.drive(r, planned);
    if let Some(t0) = t0 {
        r.results.set_step_start(id, t0)?;
    }
    r.barrier(&format!("step {} end", r.ordinal - 1), None)?;
    let rec = s.record(r, &o)?;
    s.say(r, &o, &rec, out)?;
    if rec.status == Status::Failed {
        // The others go on without this client.
        r.leave(&format!("step {} failed", s.label))?;
    }
    Ok(match rec.status {
        Status::Failed => {
            r.status = Status::Failed;
            After::Failed
        }
        Status::Interrupted => {
            r.status = Status::Interrupted;
            After::Interrupted
        }
        _ => After::Next,
    })
}

/// What a step records of itself (its `spec` in the results file): the
/// engine, its settings, the seed, class and identity, and what the
/// driver was given (None when the step failed before it was planned).
fn step_spec(
    r: &Run<'_>,
    eng: &dyn Engine,
    ctx: &crate::workload::StepCtx,
    (step, at): (Step, Level),
    planned: Option<&driver::StepSpec>,
    warmed: Option<&super::warm::Warmed>,
) -> serde_json::Value {
    let mut spec = serde_json::json!({
        "engine_version": eng.version(),
        "settings": eng.settings(),
        "warmup_steady": warmed,
        "seed": ctx.seed,
        "storage_class": at.class.map_or(r.cfg.storage.class, |c| c).name(),
        "allocator": eng.pid().map(|p| r.cfg.allocator.describe(p)),
        "identity": at.identity(step),
        "about": step.about(),
    });
    if let (Some(p), Some(m)) = (planned, spec.as_object_mut()) {
        for (k, v) in [
            ("threads", serde_json::json!(p.threads)),
            ("ops", serde_json::json!(p.op_names)),
            ("warmup_s", serde_json::json!(p.warmup.as_secs_f64())),
            ("stop", serde_json::json!(p.stop)),
            ("arrival", serde_json::json!(p.arrival)),
            ("background", serde_json::json!(p.background)),
        ] {
            m.insert(k.into(), v);
        }
    }
    spec
}

/// Says why a step failed where the cause is known: the engine's health
/// (killed at its memory limit, a dead device model) when the error does
/// not say it already, a hung server, a full device.
fn explain(eng: &dyn Engine, health: Option<String>, e: &mut String) {
    if let Some(why) = health.filter(|w| !e.contains(w.as_str())) {
        *e = format!("{why} ({e})");
    }
    if let Some(why) = eng.face().sql().and_then(|s| s.hung()) {
        *e = format!("{why} ({e})");
    }
    if let Some(full) = crate::setup::storage::full_note(eng.dir()) {
        *e = format!("{full} ({e})");
    }
}

/// The engine's memory group, its OOM kills so far and the limit: what
/// a step's health check compares against.
fn oom_of(mem: &EngineMem, memory: Option<u64>) -> Option<(&MemCgroup, u64, u64)> {
    let c = mem.cg.as_ref()?;
    Some((c, oom_kills(c)?, memory?))
}

/// A step once begun in the results file: what its phases (drive, record,
/// say) share.
struct StepRun<'a> {
    /// Its row in the results file.
    id: i64,
    step: Step,
    /// Its name in the results (`pq.n@8`).
    label: String,
    eng: &'a dyn Engine,
    workload: &'a dyn Workload,
    probe: &'a Probe,
    mem: &'a EngineMem,
}

/// What recording a step leaves for its line.
struct Recorded {
    figs: Vec<(Metric, metrics::Figure)>,
    notes: Vec<Note>,
    /// How many of the notes are the workload's (the model's follow).
    printed: usize,
    status: Status,
    settle_note: Option<String>,
}

impl StepRun<'_> {
    /// Drives the planned step, its intervals into the results as they
    /// close; a failure says why when the cause is known (the memory
    /// limit, a hung server, a full device).
    fn drive(&self, r: &mut Run<'_>, planned: crate::workload::Planned<'_>) -> driver::StepOutcome {
        let cfg = r.cfg;
        let no_device = self.probe.device().as_ref().err().cloned();
        let mut sink = Sink {
            oom: oom_of(self.mem, cfg.memory),
            results: &mut r.results,
            step: self.id,
            workload: self.workload,
            no_device: no_device.clone(),
            bar: progress_bar(),
            label: format!("{} {}", r.label, self.step),
            slicer: cfg.slice.map(|l| Slicer::new(l, no_device.clone())),
            model: r.storage.device.as_mut().and_then(|d| d.model.as_mut()),
        };
        let mut o = driver::run_step(
            &planned.spec,
            &*planned.fg,
            planned.bg.as_deref(),
            self.probe,
            &mut sink,
        );
        sink.bar.finish_and_clear();
        if let Err(e) = sink.finish_slices() {
            o.error.get_or_insert(format!("{e:#}"));
        }
        // A server killed at the memory limit shows first as a lost
        // connection, and a full device as whatever the engine makes of
        // ENOSPC: say why.
        if let Some(e) = o.error.as_mut() {
            explain(self.eng, sink.health(), e);
        }
        o
    }

    /// The step's figures, notes, extras and the model's checks, its
    /// response times, rates and engine statistics into the results; the
    /// settle after a load; its status.
    fn record(&self, r: &mut Run<'_>, o: &driver::StepOutcome) -> Result<Recorded> {
        let (cfg, step, eng, workload) = (r.cfg, self.step, self.eng, self.workload);
        let w = WorkDone {
            ops: o.ops,
            secs: o.secs,
            logical_bytes: workload.live_bytes(),
            logical_written: o.written,
        };
        let no_device = self.probe.device().as_ref().err().cloned();
        let ticks = crate::probe::cpu::ticks_per_sec();
        let figs = metrics::compute(&o.start, &o.end, &w, no_device.as_deref(), ticks);
        let said_by_workload =
            workload
                .finish(step, eng.face())
                .unwrap_or_else(|e| crate::workload::StepNotes {
                    figures: Vec::new(),
                    lines: vec![format!("after {step}: {e:#}")],
                });
        let mut notes: Vec<Note> = said_by_workload.lines.into_iter().map(Note::Said).collect();
        let stats = eng.stats().ok();
        let settings = eng.settings();
        let printed = notes.len();
        let said = predict::notes(
            &predict::Done {
                kind: eng.kind(),
                settings: &settings,
                stats: stats.as_ref(),
                workload,
                step,
                figs: &figs,
                ops: o.ops,
                written: o.written,
                secs: o.secs,
            },
            &mut r.cf_before,
        );
        notes.extend(said.lines);
        let record = StepExtras {
            harness: self.harness(o),
            workload: said_by_workload.figures.into_iter().collect(),
            ..said.record
        };
        let id = self.id;
        r.results
            .add_step_figures(id, &figs, &record, &notes, (&o.start, &o.end))?;
        r.results.add_model_checks(id, &said.checks)?;
        r.results
            .add_latencies(id, crate::results::WHOLE_STEP, &o.latencies)?;
        r.results
            .add_rates(id, &driver::rates(&o.timeline, o.secs))?;
        if let Some(st) = &stats {
            r.results.add_engine_stats(id, st, "end")?;
        }
        let settle_note = (cfg.settle && o.error.is_none() && step.loads()).then(|| {
            eng.settle()
                .unwrap_or_else(|e| format!("settle failed: {e:#}"))
        });
        let status = match (&o.error, o.interrupted) {
            (Some(_), _) => Status::Failed,
            (None, true) => Status::Interrupted,
            (None, false) => Status::Done,
        };
        r.results.end_step(
            id,
            status,
            o.error.as_deref(),
            o.secs,
            settle_note.as_deref(),
        )?;
        Ok(Recorded {
            figs,
            notes,
            printed,
            status,
            settle_note,
        })
    }

    /// The harness's figures: calls/s where a call is several operations
    /// (a batch of rows, a range query's documents; the reports show both
    /// rates), background ops, the step's slices, the memory group's peak
    /// and limit hits.
    fn harness(&self, o: &driver::StepOutcome) -> Harness {
        let calls: u64 = o
            .latencies
            .iter()
            .filter(|(n, _)| !crate::record::is_background(n))
            .map(|(_, l)| l.count())
            .sum();
        let cg = self.mem.cg.as_ref();
        Harness {
            calls_per_sec: (o.secs > 0.0 && calls > 0 && calls != o.ops)
                .then(|| calls as f64 / o.secs),
            bg_ops: (o.bg_ops > 0).then_some(o.bg_ops as f64),
            slices: driver::slices(&o.timeline, o.secs, SLICES).unwrap_or_default(),
            mem_peak_mb: cg.and_then(|c| c.peak()).map(|p| p as f64 / 1e6),
            mem_limit_hits: cg.and_then(|c| c.limit_hits()).map(|h| h as f64),
        }
    }

    /// The step's line: with -v its main figures and the model's
    /// explanation; without, only a failed or stopped step's. Then the
    /// settle's and the workload's lines.
    fn say(
        &self,
        r: &Run<'_>,
        o: &driver::StepOutcome,
        rec: &Recorded,
        out: &mut dyn Write,
    ) -> Result<()> {
        let cfg = r.cfg;
        let f = |m: Metric| {
            rec.figs
                .iter()
                .find(|(k, _)| *k == m)
                .and_then(|(_, v)| v.value())
        };
        let name = if cfg.repeat > 1 {
            format!("{} #{}", self.label, r.rep + 1)
        } else {
            self.label.clone()
        };
        let said = match (&o.error, o.interrupted) {
            (Some(e), _) => format!("FAILED: {e}"),
            (None, true) => "interrupted".into(),
            _ => String::new(),
        };
        // The step's figures are in the closing tables; -v repeats the main
        // ones here as each step ends (a terminal shows each step while it
        // runs, on stderr).
        if cfg.verbose {
            writeln!(
                out,
                "  {:<14} {:>10} ops {:>10.0} ops/s  wKB/o {:>8}  cpu/o {:>7}  db {:>7.3} GB  {said}",
                name,
                o.ops,
                f(Metric::OpsPerSec).unwrap_or(0.0),
                f(Metric::WkbPerOp).map_or("-".into(), |v| format!("{v:.3}")),
                f(Metric::CpuUsPerOp).map_or("-".into(), |v| format!("{v:.0}")),
                f(Metric::DbBytes).unwrap_or(0.0) / 1e9,
            )?;
        } else if !said.is_empty() {
            writeln!(
                out,
                "  {:<14} {:>10} ops in {:>6.1} s  {said}",
                name, o.ops, o.secs
            )?;
        }
        if let Some(n) = &rec.settle_note {
            writeln!(out, "  settle: {n}")?;
        }
        // The workload's lines; the model's are in the report.
        for l in &rec.notes[..rec.printed] {
            writeln!(out, "  {}", l.text())?;
        }
        // The model's explanation only with -v: the closing report lists
        // the steps where the model and the measurement differ by over 2×.
        if cfg.verbose {
            if let Some(l) = rec.notes[rec.printed..]
                .iter()
                .find(|l| matches!(l, Note::Explain(_)))
            {
                writeln!(out, "  {}", l.stored())?;
            }
        }
        Ok(())
    }
}
