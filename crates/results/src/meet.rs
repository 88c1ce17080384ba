//! The clients of one run meet in the PostgreSQL results store
//! (`--clients N --client K --run-name NAME`): no coordinator of ours,
//! only the store's rows, notifications and locks.
//!
//! - **Registration.** The first client to arrive creates the run (keyed
//!   by its name, under a transaction-scoped advisory lock); the others
//!   join it. Each client holds a session advisory lock `(run, client)`
//!   while it lives, so the others can tell a client that died from one
//!   that is late.
//! - **One clock.** Each client measures its clock's offset from the
//!   store's (`clock_timestamp()`, the round trip with the least delay of
//!   several) and records it; step starts are recorded on the store's
//!   clock, so clients with skewed clocks still line up interval by
//!   interval.
//! - **Barriers.** A client arriving at a barrier inserts its row and
//!   notifies the run's channel (LISTEN/NOTIFY); it leaves when every
//!   client has arrived or died. Past the timeout the run fails with one
//!   line naming the clients that never came.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use postgres::fallible_iterator::FallibleIterator;
use serde::Serialize;

use super::Results;
use super::db::{Db, Val, vals};
use crate::share::Share;

/// The environment variable a Kubernetes Indexed Job sets to each pod's
/// index: the client number when `--client` is not given.
pub const JOB_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// A test hook: seconds added to this client's clock as the meeting reads
/// it, to show that a skewed client still lines up.
pub const CLOCK_OFFSET_ENV: &str = "AMPBENCH_TEST_CLOCK_OFFSET";

/// The keys of a run's recorded configuration every client must share:
/// what decides the steps, their barriers and the work's split.
const PLAN_KEYS: &[&str] = &[
    "workload",
    "engines",
    "steps",
    "params",
    "sets",
    "threads",
    "thread_levels",
    "warmup",
    "warmup_steady",
    "duration",
    "interval",
    "arrival",
    "seed",
    "repeat",
    "reuse",
    "target",
];

/// This process's place among the clients of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Clients {
    /// The run's clients (`--clients`).
    pub clients: usize,
    /// This one, 0-based (`--client`, or [`JOB_INDEX_ENV`]).
    pub client: usize,
    /// The run's name, the same for every client (`--run-name`).
    pub run_name: String,
    /// Seconds a client waits at a barrier for the others
    /// (`--barrier-timeout`).
    pub barrier_timeout: f64,
    /// Seconds a client may go unheard (no heartbeat) before the others
    /// give it up (`--client-timeout`).
    pub client_timeout: f64,
}

impl Clients {
    /// This client's share of the work.
    pub fn share(&self) -> Share {
        Share {
            client: self.client,
            clients: self.clients,
        }
    }

    /// Client 0 makes and removes what the clients share (the target's
    /// database) and ends the run.
    pub fn leader(&self) -> bool {
        self.client == 0
    }
}

/// This client's clock, as the meeting reads it: seconds since the epoch
/// (plus [`CLOCK_OFFSET_ENV`]'s offset, in tests).
pub fn local_now() -> f64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    t + std::env::var(CLOCK_OFFSET_ENV)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// A barrier's release: when the last client arrived (store clock) and
/// what each left there.
#[derive(Clone, Debug)]
pub struct Release {
    /// The store's clock when the last client arrived.
    pub at: f64,
    /// `(client, note)` of every client that arrived.
    pub notes: Vec<(usize, Option<String>)>,
    /// Clients found dead while waiting.
    pub dead: Vec<usize>,
}

/// A client's membership of a run.
pub struct Meeting {
    /// The run's id.
    pub run: i64,
    /// Who this is.
    pub me: Clients,
    /// The store's clock less this client's, seconds.
    pub skew: f64,
    /// Clients found dead so far.
    pub dead: Vec<usize>,
    /// This client's heartbeat, while it is a member.
    beat: Option<Heartbeat>,
}

