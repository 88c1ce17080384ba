//! The two commands that make and read results: `ampbench run` (its
//! corners one after another, the merged view, the short report, the
//! exit code) and `ampbench report`.

use std::io::Write;

use anyhow::Result;

use super::run::{self, RunArgs};
use super::{ReportArgs, redact_args};
use crate::bound::Bound;
use crate::report::Format;
use crate::results::{Results, read};
use crate::runner;

/// `ampbench run`: every corner's run, then the report of them all
/// (merged by corner); 0 when every run is done, 1 otherwise.
// Long: `ampbench run`'s orchestration: corners in turn, the merged view, the
// short report, the results line and the exit code.
pub(super) fn run(a: RunArgs, out: &mut dyn Write) -> Result<i32> {
    // Recorded and reported: a target's password never is.
    let command = redact_args(std::env::args());
    let mut cfgs = a.into_configs()?;
    // What the engine host parses again (see runner::host).
    let after_run: Vec<String> = std::env::args().skip(2).collect();
    for (i, c) in cfgs.iter_mut().enumerate() {
        c.origin = Some((after_run.clone(), i));
    }
    crate::signals::catch_interrupts(Some(crate::runner::abort));
    // `--allocator`: the run happens in a child with it preloaded.
    if let Some(a) = cfgs.first().map(|c| c.allocator) {
        if let Some(code) = crate::setup::allocator::run_under(a)? {
            return Ok(code);
        }
    }
    crate::setup::cgroup::harness_memory();
    let mut views = Vec::new();
    for (i, cfg) in cfgs.iter().enumerate() {
        if cfgs.len() > 1 {
            if i > 0 {
                writeln!(out)?;
            }
            writeln!(
                out,
                "== {} of {}: {} ==",
                i + 1,
                cfgs.len(),
                match cfg.bound {
                    Bound::Cache => "cached (no memory limit)",
                    Bound::Io => "IO-bound (memory limit)",
                }
            )?;
        }
        let first = views.first().map(|v: &crate::results::RunView| v.id);
        let id = runner::run(cfg, &command, first, out)?;
        let mut results = Results::open_existing(&cfg.results)?;
        views.push(crate::results::load(&mut results, read::RunSel::Id(id))?);
        if crate::signals::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
    }
    let run_ids: Vec<i64> = views.iter().map(|v| v.id).collect();
    let ids: Vec<String> = run_ids.iter().map(i64::to_string).collect();
    let done = views.iter().all(|v| v.status == crate::names::Status::Done);
    // Nothing ran (every engine failed to open, its line printed
    // above): no tables of empty cells, only where the run is.
    let ran = views
        .iter()
        .flat_map(|v| &v.steps)
        .any(|s| s.step != "open" || s.status != crate::names::Status::Failed);
    let view = if views.len() == 1 {
        views.remove(0)
    } else {
        crate::report::compare::merge(views)
    };
    let base = crate::report::compare::base_engine(&view, None)?;
    let results = cfgs
        .first()
        .map(|c| c.results.clone())
        .unwrap_or_else(|| crate::results::Location::File("ampbench.db".into()));
    let mut results = Results::open_existing(&results)?;
    // What the report may read of the runs (histograms, samples).
    results.read_runs(&run_ids)?;
    // The short report unless -v; the full one is `ampbench report`.
    let verbose = cfgs.first().is_some_and(|c| c.verbose);
    let format = if verbose {
        Format::TEXT
    } else {
        Format::SUMMARY
    };
    if ran {
        writeln!(out)?;
        write!(
            out,
            "{}",
            crate::report::render(&view, format, base.as_deref(), &results)?
        )?;
    }
    let results = cfgs.first().map(|c| c.results.to_string());
    let results = results.unwrap_or_default();
    let ids = ids.join(",");
    if ran {
        // The formats besides the two text reports a run prints.
        let formats: Vec<&str> = crate::report::FORMATS
            .iter()
            .filter(|f| ![Format::TEXT, Format::SUMMARY].contains(f))
            .map(|f| f.name())
            .collect();
        writeln!(
            out,
            "\nresults: {results} (run {ids}) · every figure per engine and step: ampbench report --results {results} --run {ids} [--format {}]",
            formats.join("|"),
        )?;
    } else {
        writeln!(out, "results: {results} (run {ids}): nothing ran")?;
    }
    Ok(if done { 0 } else { 1 })
}

/// `ampbench report`: the runs asked for (merged when several), in the
/// format asked for.
pub(super) fn report(a: ReportArgs, out: &mut dyn Write) -> Result<i32> {
    let sels = a
        .run
        .split(',')
        .map(|r| read::RunSel::parse(r.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut results =
        Results::open_existing(&run::results_at(&a.results, crate::plan::STORE_TIMEOUT)?)?;
    let mut views = Vec::new();
    for sel in sels {
        // `latest` is the last `ampbench run`: all its corners.
        if sel == read::RunSel::Latest {
            for id in read::latest_ids(&mut results)? {
                views.push(crate::results::load(&mut results, read::RunSel::Id(id))?);
            }
        } else {
            views.push(crate::results::load(&mut results, sel)?);
        }
    }
    let mut view = if views.len() == 1 {
        views.remove(0)
    } else {
        crate::report::compare::merge(views)
    };
    if let Some(p) = &a.post {
        let plan = crate::plan::Settings::load(p)?;
        let post = plan.post.ok_or_else(|| {
            crate::UsageError(format!(
                "--post {}: the plan has no [post] table",
                p.display()
            ))
        })?;
        post.check()
            .map_err(|e| crate::UsageError(format!("--post {}: {e}", p.display())))?;
        view.recorded.post = Some(post);
    }
    let base = crate::report::compare::base_engine(&view, a.base.as_deref())?;
    write!(
        out,
        "{}",
        crate::report::render(&view, a.format, base.as_deref(), &results)?
    )?;
    Ok(0)
}
