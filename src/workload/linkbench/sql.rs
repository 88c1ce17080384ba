//! LinkBench on a SQL engine: the reference DDL and SQL (`LinkStoreMysql`),
//! each write operation one transaction with counttable kept in it, and a
//! PostgreSQL dialect for upserts. Deadlocks and lock-wait timeouts are
//! retried, as the reference does.
//!
//! Differences from the reference, each for a reason: payloads are
//! VARBINARY/MEDIUMBLOB (BYTEA) rather than latin1 text, so random bytes
//! need no escaping; node ids come from the workload's allocator (as on
//! the KV engines) rather than AUTO_INCREMENT; on PostgreSQL, ADD_LINK reads
//! the row `FOR UPDATE` first, because its upsert cannot tell a new row from
//! a changed one (MariaDB's affected rows can: 1 new, 2 changed, 0 same).

use anyhow::Result;

use super::store::{Added, Check, Count, Link, LinkStore, NODE_TYPE, Node};
use crate::engine::Durability;
use crate::engine::sql::{Cell, Dialect, SqlConn, Val};

/// The tables' DDL; `with_index` adds id1_type at creation (otherwise the
/// `index` step creates it).
pub fn schema(dialect: Dialect, options: &str, with_index: bool) -> Vec<String> {
    match dialect {
        Dialect::MySql => vec![
            format!(
                "CREATE TABLE linktable (id1 BIGINT UNSIGNED NOT NULL DEFAULT 0, id2 BIGINT UNSIGNED NOT NULL DEFAULT 0, \
                 link_type BIGINT UNSIGNED NOT NULL DEFAULT 0, visibility TINYINT NOT NULL DEFAULT 0, \
                 data VARBINARY(255) NOT NULL DEFAULT '', time BIGINT UNSIGNED NOT NULL DEFAULT 0, \
                 version INT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (link_type, id1, id2){}) {options}",
                if with_index {
                    ", KEY id1_type (id1, link_type, visibility, time, id2, version, data)"
                } else {
                    ""
                }
            ),
            format!(
                "CREATE TABLE counttable (id BIGINT UNSIGNED NOT NULL DEFAULT 0, link_type BIGINT UNSIGNED NOT NULL DEFAULT 0, \
                 count INT UNSIGNED NOT NULL DEFAULT 0, time BIGINT UNSIGNED NOT NULL DEFAULT 0, \
                 version BIGINT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (id, link_type)) {options}"
            ),
            format!(
                "CREATE TABLE nodetable (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, type INT UNSIGNED NOT NULL, \
                 version BIGINT UNSIGNED NOT NULL, time INT UNSIGNED NOT NULL, data MEDIUMBLOB NOT NULL) {options}"
            ),
        ],
        Dialect::Postgres => {
            let mut v = vec![
                "CREATE TABLE linktable (id1 BIGINT NOT NULL DEFAULT 0, id2 BIGINT NOT NULL DEFAULT 0, \
                 link_type BIGINT NOT NULL DEFAULT 0, visibility SMALLINT NOT NULL DEFAULT 0, data BYTEA NOT NULL DEFAULT '', \
                 time BIGINT NOT NULL DEFAULT 0, version INT NOT NULL DEFAULT 0, PRIMARY KEY (link_type, id1, id2))"
                    .to_string(),
                "CREATE TABLE counttable (id BIGINT NOT NULL DEFAULT 0, link_type BIGINT NOT NULL DEFAULT 0, \
                 count BIGINT NOT NULL DEFAULT 0, time BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, \
                 PRIMARY KEY (id, link_type))"
                    .to_string(),
                "CREATE TABLE nodetable (id BIGINT NOT NULL PRIMARY KEY, type INT NOT NULL, version BIGINT NOT NULL, \
                 time INT NOT NULL, data BYTEA NOT NULL)"
                    .to_string(),
            ];
            if with_index {
                v.push(index_ddl(Dialect::Postgres));
            }
            v
        }
    }
}

/// The id1_type index, as its own statement (the `index` step).
pub fn index_ddl(dialect: Dialect) -> String {
    match dialect {
        Dialect::MySql => "ALTER TABLE linktable ADD KEY id1_type (id1, link_type, visibility, time, id2, version, data)".into(),
        Dialect::Postgres => "CREATE INDEX id1_type ON linktable (id1, link_type, visibility, time, id2, version, data)".into(),
    }
}