/// A thread that writes this client's heartbeat (`run_clients.beat`, the
/// store's clock) on a connection of its own every [`BEAT`]: a client
/// whose process is stopped or cut off from the store stops beating, and
/// after `--client-timeout` the others give it up.
struct Heartbeat {
    stop: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How often a client beats.
const BEAT: Duration = Duration::from_secs(2);

/// Seconds without a beat after which a client whose liveness lock no
/// session holds is taken for dead (five beats).
const DIED_AFTER: f64 = 10.0;

impl Heartbeat {
    fn start(at: crate::address::Target, run: i64, client: usize) -> Heartbeat {
        let stop = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ampbench-beat".into())
            .spawn(move || {
                let mut conn: Option<postgres::Client> = None;
                loop {
                    if conn.as_ref().is_none_or(|c| c.is_closed()) {
                        conn = super::pg::connect(&at).ok();
                    }
                    if let Some(c) = conn.as_mut() {
                        // A failed beat is tried again on the next tick;
                        // the others notice only a long silence.
                        let _ = c.execute(
                            "UPDATE run_clients SET beat = extract(epoch FROM clock_timestamp())::float8 \
                             WHERE run_id = $1 AND client = $2",
                            &[&run, &(client as i64)],
                        );
                    }
                    let (lock, cv) = &*flag;
                    let Ok(g) = lock.lock() else { return };
                    let Ok((g, _)) = cv.wait_timeout_while(g, BEAT, |stopped| !*stopped) else {
                        return;
                    };
                    if *g {
                        return;
                    }
                }
            })
            .ok();
        Heartbeat { stop, thread }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        let (lock, cv) = &*self.stop;
        if let Ok(mut g) = lock.lock() {
            *g = true;
        }
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The advisory lock keys of a client's liveness: `(run, client)`.
fn live_key(run: i64, client: usize) -> (i32, i32) {
    ((run & 0x7fff_ffff) as i32, client as i32)
}

fn store(results: &mut Results) -> Result<&mut super::db::Pg> {
    match results.db() {
        Db::Postgres(p) => Ok(p),
        Db::Sqlite(_) => Err(crate::UsageError(
            "--clients: the clients of a run meet in a PostgreSQL results store: give --results postgres://…".into(),
        )
        .into()),
    }
}

/// The store's connection (made again if it had ended).
fn pg(results: &mut Results) -> Result<&mut postgres::Client> {
    store(results)?.live()
}

/// The store's clock less this client's: the sample with the shortest
/// round trip of `n`, its midpoint taken as the moment the store read
/// its clock.
fn measure_skew(c: &mut postgres::Client, n: usize) -> Result<f64> {
    let st = c.prepare("SELECT extract(epoch FROM clock_timestamp())::float8")?;
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..n {
        let t0 = local_now();
        let s: f64 = c.query_one(&st, &[])?.get(0);
        let t1 = local_now();
        let rtt = t1 - t0;
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, s - (t0 + t1) / 2.0));
        }
    }
    Ok(best.map_or(0.0, |b| b.1))
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

impl Meeting {
    /// Registers this client: creates the run named `me.run_name` (the
    /// first to arrive, with `record`) or joins it; takes the liveness
    /// lock and listens on the run's channel.
    // Long: a client's join: the clock's skew, then one transaction (the run
    // made, or found and checked against this client's plan, the client
    // registered under its liveness lock), then the channel listened to and
    // the heartbeat started.
    pub fn join(results: &mut Results, me: &Clients, record: &super::RunRecord) -> Result<Meeting> {
        let skew = measure_skew(pg(results)?, 7)?;
        results.set_client(me.client);
        let name = me.run_name.clone();
        let run = results.db().tx(|t| {
            t.query(
                "SELECT pg_advisory_xact_lock(hashtext(?1))::text",
                vals![name.as_str()],
            )?;
            let found = t.query(
                "SELECT id, clients, config, seed, status FROM runs WHERE name = ?1",
                vals![name.as_str()],
            )?;
            let run = match found.first() {
                Some(r) => {
                    let (id, n) = (r[0].int().unwrap_or(0), r[1].int().unwrap_or(0));
                    let theirs: serde_json::Value = r[2]
                        .text()
                        .and_then(|c| serde_json::from_str(c).ok())
                        .unwrap_or_default();
                    if n as usize != me.clients {
                        bail!(crate::UsageError(format!(
                            "--run-name {name}: that run has {n} clients; this client was given --clients {}",
                            me.clients
                        )));
                    }
                    if let Some(k) = PLAN_KEYS.iter().find(|k| theirs[**k] != record.config[**k]) {
                        bail!(crate::UsageError(format!(
                            "--run-name {name}: this client's plan differs from the run's in '{k}' ({} here, {} there): every client gets the same plan",
                            record.config[*k], theirs[*k]
                        )));
                    }
                    if r[4].text() != Some("running") {
                        bail!(crate::UsageError(format!(
                            "--run-name {name}: run {id} has ended ({}); give the new run another name",
                            r[4].text().unwrap_or("?")
                        )));
                    }
                    id
                }
                None => super::insert_run(t, record, Some((name.as_str(), me.clients)))?,
            };
            let had = t.query(
                "SELECT host FROM run_clients WHERE run_id = ?1 AND client = ?2",
                vals![run, me.client],
            )?;
            if let Some(h) = had.first() {
                bail!(crate::UsageError(format!(
                    "--client {}: client {} of run {name} has already joined (from host {})",
                    me.client,
                    me.client,
                    h[0].text().unwrap_or("?")
                )));
            }
            // The liveness lock before the row: a client registered is
            // never seen without it (a session lock outlives the
            // transaction).
            let (k1, k2) = live_key(run, me.client);
            t.query(
                "SELECT pg_advisory_lock(?1::bigint::int4, ?2::bigint::int4)::text",
                vals![i64::from(k1), i64::from(k2)],
            )?;
            t.exec(
                "INSERT INTO run_clients (run_id, client, host, joined, skew, status, beat) VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6)",
                vals![run, me.client, host_name(), super::now(), skew, local_now() + skew],
            )?;
            Ok(run)
        })?;
        // A new session (the store restarted) takes the liveness lock and
        // listens again.
        let (k1, k2) = live_key(run, me.client);
        let db = store(results)?;
        db.setup(&format!("LISTEN ampbench_run_{run}"))?;
        db.setup(&format!("SELECT pg_advisory_lock({k1}, {k2})"))?;
        let beat = match results.location() {
            super::Location::Postgres(t) => Some(Heartbeat::start(t.clone(), run, me.client)),
            super::Location::File(_) => None,
        };
        Ok(Meeting {
            run,
            me: me.clone(),
            skew,
            dead: Vec::new(),
            beat,
        })
    }

