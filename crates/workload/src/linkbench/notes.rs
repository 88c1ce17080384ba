//! What the request step reports beyond the driver's figures: rows per
//! GET_LINKS_LIST (whole step and per interval), MULTIGET hits, the
//! consistency check, per operation kind the retries, rollbacks, fallbacks
//! and statements, and on a server the client's cost per request against
//! its floor.

use anyhow::Result;

use super::store::Check;
use super::{LinkOp, Linkbench, concurrency, store};
use crate::StepNotes;
use crate::engine::EngineRef;
use crate::engine::sql::{Dialect, SqlConn};

/// Counters at the request step's start, for the client's cost per
/// request: taken over the whole step, warm-up included, like the
/// operation counts they are divided by.
#[derive(Clone, Copy, Debug)]
pub(super) struct Window {
    pub(super) client: crate::probe::ProcCounters,
    pub(super) server: Option<[u64; 3]>,
}

/// One operation kind's costs summed over a step.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OpTotals {
    ops: u64,
    retried_ops: u64,
    retries: u64,
    rollbacks: u64,
    fallbacks: u64,
    statements: u64,
}

impl OpTotals {
    pub(super) fn record(&mut self, c: &store::OpCost) {
        self.ops += 1;
        self.retried_ops += u64::from(c.retries > 0);
        self.retries += c.retries;
        self.rollbacks += c.rollbacks;
        self.fallbacks += c.fallbacks;
        self.statements += c.statements;
    }
    pub(super) fn add(&mut self, o: &OpTotals) {
        self.ops += o.ops;
        self.retried_ops += o.retried_ops;
        self.retries += o.retries;
        self.rollbacks += o.rollbacks;
        self.fallbacks += o.fallbacks;
        self.statements += o.statements;
    }
}

/// Costs per operation kind, in [`LinkOp`] order.
pub(crate) type Costs = [OpTotals; LinkOp::ALL.len()];

/// Rows returned by GET_LINKS_LIST in one interval, history queries
/// included (the reference's RANGE_SIZE): the exact mean, and a histogram
/// (2 significant digits: exact below 256, within 1% above) for
/// percentiles, a few KB whatever the number of calls; and the history
/// queries' own calls and rows.
#[derive(Clone, Debug)]
pub(super) struct RowCounts {
    hist: hdrhistogram::Histogram<u64>,
    sum: u64,
    history_calls: u64,
    history_rows: u64,
    /// The most rows one call returned (exact; the histogram's own max is
    /// its bucket's highest value, 10,047 for 10,000).
    max: u64,
}

impl RowCounts {
    /// No calls yet.
    pub(super) fn new() -> RowCounts {
        RowCounts {
            // `new` fails only for more than 5 significant digits.
            hist: hdrhistogram::Histogram::new(2).expect("2 significant digits is valid"),
            sum: 0,
            history_calls: 0,
            history_rows: 0,
            max: 0,
        }
    }

    /// One call that returned `rows` (a history query's when `history`).
    pub(super) fn record(&mut self, rows: u64, history: bool) {
        if history {
            self.history_calls += 1;
            self.history_rows += rows;
        }
        self.max = self.max.max(rows);
        // An auto-resizing histogram grows to any value (saturating
        // would clamp at its current top).
        if self.hist.record(rows).is_err() {
            self.hist.saturating_record(rows);
        }
        self.sum += rows;
    }

    /// Adds another thread's counts.
    pub(super) fn add(&mut self, o: &RowCounts) {
        // An auto-resizing histogram takes any other's values.
        let _ = self.hist.add(&o.hist);
        self.sum += o.sum;
        self.history_calls += o.history_calls;
        self.history_rows += o.history_rows;
        self.max = self.max.max(o.max);
    }

    /// History queries: their share of the calls, and the mean rows of
    /// the other calls (0 when there were none).
    fn history(&self) -> (f64, f64) {
        let n = self.hist.len();
        if n == 0 {
            return (0.0, 0.0);
        }
        let direct = n - self.history_calls;
        let direct_mean = if direct == 0 {
            0.0
        } else {
            (self.sum - self.history_rows) as f64 / direct as f64
        };
        (self.history_calls as f64 / n as f64, direct_mean)
    }

    /// Mean, p50, p99 and calls.
    fn summary(&self) -> (f64, f64, f64, u64) {
        let n = self.hist.len();
        if n == 0 {
            return (0.0, 0.0, 0.0, 0);
        }
        let q = |p| self.hist.value_at_quantile(p) as f64;
        (self.sum as f64 / n as f64, q(0.5), q(0.99), n)
    }
}

