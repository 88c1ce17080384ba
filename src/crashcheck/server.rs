//! A server engine's rounds: the writers are threads here with a
//! connection each; the server's whole process group is killed with
//! SIGKILL, then started again on the same data directory (its recovery).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::ledger::{Event, Ledger, verify};
use super::{Check, Round, sql, write_loop};
use crate::engine::{Durability, SqlEngine};

/// Creates the check's tables.
pub fn setup(e: &dyn SqlEngine) -> Result<()> {
    let mut c = e.connect()?;
    for ddl in sql::schema(e) {
        c.batch(&ddl)
            .with_context(|| format!("creating the tables: {ddl}"))?;
    }
    Ok(())
}

/// One round: the writers, the server killed `delay` after their first
/// commit, the restart and the check.
// Long: one crash round on a server in order (writers, the kill, restart, the
// check); its steps share the ledger, the stop flag, the channel and the power
// device.
pub fn round(
    check: &Check,
    e: &dyn SqlEngine,
    round: u32,
    delay: Duration,
    links_before: u64,
    mut power: Option<&mut super::power::PowerDevice>,
) -> Result<Round> {
    let server = e.server().ok_or_else(|| {
        anyhow::anyhow!(
            "crashcheck kills a single server ampbench started (not a target, not a cluster)"
        )
    })?;
    sql::prepare(e, round, check.threads).context("inserting the round's rows")?;
    let d = Durability::from_sync(!check.nosync);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<Event>();
    let mut ledger = Ledger::new(check.threads);
    let mut ran = Duration::ZERO;
    let mut crashed = Ok(());
    let mut dropped = Ok(0);
    std::thread::scope(|sc| {
        for t in 0..check.threads {
            let (stop, tx) = (&stop, tx.clone());
            sc.spawn(move || {
                let emit = |ev| {
                    let _ = tx.send(ev);
                };
                match sql::SqlWriter::new(e, round, t, d) {
                    Ok(mut w) => write_loop(t, &mut w, stop, &emit),
                    Err(err) => emit(Event::Error(t, format!("{err:#}"))),
                }
            });
        }
        drop(tx);
        let wait = |ledger: &mut Ledger, until: Instant, done: &dyn Fn(&Ledger) -> bool| {
            while !done(ledger)
                && Instant::now() < until
                && !crate::signals::INTERRUPTED.load(Ordering::SeqCst)
            {
                if let Ok(ev) = rx.recv_timeout(Duration::from_millis(20)) {
                    ledger.apply(ev);
                }
            }
        };
        wait(
            &mut ledger,
            Instant::now() + Duration::from_secs(30),
            &|l: &Ledger| l.acked() > 0 || !l.errors.is_empty(),
        );
        let first = Instant::now();
        if ledger.errors.is_empty() {
            wait(&mut ledger, first + delay, &|_| false);
        }
        ran = first.elapsed();
        crashed = server.crash();
        // The power goes with it: what the server acknowledged is all
        // the writers heard before the kill.
        if let Some(p) = power.as_deref_mut() {
            dropped = p.cut();
        }
        stop.store(true, Ordering::SeqCst);
    });
    // The writers stopped on the crash (their errors are expected).
    for ev in rx.try_iter() {
        if !matches!(ev, Event::Error(..)) {
            ledger.apply(ev);
        }
    }
    crashed.context("killing the server")?;
    let dropped = dropped?;
    if crate::signals::INTERRUPTED.load(Ordering::SeqCst) {
        bail!("interrupted");
    }
    if let Some(err) = ledger.errors.first() {
        bail!("before the kill: {err}");
    }
    if ledger.acked() == 0 {
        bail!(
            "no transaction committed before the kill: {}",
            ledger.errors.first().map(String::as_str).unwrap_or("")
        );
    }
    let t1 = Instant::now();
    if let Some(p) = power {
        p.restore()?;
    }
    server.restart().context("restarting after the kill")?;
    let recovery = t1.elapsed();
    let mut r = Round::new(round, recovery, ran, &ledger);
    r.dropped = dropped;
    for (t, heard) in ledger.threads.iter().enumerate() {
        r.add(verify(t, *heard, &sql::read(e, round, t)?));
    }
    r.check_total(links_before, sql::total_links(e)?);
    Ok(r)
}
