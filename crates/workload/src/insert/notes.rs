//! What the insert benchmark says after each step: rows inserted and
//! deleted, the live row count, the query steps' writer against its
//! target, point-query hits, debt reduction's work, and the consistency
//! check (every index has exactly one entry per live row).

use std::sync::atomic::Ordering;

use anyhow::Result;

use super::row::INDEXES;
use super::{Insert, InsertStep};
use crate::StepNotes;
use crate::engine::{EngineRef, Structure};
use crate::record::workload_figure::{WRITER_BEHIND, WRITER_DPS, WRITER_IPS, WRITER_TARGET_IPS};

/// The share of its target below which the writer is flagged.
const BEHIND: f64 = 0.95;

// Long: the insert step's notes in order: the rows counted, the step's own
// line (debt, index build), the query steps' writer against its target, then
// the index check on each node.
pub(super) fn finish(wl: &Insert, s: InsertStep, engine: EngineRef<'_>) -> Result<StepNotes> {
    let c = &wl.counts;
    let mut n = StepNotes::default();
    let inserted = c.step_inserted.load(Ordering::SeqCst);
    let deleted = c.step_deleted.load(Ordering::SeqCst);
    let live = c.live.load(Ordering::SeqCst);
    if inserted > 0 || deleted > 0 {
        n.figures.push(("rows_inserted".into(), inserted as f64));
        n.figures.push(("rows_deleted".into(), deleted as f64));
    }
    n.figures.push(("rows_live".into(), live as f64));
    match s {
        InsertStep::Debt => {
            let said = wl.debt_said.lock().unwrap_or_else(|p| p.into_inner());
            for l in said.iter() {
                n.lines.push(format!("debt reduction: {l}"));
            }
        }
        InsertStep::CreateIndexes => n.lines.push(format!(
            "built {} secondary index(es) on {} table(s) of {live} rows",
            wl.indexes,
            wl.tables.len()
        )),
        _ => {}
    }
    if let Some((point, rate)) = s.query() {
        let (start, end) = *wl.window.lock().unwrap_or_else(|p| p.into_inner());
        let secs = end.duration_since(start).as_secs_f64();
        let clients = wl.clients as f64;
        let rows = c.writer_rows.load(Ordering::SeqCst) as f64;
        let dels = c.writer_deleted.load(Ordering::SeqCst) as f64;
        let ips = rows / secs / clients;
        let dps = dels / secs / clients;
        n.figures.push((WRITER_TARGET_IPS.into(), rate as f64));
        n.figures.push((WRITER_IPS.into(), ips));
        n.figures.push((WRITER_DPS.into(), dps));
        let share = ips / rate as f64;
        n.lines.push(format!(
            "writer: {ips:.1} inserts/s and {dps:.1} deletes/s per client of {rate} targeted ({:.1}%){}",
            100.0 * share,
            if share < BEHIND {
                " — FELL BEHIND: the engine could not keep the writer's rate"
            } else {
                ""
            }
        ));
        if share < BEHIND {
            n.figures.push((WRITER_BEHIND.into(), 1.0));
        }
        if point {
            let asked = c.asked.load(Ordering::SeqCst);
            let found = c.found.load(Ordering::SeqCst);
            if asked > 0 {
                n.figures.push((
                    "point_found_pct".into(),
                    100.0 * found as f64 / asked as f64,
                ));
            }
        }
    }
    if !wl.check {
        return Ok(n);
    }
    let stores_nothing = match engine {
        EngineRef::Kv(e) => e.kind().structure() == Structure::None,
        EngineRef::Sql(_) => false,
    };
    if stores_nothing {
        n.lines
            .push("check: not run: the null engine stores nothing".into());
        return Ok(n);
    }
    let indexes = if wl.indexed() {
        &INDEXES[..wl.indexes]
    } else {
        &INDEXES[..0]
    };
    // On every node of a cluster, each once it has applied what the
    // others committed; the figures are the first node's, the mismatches
    // every node's.
    let nodes = match engine {
        EngineRef::Sql(e) => e.nodes()?,
        EngineRef::Kv(_) => Vec::new(),
    };
    let on: Vec<(String, EngineRef<'_>)> = if nodes.is_empty() {
        vec![(String::new(), engine)]
    } else {
        nodes
            .into_iter()
            .map(|(name, e)| (name, EngineRef::Sql(e)))
            .collect()
    };
    let mut said = Vec::new();
    let mut all_mismatches = 0;
    let mut first: Option<(u64, u64)> = None;
    for (node, engine) in on {
        let (rows, entries, mismatches) = check_one(wl, engine, indexes, &node, &mut n)?;
        first.get_or_insert((rows, entries));
        all_mismatches += mismatches;
        if !node.is_empty() {
            said.push(format!("{node}: {mismatches}"));
        }
    }
    let (rows, entries) = first.unwrap_or_default();
    n.figures
        .push(("index_mismatches".into(), all_mismatches as f64));
    n.lines.push(format!(
        "check: {} table(s), {rows} rows, {entries} entries in {} secondary index(es): {all_mismatches} mismatches{}",
        wl.tables.len(),
        indexes.len(),
        if said.is_empty() {
            String::new()
        } else {
            format!(" on every node ({})", said.join(", "))
        }
    ));
    Ok(n)
}

/// The check on one engine or node (`node` names it in lines; empty for
/// a single engine): rows, index entries and mismatches over the tables.
fn check_one(
    wl: &Insert,
    engine: EngineRef<'_>,
    indexes: &[super::row::Index],
    node: &str,
    n: &mut StepNotes,
) -> Result<(u64, u64, u64)> {
    let mut store = wl.store(engine)?;
    let (mut rows, mut entries, mut mismatches) = (0u64, 0u64, 0u64);
    for (t, ids) in wl.tables.iter().enumerate() {
        let expected = ids
            .next
            .load(Ordering::SeqCst)
            .saturating_sub(ids.lo.load(Ordering::SeqCst));
        let got = store.check(t, indexes)?;
        rows += got.rows;
        entries += got.indexes.iter().map(|(_, e, _)| e).sum::<u64>();
        let m = got.mismatches(expected);
        if m > 0 {
            n.lines.push(format!(
                "check{}{node}: table pi{}: {} rows of {expected} expected; {}",
                if node.is_empty() { "" } else { " on " },
                t + 1 + wl.first_table,
                got.rows,
                got.indexes
                    .iter()
                    .map(|(ix, e, same)| format!(
                        "{ix} {e} entries{}",
                        if *same { "" } else { " (not one per row)" }
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        mismatches += m;
    }
    Ok((rows, entries, mismatches))
}