impl Linkbench {
    /// The request step's notes: rows per GET_LINKS_LIST (whole step and
    /// per interval), MULTIGET hits, the consistency check, and per
    /// operation kind the retries, rollbacks, fallbacks and statements.
    // Long: the request step's figures and lines: the client's cost, the
    // consistency check, GET_LINKS_LIST rows (step and per interval), MULTIGET
    // hits, then per operation kind the retries, rollbacks and statements.
    pub(super) fn request_notes(&self, engine: EngineRef<'_>, notes: &mut StepNotes) -> Result<()> {
        let per_interval =
            std::mem::take(&mut *self.rows.lock().unwrap_or_else(|p| p.into_inner()));
        let mut all = RowCounts::new();
        for r in &per_interval {
            all.add(r);
        }
        let (mean, p50, p99, _) = all.summary();
        let (history_share, direct_mean) = all.history();
        // Each step's own: a sweep runs several request steps.
        let (found, missing) =
            std::mem::take(&mut *self.multiget.lock().unwrap_or_else(|p| p.into_inner()));
        let costs = std::mem::take(&mut *self.costs.lock().unwrap_or_else(|p| p.into_inner()));
        let requests: u64 = costs.iter().map(|c| c.ops).sum();
        let statements: u64 = costs.iter().map(|c| c.statements).sum();
        // Before the check's own queries.
        self.client_cost(engine, requests, statements, notes)?;
        let (check, on_nodes) = if self.check {
            let (c, on) = self.check_everywhere(engine)?;
            (Some(c), on)
        } else {
            (None, Vec::new())
        };
        if let Some(check) = &check {
            notes.figures.extend([
                ("consistency_pairs".into(), check.pairs as f64),
                ("consistency_mismatches".into(), check.mismatches as f64),
            ]);
        }
        notes.figures.extend([
            ("getlinkslist_rows_mean".into(), mean),
            ("getlinkslist_rows_p50".into(), p50),
            ("getlinkslist_rows_p99".into(), p99),
            ("getlinkslist_history_share".into(), history_share),
            ("getlinkslist_rows_mean_nonhistory".into(), direct_mean),
            ("multiget_found".into(), found as f64),
            ("multiget_not_found".into(), missing as f64),
        ]);
        let mut by_interval = Vec::new();
        for (i, r) in per_interval.iter().enumerate() {
            let (m, p5, p9, n) = r.summary();
            if n == 0 {
                continue;
            }
            notes
                .figures
                .push((format!("getlinkslist_rows_mean.interval.{i}"), m));
            notes
                .figures
                .push((format!("getlinkslist_rows_p50.interval.{i}"), p5));
            notes
                .figures
                .push((format!("getlinkslist_rows_p99.interval.{i}"), p9));
            // Where the range limit is reached (the reference prints max).
            let max = r.max;
            notes
                .figures
                .push((format!("getlinkslist_rows_max.interval.{i}"), max as f64));
            by_interval.push(format!("{m:.1}/{p5}/{p9}/{max}"));
        }
        let mut total = OpTotals::default();
        let (mut said, mut stmts) = (Vec::new(), Vec::new());
        for (op, c) in LinkOp::ALL.iter().zip(&costs) {
            total.add(c);
            let link_write = matches!(
                op,
                LinkOp::AddLink | LinkOp::DeleteLink | LinkOp::UpdateLink
            );
            // The link writes always (a 0 is a finding too); others when retried.
            if link_write || c.retries > 0 {
                notes
                    .figures
                    .push((format!("retried_ops.{op}"), c.retried_ops as f64));
                notes
                    .figures
                    .push((format!("retries.{op}"), c.retries as f64));
                said.push(format!("{op} {} in {} ops", c.retries, c.ops));
            }
            if c.ops == 0 {
                continue;
            }
            if link_write || c.rollbacks > 0 || c.fallbacks > 0 {
                let (r, f) = (c.rollbacks as f64, c.fallbacks as f64);
                notes.figures.push((format!("rollbacks.{op}"), r));
                notes.figures.push((format!("fallbacks.{op}"), f));
            }
            if c.statements > 0 {
                let per = c.statements as f64 / c.ops as f64;
                notes.figures.push((format!("statements_per_op.{op}"), per));
                let extra = match (c.rollbacks, c.fallbacks) {
                    (0, 0) => String::new(),
                    (r, f) => format!(" ({r} rollbacks, {f} fallbacks)"),
                };
                stmts.push(format!("{op} {per:.2}{extra}"));
            }
        }
        notes.lines.insert(0, format!(
            "GET_LINKS_LIST rows (history queries included, as the reference counts them): mean {mean:.2}, p50 {p50}, p99 {p99}; history queries {:.2}% of calls, the other calls' mean {direct_mean:.2}; MULTIGET found {found}, not found {missing}",
            history_share * 100.0
        ));
        if by_interval.len() > 1 {
            notes.lines.push(format!(
                "GET_LINKS_LIST rows per interval (mean/p50/p99/max): {}",
                by_interval.join(", ")
            ));
        }
        if total.statements > 0 && total.ops > 0 {
            let per = total.statements as f64 / total.ops as f64;
            notes.figures.push(("statements_per_request".into(), per));
            notes.lines.push(format!(
                "statements per request: {per:.3} ({} variant; COMMIT and ROLLBACK included): {}",
                self.variant,
                stmts.join(", ")
            ));
        }
        notes.lines.push(match &check {
            Some(check) if !on_nodes.is_empty() => format!(
                "consistency check on every node: {} mismatches in all ({}) (count == visible links)",
                check.mismatches,
                on_nodes.join(", ")
            ),
            Some(check) => format!(
                "consistency check: {} mismatches in {} (id1, link_type) pairs (count == visible links)",
                check.mismatches, check.pairs
            ),
            None => "consistency check: not run (-p check=false)".into(),
        });
        notes.lines.push(format!(
            "concurrency: {}; retries after conflicts: {}",
            concurrency(engine),
            said.join(", ")
        ));
        Ok(())
    }
}