    /// Now on the store's clock.
    pub fn store_now(&self) -> f64 {
        local_now() + self.skew
    }

    /// Waits at barrier `name` until every client has arrived there (or
    /// died), leaving `note` for the others; past the timeout, an error
    /// naming the clients that never came.
    // Long: a barrier's wait: arrive (a row and a notification), then read the
    // arrivals, the dead and the deadline until all are in or the absent are
    // named.
    pub fn barrier(
        &mut self,
        results: &mut Results,
        name: &str,
        note: Option<&str>,
    ) -> Result<Release> {
        let (run, me) = (self.run, self.me.client);
        self.still_member(results)?;
        let at = self.store_now();
        results.db().tx(|t| {
            t.exec(
                "INSERT INTO barriers (run_id, name, client, at, note) VALUES (?1, ?2, ?3, ?4, ?5)",
                vals![run, name, me, at, note],
            )?;
            t.query(
                "SELECT pg_notify(?1, ?2)::text",
                vals![format!("ampbench_run_{run}"), name],
            )
        })?;
        let deadline = Instant::now() + Duration::from_secs_f64(self.me.barrier_timeout);
        loop {
            let rows = results.db().tx(|t| {
                t.query(
                    "SELECT client, at, note FROM barriers WHERE run_id = ?1 AND name = ?2",
                    vals![run, name],
                )
            })?;
            let arrived: Vec<usize> = rows
                .iter()
                .filter_map(|r| r[0].int())
                .map(|c| c as usize)
                .collect();
            let missing: Vec<usize> = (0..self.me.clients)
                .filter(|c| !arrived.contains(c))
                .collect();
            let (dead, absent) = self.find_dead(results, &missing)?;
            if missing.iter().all(|c| dead.contains(c)) {
                for d in &dead {
                    if !self.dead.contains(d) {
                        self.dead.push(*d);
                    }
                }
                return Ok(Release {
                    at: rows
                        .iter()
                        .filter_map(|r| r[1].real())
                        .fold(f64::MIN, f64::max),
                    notes: rows
                        .iter()
                        .map(|r| {
                            (
                                r[0].int().unwrap_or(0) as usize,
                                r[2].text().map(String::from),
                            )
                        })
                        .collect(),
                    dead,
                });
            }
            // The timeout is for clients that never came: one that has
            // joined and lives is waited for (a load on a slower host, the
            // index client 0 builds).
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() && !absent.is_empty() {
                let list = |v: &[usize]| {
                    v.iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                bail!(
                    "barrier '{name}' of run {} ({}): client(s) {} did not arrive within {:.0} s (arrived: {})",
                    self.run,
                    self.me.run_name,
                    list(&absent),
                    self.me.barrier_timeout,
                    list(&arrived)
                );
            }
            let left = if left.is_zero() {
                Duration::from_millis(500)
            } else {
                left
            };
            // A notification wakes this at once; the wait is bounded so
            // that a client dying (no notification) is noticed.
            let c = pg(results)?;
            let mut n = c.notifications();
            let _ = n.timeout_iter(left.min(Duration::from_millis(500))).next();
        }
    }

    /// Fails when the others have given this client up (it was stopped
    /// or cut off for longer than `--client-timeout`, or its session
    /// ended): it must not go on as if it were still part of the run.
    fn still_member(&mut self, results: &mut Results) -> Result<()> {
        let (run, me) = (self.run, self.me.client);
        let row = results.db().tx(|t| {
            t.query(
                "SELECT status, error FROM run_clients WHERE run_id = ?1 AND client = ?2",
                vals![run, me],
            )
        })?;
        match row.first().and_then(|r| r[0].text()) {
            Some("lost" | "died") => bail!(
                "client {me} of run {run} ({}) was given up by the others: {}",
                self.me.run_name,
                row[0][1].text().unwrap_or("?")
            ),
            _ => Ok(()),
        }
    }

    /// Whether barrier `name` may have let some client through: every
    /// client has arrived at it or has left the run (failed, died, given
    /// up), as a waiting client sees it when it leaves the barrier.
    pub fn released(&mut self, results: &mut Results, name: &str) -> Result<bool> {
        let run = self.run;
        let (arrived, gone) = results.db().tx(|t| {
            let arrived = t.query(
                "SELECT client FROM barriers WHERE run_id = ?1 AND name = ?2",
                vals![run, name],
            )?;
            let gone = t.query(
                "SELECT client FROM run_clients WHERE run_id = ?1 AND status IN ('failed', 'died', 'lost')",
                vals![run],
            )?;
            Ok((arrived, gone))
        })?;
        let has = |rows: &[Vec<Val>], c: usize| rows.iter().any(|r| r[0].int() == Some(c as i64));
        Ok((0..self.me.clients).all(|c| has(&arrived, c) || has(&gone, c)))
    }

    /// The clients of `which` that were given up for silence (`lost`)
    /// and whose store session still holds their liveness lock: they may
    /// still be using what the clients share (the target's database).
    pub fn still_using(&mut self, results: &mut Results, which: &[usize]) -> Result<Vec<usize>> {
        let run = self.run;
        let lost: Vec<usize> = results
            .db()
            .tx(|t| {
                t.query(
                    "SELECT client FROM run_clients WHERE run_id = ?1 AND status = 'lost'",
                    vals![run],
                )
            })?
            .iter()
            .filter_map(|r| r[0].int())
            .map(|c| c as usize)
            .filter(|c| which.contains(c))
            .collect();
        if lost.is_empty() {
            return Ok(lost);
        }
        let held = self.locks_held(results)?;
        Ok(lost
            .into_iter()
            .filter(|c| held.contains(&(*c as i64)))
            .collect())
    }

    /// The clients whose liveness lock some session holds.
    fn locks_held(&mut self, results: &mut Results) -> Result<Vec<i64>> {
        let (k1, _) = live_key(self.run, 0);
        let c = pg(results)?;
        Ok(c.query(
            "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 \
             AND classid = $1::bigint::oid AND granted \
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[&i64::from(k1)],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect())
    }

    /// Of the clients `missing` from a barrier: those gone — registered,
    /// and either failed (they left the run), without their liveness
    /// lock (their process or store session ended: marked `died`, their
    /// running steps failed) or silent for longer than
    /// `--client-timeout` (stopped or cut off: marked `lost`, their
    /// running steps failed) — and those absent (never registered).
    // Long: the missing clients judged (absent, left, died without its lock,
    // lost for silence) from one read of the clients and their locks; each
    // dead one marked and its running steps failed.
    fn find_dead(
        &mut self,
        results: &mut Results,
        missing: &[usize],
    ) -> Result<(Vec<usize>, Vec<usize>)> {
        if missing.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let run = self.run;
        let joined: Vec<(usize, String, Option<f64>)> = results
            .db()
            .tx(|t| {
                t.query(
                    "SELECT client, status, beat FROM run_clients WHERE run_id = ?1",
                    vals![run],
                )
            })?
            .iter()
            .filter_map(|r| Some((r[0].int()? as usize, r[1].text()?.to_string(), r[2].real())))
            .collect();
        let held = self.locks_held(results)?;
        let now = self.store_now();
        let status = |m: usize| {
            joined
                .iter()
                .find(|(c, _, _)| *c == m)
                .map(|(_, s, _)| s.as_str())
        };
        let silent = |m: usize| {
            joined
                .iter()
                .find(|(c, _, _)| *c == m)
                .and_then(|(_, _, b)| *b)
                .map_or(f64::INFINITY, |b| now - b)
        };
        let absent: Vec<usize> = missing
            .iter()
            .copied()
            .filter(|m| status(*m).is_none())
            .collect();
        let left: Vec<usize> = missing
            .iter()
            .copied()
            .filter(|m| matches!(status(*m), Some("failed" | "died" | "lost")))
            .collect();
        let running: Vec<usize> = missing
            .iter()
            .copied()
            .filter(|m| status(*m).is_some() && !left.contains(m))
            .collect();
        let mut dead = Vec::new();
        for d in running {
            // Died: no session holds its lock and it has stopped beating
            // (a store that restarted drops every lock, and the living
            // take theirs again at their next use of it while they beat).
            let why = if !held.contains(&(d as i64))
                && silent(d) > DIED_AFTER.min(self.me.client_timeout)
            {
                (
                    "died",
                    format!("client {d} died: its store session ended mid-run"),
                )
            } else if silent(d) > self.me.client_timeout {
                (
                    "lost",
                    format!(
                        "client {d} was given up: not heard from for {:.0} s (stopped, or cut off from the store; --client-timeout {:.0})",
                        silent(d),
                        self.me.client_timeout
                    ),
                )
            } else {
                continue;
            };
            if why.0 == "lost" {
                eprintln!(
                    "ampbench: run {} ({}): {}; the others go on without it",
                    run, self.me.run_name, why.1
                );
            }
            results.db().tx(|t| {
                t.exec(
                    "UPDATE run_clients SET status = ?1, error = ?2 WHERE run_id = ?3 AND client = ?4 AND status = 'running'",
                    vals![why.0, why.1.as_str(), run, d],
                )?;
                t.exec(
                    "UPDATE steps SET status = 'failed', error = ?1, ended = ?2 WHERE run_id = ?3 AND client = ?4 AND status = 'running'",
                    vals![why.1.as_str(), super::now(), run, d],
                )
            })?;
            dead.push(d);
        }
        Ok(([left, dead].concat(), absent))
    }

    /// Marks this client failed (`why`) without leaving: client 0 after a
    /// failure still closes (drops) the target's database once the others
    /// are done, so it keeps its lock and its barriers.
    pub fn fail(&mut self, results: &mut Results, why: &str) -> Result<()> {
        self.set_mine(results, "failed", Some(why))
    }

    /// Records this client's end with `status`, waits at the last
    /// barrier for the others, and ends the run: `done` when every client
    /// was, else `partial` (every client that gets there writes the same).
    pub fn finish(
        &mut self,
        results: &mut Results,
        status: crate::names::Status,
        error: Option<&str>,
    ) -> Result<()> {
        self.set_mine(results, status.name(), error)?;
        let ended = self.barrier(results, "end", None);
        self.end_run(results)?;
        self.unlock(results)?;
        ended.map(|_| ())
    }

    /// Leaves the run after a failure (`why`): the others go on without
    /// this client; the run ends `partial`.
    pub fn leave(&mut self, results: &mut Results, why: &str) -> Result<()> {
        self.set_mine(results, "failed", Some(why))?;
        self.unlock(results)?;
        // The last one out ends the run.
        let run = self.run;
        let running = results.db().tx(|t| {
            t.query(
                "SELECT count(*) FROM run_clients WHERE run_id = ?1 AND status = 'running'",
                vals![run],
            )
        })?;
        if running.first().and_then(|r| r[0].int()) == Some(0) {
            self.end_run(results)?;
        }
        Ok(())
    }

    fn set_mine(&mut self, results: &mut Results, status: &str, error: Option<&str>) -> Result<()> {
        let (run, me) = (self.run, self.me.client);
        results.db().tx(|t| {
            t.exec(
                // A client the others gave up stays so (it learns it late).
                "UPDATE run_clients SET status = ?1, error = ?2 WHERE run_id = ?3 AND client = ?4 AND status NOT IN ('lost', 'died')",
                vals![status, error, run, me],
            )
        })?;
        Ok(())
    }

    /// Ends the run from its clients' states: `done` when all are,
    /// `failed` when none is, else `partial`.
    fn end_run(&mut self, results: &mut Results) -> Result<()> {
        use crate::names::Status;
        let run = self.run;
        let states: Vec<Vec<Val>> = results.db().tx(|t| {
            t.query(
                "SELECT status FROM run_clients WHERE run_id = ?1",
                vals![run],
            )
        })?;
        let done = states
            .iter()
            .filter(|r| r[0].text() == Some("done"))
            .count();
        let status = if done == self.me.clients && states.len() == self.me.clients {
            Status::Done
        } else if done == 0 {
            Status::Failed
        } else {
            Status::Partial
        };
        results.end_run(run, status)
    }

    fn unlock(&mut self, results: &mut Results) -> Result<()> {
        // No more heartbeat, and a new session takes no lock.
        drop(self.beat.take());
        store(results)?.forget_setup();
        let (k1, k2) = live_key(self.run, self.me.client);
        let c = pg(results)?;
        c.execute("SELECT pg_advisory_unlock($1, $2)", &[&k1, &k2])
            .context("releasing the client's lock")?;
        Ok(())
    }
}
