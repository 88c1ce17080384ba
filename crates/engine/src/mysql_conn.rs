//! A client connection to MariaDB (a local server's or a target's), over
//! ampbench's own protocol client.

use anyhow::Result;

use super::Durability;
use super::sql::{Cell, SqlConn, Val};

/// One client connection, over ampbench's own protocol client
/// ([`mywire`](super::mywire): the measured path's statements cost a
/// fifth of the `mysql` crate's).
pub(super) struct MySqlConn {
    pub(super) c: super::mywire::Conn,
    /// The server-wide durability setting a step's writers set; None on
    /// an external target, whose durability is its own.
    pub(super) durability_var: Option<&'static str>,
    pub(super) durability: Option<Durability>,
}

impl SqlConn for MySqlConn {
    fn execute(&mut self, sql: &str, params: &[Val<'_>]) -> Result<u64> {
        self.c.exec(sql, params, None)?;
        Ok(self.c.affected_rows())
    }
    fn query(&mut self, sql: &str, params: &[Val<'_>]) -> Result<Vec<Vec<Cell>>> {
        let mut out = Vec::new();
        self.c.exec(sql, params, Some(&mut out))?;
        Ok(out)
    }
    fn query_each(
        &mut self,
        sql: &str,
        params: &[Val<'_>],
        f: &mut dyn FnMut(&mut Vec<Cell>),
    ) -> Result<()> {
        self.c.exec_each(sql, params, Some(f))
    }
    fn batch(&mut self, sql: &str) -> Result<()> {
        self.c.query_drop(sql)
    }
    fn text(&mut self, sql: &str) -> Result<(u64, u64)> {
        let mut rows = 0;
        self.c.query_text(sql, &mut |_| rows += 1)?;
        Ok((rows, self.c.affected_rows()))
    }
    fn is_retryable(&self, e: &anyhow::Error) -> bool {
        // 1213: deadlock; 1205: lock wait timeout.
        matches!(super::mywire::error_code(e), Some(1213 | 1205))
    }
    fn is_duplicate_key(&self, e: &anyhow::Error) -> bool {
        super::mywire::error_code(e) == Some(1062)
    }
    fn autocommit_off(&mut self) -> Result<bool> {
        self.c.query_drop("SET autocommit=0")?;
        Ok(true)
    }
    fn set_durability(&mut self, d: Durability) -> Result<()> {
        let Some(var) = self.durability_var else {
            return Ok(());
        };
        if self.durability != Some(d) {
            let v = if d == Durability::Sync { 1 } else { 2 };
            self.c.query_drop(&format!("SET GLOBAL {var}={v}"))?;
            self.durability = Some(d);
        }
        Ok(())
    }
}