impl Linkbench {
    /// The consistency check on the engine, or on each node of a cluster
    /// (each once it has applied what the others committed): the
    /// mismatches summed, the first node's pairs, and what each node gave.
    fn check_everywhere(&self, engine: EngineRef<'_>) -> Result<(Check, Vec<String>)> {
        let nodes = match engine {
            EngineRef::Sql(e) => e.nodes()?,
            EngineRef::Kv(_) => Vec::new(),
        };
        if nodes.is_empty() {
            return Ok((self.store(engine)?.check()?, Vec::new()));
        }
        let mut all = Check::default();
        let mut said = Vec::new();
        for (name, node) in nodes {
            let c = self.store(EngineRef::Sql(node))?.check()?;
            if said.is_empty() {
                all.pairs = c.pairs;
            }
            all.mismatches += c.mismatches;
            said.push(format!("{name}: {} in {} pairs", c.mismatches, c.pairs));
        }
        Ok((all, said))
    }

    /// The client's cost per request on a server, against its floor: the
    /// statements per request times one loopback round trip.
    // Long: the client's cost per request against its floor, each term
    // (statements, round trips, the server's own count) computed and said
    // beside the others.
    fn client_cost(
        &self,
        engine: EngineRef<'_>,
        requests: u64,
        statements: u64,
        notes: &mut StepNotes,
    ) -> Result<()> {
        let EngineRef::Sql(e) = engine else {
            return Ok(());
        };
        let Some(w) = self.window.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Ok(());
        };
        let server = server_traffic(&mut *e.connect()?, e.dialect())?;
        let Some(now) = crate::probe::process::read(std::process::id()) else {
            return Ok(());
        };
        if requests == 0 {
            return Ok(());
        }
        let n = requests as f64;
        let per = |a: u64, b: u64| b.saturating_sub(a) as f64 / n;
        let (cpu, user, sys) = (
            per(w.client.cpu_us, now.cpu_us),
            per(w.client.user_us, now.user_us),
            per(w.client.sys_us, now.sys_us),
        );
        let cs = per(w.client.ctx_switches, now.ctx_switches);
        notes.figures.extend([
            ("client_cpu_us_per_request".to_string(), cpu),
            ("client_user_us_per_request".to_string(), user),
            ("client_sys_us_per_request".to_string(), sys),
            ("client_cs_per_request".to_string(), cs),
        ]);
        let syscalls = match (w.client.syscalls, now.syscalls) {
            (Some(a), Some(b)) => {
                let v = per(a, b);
                notes
                    .figures
                    .push(("client_syscalls_per_request".into(), v));
                format!("{v:.2} system calls")
            }
            _ => format!(
                "system calls not counted ({})",
                crate::probe::syscalls::not_counted().unwrap_or_default()
            ),
        };
        let said_server = match (w.server, server) {
            (Some(a), Some(b)) => {
                let (q, rx, tx) = (per(a[0], b[0]), per(a[1], b[1]), per(a[2], b[2]));
                notes.figures.extend([
                    ("server_statements_per_request".to_string(), q),
                    ("bytes_sent_per_request".to_string(), rx),
                    ("bytes_received_per_request".to_string(), tx),
                ]);
                format!(
                    "; the server counted {q:.3} statements (Questions), {rx:.0} bytes from clients and {tx:.0} to them per request"
                )
            }
            _ => format!("; {} keeps no statement or byte counters", e.kind()),
        };
        notes.lines.push(format!(
            "client per request: {cpu:.1} µs CPU (user {user:.1}, system {sys:.1}), {syscalls}, {cs:.2} context switches{said_server}"
        ));
        match crate::probe::loopback::floor() {
            Ok(f) => {
                let rts = statements as f64 / n;
                let rt = f.same_cpu;
                let floor = rts * rt.cpu_us();
                notes.figures.extend([
                    ("loopback_round_trip_cpu_us".to_string(), rt.cpu_us()),
                    ("client_floor_us_per_request".to_string(), floor),
                ]);
                let across = match f.other_cpu {
                    Some(o) => {
                        notes.figures.extend([
                            (
                                "loopback_round_trip_cpu_us_other_cpu".to_string(),
                                o.cpu_us(),
                            ),
                            (
                                "client_floor_us_per_request_other_cpu".to_string(),
                                rts * o.cpu_us(),
                            ),
                        ]);
                        format!(
                            "; with the server's end on another CPU a round trip costs {:.1} µs (user {:.1}, system {:.1}): {:.1} µs per request",
                            o.cpu_us(),
                            o.user_us,
                            o.sys_us,
                            rts * o.cpu_us()
                        )
                    }
                    None => "; one CPU only: not measured with the ends on two".into(),
                };
                notes.lines.push(format!(
                    "client floor: {rts:.3} round trips per request x {:.1} µs client CPU per loopback round trip \
                     with both ends on one CPU ({} B request, {} B reply; user {:.1}, system {:.1}) = {floor:.1} µs; \
                     the client runs at {:.2}x this floor{across}",
                    rt.cpu_us(),
                    crate::probe::loopback::REQUEST,
                    crate::probe::loopback::REPLY,
                    rt.user_us,
                    rt.sys_us,
                    if floor > 0.0 { cpu / floor } else { 0.0 }
                ));
            }
            Err(why) => notes
                .lines
                .push(format!("client floor not measured: {why}")),
        }
        Ok(())
    }
}