const LINK_COLS: &str = "id1, id2, link_type, visibility, data, time, version";

/// LinkBench over one SQL connection.
pub struct SqlLinks {
    c: Box<dyn SqlConn>,
    d: Dialect,
    retries: u64,
}

fn int(c: &Cell) -> u64 {
    c.int().unwrap_or(0) as u64
}

fn link_of(r: &[Cell]) -> Link {
    Link {
        id1: int(&r[0]),
        id2: int(&r[1]),
        link_type: int(&r[2]),
        visible: int(&r[3]) == 1,
        data: r[4].bytes().unwrap_or_default().to_vec(),
        time: int(&r[5]),
        version: int(&r[6]) as u32,
    }
}

impl SqlLinks {
    /// The mapping over `c`; writes commit with `durability`.
    pub fn new(mut c: Box<dyn SqlConn>, d: Dialect, durability: Durability) -> Result<SqlLinks> {
        c.set_durability(durability)?;
        Ok(SqlLinks { c, d, retries: 0 })
    }

    fn p(&self, n: usize) -> String {
        self.d.ph(n)
    }

    /// Placeholders for `rows` rows of `cols` columns: `(?, ?), (?, ?)`.
    fn values(&self, rows: usize, cols: usize) -> String {
        (0..rows)
            .map(|i| {
                format!(
                    "({})",
                    (1..=cols)
                        .map(|j| self.p(cols * i + j))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Runs `f` in a transaction, retrying deadlocks and lock-wait timeouts.
    fn tx<R>(&mut self, f: impl Fn(&mut Self) -> Result<R>) -> Result<R> {
        loop {
            self.c.begin()?;
            match f(self).and_then(|r| self.c.commit().map(|_| r)) {
                Ok(r) => return Ok(r),
                Err(e) => {
                    let retry = self.c.is_retryable(&e) || e.to_string() == postgres_conflict();
                    let _ = self.c.rollback();
                    if !retry {
                        return Err(e);
                    }
                    self.retries += 1;
                }
            }
        }
    }

    fn count_upsert(&mut self, l: &Link, delta: i64) -> Result<()> {
        let (p1, p2, p3, p4) = (self.p(1), self.p(2), self.p(3), self.p(4));
        let sql = match (self.d, delta > 0) {
            (Dialect::MySql, true) => format!(
                "INSERT INTO counttable (id, link_type, count, time, version) VALUES ({p1}, {p2}, 1, {p3}, 0) \
                 ON DUPLICATE KEY UPDATE count = count + 1, version = version + 1, time = {p4}"
            ),
            (Dialect::MySql, false) => format!(
                "INSERT INTO counttable (id, link_type, count, time, version) VALUES ({p1}, {p2}, 0, {p3}, 0) \
                 ON DUPLICATE KEY UPDATE count = IF(count = 0, 0, count - 1), time = {p4}, version = version + 1"
            ),
            (Dialect::Postgres, true) => format!(
                "INSERT INTO counttable (id, link_type, count, time, version) VALUES ({p1}, {p2}, 1, {p3}, 0) \
                 ON CONFLICT (id, link_type) DO UPDATE SET count = counttable.count + 1, version = counttable.version + 1, time = {p4}"
            ),
            (Dialect::Postgres, false) => format!(
                "INSERT INTO counttable (id, link_type, count, time, version) VALUES ({p1}, {p2}, 0, {p3}, 0) \
                 ON CONFLICT (id, link_type) DO UPDATE SET count = GREATEST(counttable.count - 1, 0), time = {p4}, version = counttable.version + 1"
            ),
        };
        let t = l.time as i64;
        self.c.execute(
            &sql,
            &[
                Val::Int(l.id1 as i64),
                Val::Int(l.link_type as i64),
                Val::Int(t),
                Val::Int(t),
            ],
        )?;
        Ok(())
    }

    fn update_visible(&mut self, l: &Link) -> Result<()> {
        let sql = format!(
            "UPDATE linktable SET visibility = 1, data = {}, time = {}, version = {} WHERE id1 = {} AND id2 = {} AND link_type = {}",
            self.p(1),
            self.p(2),
            self.p(3),
            self.p(4),
            self.p(5),
            self.p(6)
        );
        self.c.execute(
            &sql,
            &[
                Val::Bytes(&l.data),
                Val::Int(l.time as i64),
                Val::Int(l.version as i64),
                Val::Int(l.id1 as i64),
                Val::Int(l.id2 as i64),
                Val::Int(l.link_type as i64),
            ],
        )?;
        Ok(())
    }

    fn insert_links(&mut self, links: &[Link], upsert: bool) -> Result<u64> {
        let rows = self.values(links.len(), 7);
        let tail = match (self.d, upsert) {
            (Dialect::MySql, _) => " ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)",
            (Dialect::Postgres, true) => {
                " ON CONFLICT (link_type, id1, id2) DO UPDATE SET visibility = EXCLUDED.visibility"
            }
            (Dialect::Postgres, false) => " ON CONFLICT (link_type, id1, id2) DO NOTHING",
        };
        let sql = format!("INSERT INTO linktable ({LINK_COLS}) VALUES {}{tail}", rows);
        let mut params = Vec::with_capacity(links.len() * 7);
        for l in links {
            params.extend([
                Val::Int(l.id1 as i64),
                Val::Int(l.id2 as i64),
                Val::Int(l.link_type as i64),
                Val::Int(i64::from(l.visible)),
                Val::Bytes(&l.data),
                Val::Int(l.time as i64),
                Val::Int(l.version as i64),
            ]);
        }
        self.c.execute(&sql, &params)
    }

    fn visibility_for_update(
        &mut self,
        id1: u64,
        link_type: u64,
        id2: u64,
    ) -> Result<Option<bool>> {
        let sql = format!(
            "SELECT visibility FROM linktable WHERE id1 = {} AND id2 = {} AND link_type = {} FOR UPDATE",
            self.p(1),
            self.p(2),
            self.p(3)
        );
        let rows = self.c.query(
            &sql,
            &[
                Val::Int(id1 as i64),
                Val::Int(id2 as i64),
                Val::Int(link_type as i64),
            ],
        )?;
        Ok(rows.first().map(|r| int(&r[0]) == 1))
    }
}

impl LinkStore for SqlLinks {
    fn add_link(&mut self, l: &Link) -> Result<Added> {
        let mut new = l.clone();
        new.visible = true;
        self.tx(|s| match s.d {
            Dialect::MySql => match s.insert_links(std::slice::from_ref(&new), true)? {
                1 => {
                    s.count_upsert(&new, 1)?;
                    Ok(Added::New)
                }
                2 => {
                    s.count_upsert(&new, 1)?;
                    s.update_visible(&new)?;
                    Ok(Added::Revived)
                }
                _ => {
                    s.update_visible(&new)?;
                    Ok(Added::Updated)
                }
            },
            Dialect::Postgres => match s.visibility_for_update(new.id1, new.link_type, new.id2)? {
                None => {
                    if s.insert_links(std::slice::from_ref(&new), false)? == 0 {
                        // A concurrent insert won: retry as a conflict.
                        return Err(anyhow::anyhow!(postgres_conflict()));
                    }
                    s.count_upsert(&new, 1)?;
                    Ok(Added::New)
                }
                Some(false) => {
                    s.count_upsert(&new, 1)?;
                    s.update_visible(&new)?;
                    Ok(Added::Revived)
                }
                Some(true) => {
                    s.update_visible(&new)?;
                    Ok(Added::Updated)
                }
            },
        })
    }

    fn delete_link(&mut self, id1: u64, link_type: u64, id2: u64, now_ms: u64) -> Result<bool> {
        self.tx(|s| {
            if s.visibility_for_update(id1, link_type, id2)? != Some(true) {
                return Ok(false);
            }
            let sql = format!(
                "UPDATE linktable SET visibility = 0 WHERE id1 = {} AND id2 = {} AND link_type = {}",
                s.p(1),
                s.p(2),
                s.p(3)
            );
            s.c.execute(&sql, &[Val::Int(id1 as i64), Val::Int(id2 as i64), Val::Int(link_type as i64)])?;
            let l = Link { id1, link_type, id2, visible: false, data: vec![], time: now_ms, version: 0 };
            s.count_upsert(&l, -1)?;
            Ok(true)
        })
    }

    fn count_links(&mut self, id1: u64, link_type: u64) -> Result<u64> {
        let sql = format!(
            "SELECT count FROM counttable WHERE id = {} AND link_type = {}",
            self.p(1),
            self.p(2)
        );
        let rows = self
            .c
            .query(&sql, &[Val::Int(id1 as i64), Val::Int(link_type as i64)])?;
        Ok(rows.first().map_or(0, |r| int(&r[0])))
    }

    fn multiget_links(&mut self, id1: u64, link_type: u64, id2s: &[u64]) -> Result<Vec<Link>> {
        if id2s.is_empty() {
            return Ok(Vec::new());
        }
        let ins: Vec<String> = (0..id2s.len()).map(|i| self.p(i + 3)).collect();
        let sql = format!(
            "SELECT {LINK_COLS} FROM linktable WHERE id1 = {} AND link_type = {} AND id2 IN ({})",
            self.p(1),
            self.p(2),
            ins.join(", ")
        );
        let mut params = vec![Val::Int(id1 as i64), Val::Int(link_type as i64)];
        params.extend(id2s.iter().map(|i| Val::Int(*i as i64)));
        Ok(self
            .c
            .query(&sql, &params)?
            .iter()
            .map(|r| link_of(r))
            .collect())
    }

    fn get_links_list(
        &mut self,
        id1: u64,
        link_type: u64,
        max_time: u64,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Link>> {
        let sql = match self.d {
            Dialect::MySql => format!(
                "SELECT {LINK_COLS} FROM linktable FORCE INDEX(id1_type) WHERE id1 = ? AND link_type = ? AND time >= 0 \
                 AND time <= ? AND visibility = 1 ORDER BY time DESC LIMIT ?, ?"
            ),
            Dialect::Postgres => format!(
                "SELECT {LINK_COLS} FROM linktable WHERE id1 = $1 AND link_type = $2 AND time >= 0 \
                 AND time <= $3 AND visibility = 1 ORDER BY time DESC OFFSET $4 LIMIT $5"
            ),
        };
        let rows = self.c.query(
            &sql,
            &[
                Val::Int(id1 as i64),
                Val::Int(link_type as i64),
                Val::Int(max_time.min(i64::MAX as u64) as i64),
                Val::Int(offset as i64),
                Val::Int(limit as i64),
            ],
        )?;
        Ok(rows.iter().map(|r| link_of(r)).collect())
    }

    fn add_node(&mut self, n: &Node) -> Result<()> {
        let sql = format!(
            "INSERT INTO nodetable (id, type, version, time, data) VALUES ({}, {}, {}, {}, {})",
            self.p(1),
            self.p(2),
            self.p(3),
            self.p(4),
            self.p(5)
        );
        self.tx(|s| {
            s.c.execute(
                &sql,
                &[
                    Val::Int(n.id as i64),
                    Val::Int(n.node_type as i64),
                    Val::Int(n.version as i64),
                    Val::Int(n.time as i64),
                    Val::Bytes(&n.data),
                ],
            )
        })?;
        Ok(())
    }

    fn update_node(&mut self, n: &Node) -> Result<bool> {
        let sql = format!(
            "UPDATE nodetable SET version = {}, time = {}, data = {} WHERE id = {} AND type = {NODE_TYPE}",
            self.p(1),
            self.p(2),
            self.p(3),
            self.p(4)
        );
        let n = self.tx(|s| {
            s.c.execute(
                &sql,
                &[
                    Val::Int(n.version as i64),
                    Val::Int(n.time as i64),
                    Val::Bytes(&n.data),
                    Val::Int(n.id as i64),
                ],
            )
        })?;
        Ok(n > 0)
    }

    fn delete_node(&mut self, id: u64) -> Result<bool> {
        let sql = format!(
            "DELETE FROM nodetable WHERE id = {} AND type = {NODE_TYPE}",
            self.p(1)
        );
        Ok(self.tx(|s| s.c.execute(&sql, &[Val::Int(id as i64)]))? > 0)
    }

    fn get_node(&mut self, id: u64) -> Result<Option<Node>> {
        let sql = format!(
            "SELECT id, type, version, time, data FROM nodetable WHERE id = {}",
            self.p(1)
        );
        let rows = self.c.query(&sql, &[Val::Int(id as i64)])?;
        Ok(rows.first().map(|r| Node {
            id: int(&r[0]),
            node_type: int(&r[1]) as u32,
            version: int(&r[2]),
            time: int(&r[3]) as u32,
            data: r[4].bytes().unwrap_or_default().to_vec(),
        }))
    }

    fn load_nodes(&mut self, nodes: &[Node]) -> Result<()> {
        for chunk in nodes.chunks(1024) {
            let rows = self.values(chunk.len(), 5);
            let sql = format!(
                "INSERT INTO nodetable (id, type, version, time, data) VALUES {}",
                rows
            );
            let mut params = Vec::with_capacity(chunk.len() * 5);
            for n in chunk {
                params.extend([
                    Val::Int(n.id as i64),
                    Val::Int(n.node_type as i64),
                    Val::Int(n.version as i64),
                    Val::Int(n.time as i64),
                    Val::Bytes(&n.data),
                ]);
            }
            self.tx(|s| s.c.execute(&sql, &params))?;
        }
        Ok(())
    }

    fn load_links(&mut self, links: &[Link]) -> Result<()> {
        for chunk in links.chunks(1024) {
            self.tx(|s| s.insert_links(chunk, true))?;
        }
        Ok(())
    }

    fn load_counts(&mut self, counts: &[Count]) -> Result<()> {
        for chunk in counts.chunks(1024) {
            let rows = self.values(chunk.len(), 5);
            let sql = match self.d {
                Dialect::MySql => format!(
                    "REPLACE INTO counttable (id, link_type, count, time, version) VALUES {}",
                    rows
                ),
                Dialect::Postgres => format!(
                    "INSERT INTO counttable (id, link_type, count, time, version) VALUES {} ON CONFLICT (id, link_type) DO UPDATE \
                     SET count = EXCLUDED.count, time = EXCLUDED.time, version = EXCLUDED.version",
                    rows
                ),
            };
            let mut params = Vec::with_capacity(chunk.len() * 5);
            for c in chunk {
                params.extend([
                    Val::Int(c.id1 as i64),
                    Val::Int(c.link_type as i64),
                    Val::Int(c.count as i64),
                    Val::Int(c.time as i64),
                    Val::Int(c.version as i64),
                ]);
            }
            self.tx(|s| s.c.execute(&sql, &params))?;
        }
        Ok(())
    }

    fn build_index(&mut self) -> Result<u64> {
        self.c.batch(&index_ddl(self.d))?;
        let rows = self.c.query("SELECT count(*) FROM linktable", &[])?;
        Ok(rows.first().map_or(0, |r| int(&r[0])))
    }

    fn check(&mut self) -> Result<Check> {
        let pairs = self.c.query("SELECT count(*) FROM counttable", &[])?;
        let bad_counts = self.c.query(
            "SELECT count(*) FROM counttable c LEFT JOIN (SELECT id1, link_type, COUNT(*) AS n FROM linktable \
             WHERE visibility = 1 GROUP BY id1, link_type) l ON c.id = l.id1 AND c.link_type = l.link_type \
             WHERE COALESCE(l.n, 0) <> c.count",
            &[],
        )?;
        let missing = self.c.query(
            "SELECT count(*) FROM (SELECT id1, link_type FROM linktable WHERE visibility = 1 GROUP BY id1, link_type) l \
             LEFT JOIN counttable c ON c.id = l.id1 AND c.link_type = l.link_type WHERE c.id IS NULL",
            &[],
        )?;
        let first = |r: &Vec<Vec<Cell>>| r.first().map_or(0, |r| int(&r[0]));
        Ok(Check {
            pairs: first(&pairs) + first(&missing),
            mismatches: first(&bad_counts) + first(&missing),
        })
    }

    fn retries(&mut self) -> u64 {
        std::mem::take(&mut self.retries)
    }
}

/// A marker error for PostgreSQL's lost insert race (treated as retryable).
fn postgres_conflict() -> &'static str {
    "linkbench: concurrent insert of the same link; retrying"
}
