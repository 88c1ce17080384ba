//! The crash check's transactions on a server: one SQL transaction per
//! transaction over three tables. Each round's value and count rows are
//! inserted at zero first, so a transaction only updates them.

use anyhow::{Result, bail};

use super::ledger::{Found, IDS, SLOTS};
use super::{Writer, pad};
use crate::engine::sql::{Cell, Val};
use crate::engine::{Dialect, Durability, SqlConn, SqlEngine};

/// The tables' DDL for `e`.
pub fn schema(e: &dyn SqlEngine) -> Vec<String> {
    let bytes = match e.dialect() {
        Dialect::MySql => "VARBINARY(128)",
        Dialect::Postgres => "BYTEA",
    };
    let o = e.table_options();
    vec![
        format!(
            "CREATE TABLE cc_kv (r INT NOT NULL, t INT NOT NULL, slot INT NOT NULL, v BIGINT NOT NULL, pad {bytes} NOT NULL, PRIMARY KEY (r, t, slot)) {o}"
        ),
        format!(
            "CREATE TABLE cc_link (r INT NOT NULL, t INT NOT NULL, id1 INT NOT NULL, seq BIGINT NOT NULL, pad {bytes} NOT NULL, PRIMARY KEY (r, t, id1, seq)) {o}"
        ),
        format!(
            "CREATE TABLE cc_count (r INT NOT NULL, t INT NOT NULL, id1 INT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (r, t, id1)) {o}"
        ),
    ]
}

/// Inserts `round`'s rows at zero for `threads` writers, durably.
pub fn prepare(e: &dyn SqlEngine, round: u32, threads: usize) -> Result<()> {
    let mut c = e.connect()?;
    c.set_durability(Durability::Sync)?;
    let p = |n| e.dialect().ph(n);
    let kv = format!(
        "INSERT INTO cc_kv (r, t, slot, v, pad) VALUES ({}, {}, {}, 0, {})",
        p(1),
        p(2),
        p(3),
        p(4)
    );
    let count = format!(
        "INSERT INTO cc_count (r, t, id1, n) VALUES ({}, {}, {}, 0)",
        p(1),
        p(2),
        p(3)
    );
    c.begin()?;
    for t in 0..threads {
        let (r, ti) = (Val::Int(round as i64), Val::Int(t as i64));
        for slot in 0..SLOTS {
            c.execute(&kv, &[r, ti, Val::Int(slot as i64), Val::Bytes(&[])])?;
        }
        for id1 in 0..IDS {
            c.execute(&count, &[r, ti, Val::Int(id1 as i64)])?;
        }
    }
    c.commit()
}

/// One writer's connection and statements.
pub struct SqlWriter {
    conn: Box<dyn SqlConn>,
    round: u32,
    t: usize,
    set: String,
    link: String,
    count: String,
}

impl SqlWriter {
    /// Writer `t` of `round` on its own connection to `e`.
    pub fn new(e: &dyn SqlEngine, round: u32, t: usize, d: Durability) -> Result<SqlWriter> {
        let mut conn = e.connect()?;
        conn.set_durability(d)?;
        let p = |n| e.dialect().ph(n);
        Ok(SqlWriter {
            conn,
            round,
            t,
            set: format!(
                "UPDATE cc_kv SET v = {}, pad = {} WHERE r = {} AND t = {} AND slot = {}",
                p(1),
                p(2),
                p(3),
                p(4),
                p(5)
            ),
            link: format!(
                "INSERT INTO cc_link (r, t, id1, seq, pad) VALUES ({}, {}, {}, {}, {})",
                p(1),
                p(2),
                p(3),
                p(4),
                p(5)
            ),
            count: format!(
                "UPDATE cc_count SET n = n + 1 WHERE r = {} AND t = {} AND id1 = {}",
                p(1),
                p(2),
                p(3)
            ),
        })
    }
}

impl Writer for SqlWriter {
    fn txn(&mut self, n: u64) -> Result<()> {
        let (r, t) = (Val::Int(self.round as i64), Val::Int(self.t as i64));
        let bytes = pad(self.round, self.t, n);
        let (seq, id1) = (Val::Int(n as i64), Val::Int((n % IDS) as i64));
        let c = &mut self.conn;
        c.begin()?;
        let changed = c.execute(
            &self.set,
            &[seq, Val::Bytes(&bytes), r, t, Val::Int((n % SLOTS) as i64)],
        )? + c.execute(&self.link, &[r, t, id1, seq, Val::Bytes(&bytes)])?
            + c.execute(&self.count, &[r, t, id1])?;
        if changed != 3 {
            bail!("transaction {n} changed {changed} rows, not 3");
        }
        c.commit()
    }
}

fn int(c: &Cell) -> Result<u64> {
    c.int()
        .and_then(|i| u64::try_from(i).ok())
        .ok_or_else(|| anyhow::anyhow!("not a count: {c:?}"))
}

/// Writer `t`'s rows of `round`, as found (rows still at zero are absent).
pub fn read(e: &dyn SqlEngine, round: u32, t: usize) -> Result<Found> {
    let mut c = e.connect()?;
    let p = |n| e.dialect().ph(n);
    let at = format!("WHERE r = {} AND t = {}", p(1), p(2));
    let args = [Val::Int(round as i64), Val::Int(t as i64)];
    let mut f = Found::default();
    for row in c.query(&format!("SELECT id1, seq FROM cc_link {at}"), &args)? {
        f.links.push((int(&row[0])?, int(&row[1])?));
    }
    for row in c.query(&format!("SELECT id1, n FROM cc_count {at}"), &args)? {
        let n = int(&row[1])?;
        if n > 0 {
            f.counts.insert(int(&row[0])?, n);
        }
    }
    for row in c.query(&format!("SELECT slot, v, pad FROM cc_kv {at}"), &args)? {
        let v = int(&row[1])?;
        if v > 0 {
            let ok = row[2].bytes() == Some(&pad(round, t, v)[..]);
            f.values.insert(int(&row[0])?, (v, ok));
        }
    }
    Ok(f)
}

/// Links of every round and writer.
pub fn total_links(e: &dyn SqlEngine) -> Result<u64> {
    let rows = e.connect()?.query("SELECT COUNT(*) FROM cc_link", &[])?;
    int(rows
        .first()
        .and_then(|r| r.first())
        .ok_or_else(|| anyhow::anyhow!("COUNT(*) returned no row"))?)
}