/// The server's own counters of what clients sent it: statements
/// (MariaDB's `Questions`), bytes received and bytes sent. `None` where
/// the server keeps no such counters (PostgreSQL).
pub fn server_traffic(c: &mut dyn SqlConn, d: Dialect) -> Result<Option<[u64; 3]>> {
    if d != Dialect::MySql {
        return Ok(None);
    }
    let rows = c.query(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Bytes_received', 'Bytes_sent')",
        &[],
    )?;
    let mut v = [0u64; 3];
    for r in rows {
        let i = match r[0].text().as_str() {
            "Questions" => 0,
            "Bytes_received" => 1,
            "Bytes_sent" => 2,
            _ => continue,
        };
        v[i] = r[1].int().unwrap_or(0) as u64;
    }
    Ok(Some(v))
}

#[cfg(test)]
mod tests {
    use super::RowCounts;

    #[test]
    fn row_counts_give_exact_small_figures_and_merge() {
        let (mut a, mut b) = (RowCounts::new(), RowCounts::new());
        for rows in 0..=100 {
            if rows % 2 == 0 { &mut a } else { &mut b }.record(rows, false);
        }
        a.add(&b);
        // 0..=100: mean 50, the 51st value 50, the 100th of 101 values 99.
        assert_eq!(a.summary(), (50.0, 50.0, 99.0, 101));
        assert_eq!(a.history(), (0.0, 50.0));
        // Two history queries of 10,000 rows join the mean (the
        // reference's RANGE_SIZE) and leave the other calls' mean alone:
        // (5050 + 20000) / 103 = 243.2…, 2 of 103 calls.
        b = RowCounts::new();
        b.record(10_000, true);
        b.record(10_000, true);
        a.add(&b);
        let (mean, _, _, n) = a.summary();
        assert_eq!(n, 103);
        assert!((mean - 25_050.0 / 103.0).abs() < 1e-9, "{mean}");
        assert_eq!(a.history(), (2.0 / 103.0, 50.0));
        assert_eq!(a.max, 10_000);
        let mut big = RowCounts::new();
        big.record(1_000_000, false);
        let (mean, p50, _, n) = big.summary();
        assert_eq!((mean, n), (1e6, 1));
        assert!((p50 - 1e6).abs() / 1e6 < 1e-2, "{p50}");
    }
}
