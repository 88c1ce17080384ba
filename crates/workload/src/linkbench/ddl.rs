//! LinkBench's tables on a SQL server, and the statements of every
//! operation, written once per dialect and variant when a store opens.
//!
//! The DDL is the reference's (facebookarchive/linkbench `README.md`):
//! latin1 `VARCHAR(255)` and `MEDIUMTEXT` payloads, `linktable`
//! partitioned by `KEY(id1)` into 16 partitions; on MyRocks the collation
//! is `latin1_bin`, as Mark Callaghan's MyRocks DDL has it (MyRocks indexes
//! need a binary collation). PostgreSQL's closest equivalent: `linktable`
//! hash-partitioned on id1 into 16, `BYTEA` payloads (a UTF-8 database
//! cannot store the generator's bytes above 127 as text), `BIGINT` ids.

use crate::engine::sql::Dialect;

/// Partitions of `linktable`, the reference's.
pub const PARTITIONS: usize = 16;

/// The tables' DDL; `with_index` adds id1_type at creation (otherwise the
/// `index` step creates it). `options` is the engine's table options
/// (e.g. `ENGINE=ROCKSDB`).
// Long: the LinkBench schema in both dialects, statement by statement as the
// reference's.
pub fn schema(dialect: Dialect, options: &str, with_index: bool) -> Vec<String> {
    match dialect {
        Dialect::MySql => {
            let rocks = options.to_ascii_uppercase().contains("ROCKSDB");
            let cs = if rocks {
                "DEFAULT CHARSET=latin1 COLLATE=latin1_bin"
            } else {
                "DEFAULT CHARSET=latin1"
            };
            // MyRocks: each index in its own column family, as the
            // MyRocks LinkBench DDL has it (link_pk, link_id1_type
            // reverse-ordered, count_pk, node_pk): per-CF write-amp.
            let cf = |name: &str| {
                if rocks {
                    format!(" COMMENT '{name}'")
                } else {
                    String::new()
                }
            };
            // A partitioned table's keys name a family per partition.
            let link_pk = if rocks {
                format!(" COMMENT '{}'", per_partition("cf_link_pk"))
            } else {
                String::new()
            };
            let index = if with_index {
                format!(", {}", id1_type_key(rocks))
            } else {
                String::new()
            };
            let (count_pk, node_pk) = (cf("cf_count_pk"), cf("cf_node_pk"));
            vec![
                format!(
                    "CREATE TABLE linktable (id1 BIGINT UNSIGNED NOT NULL DEFAULT 0, id2 BIGINT UNSIGNED NOT NULL DEFAULT 0, \
                     link_type BIGINT UNSIGNED NOT NULL DEFAULT 0, visibility TINYINT NOT NULL DEFAULT 0, \
                     data VARCHAR(255) NOT NULL DEFAULT '', time BIGINT UNSIGNED NOT NULL DEFAULT 0, \
                     version INT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (link_type, id1, id2){link_pk}{index}) \
                     {options} {cs} PARTITION BY KEY(id1) PARTITIONS {PARTITIONS}"
                ),
                format!(
                    "CREATE TABLE counttable (id BIGINT UNSIGNED NOT NULL DEFAULT 0, link_type BIGINT UNSIGNED NOT NULL DEFAULT 0, \
                     count INT UNSIGNED NOT NULL DEFAULT 0, time BIGINT UNSIGNED NOT NULL DEFAULT 0, \
                     version BIGINT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (id, link_type){count_pk}) {options} {cs}"
                ),
                format!(
                    "CREATE TABLE nodetable (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, type INT UNSIGNED NOT NULL, \
                     version BIGINT UNSIGNED NOT NULL, time INT UNSIGNED NOT NULL, data MEDIUMTEXT NOT NULL, \
                     PRIMARY KEY (id){node_pk}) {options} {cs}"
                ),
            ]
        }
        Dialect::Postgres => {
            let mut v = vec![
                "CREATE TABLE linktable (id1 BIGINT NOT NULL DEFAULT 0, id2 BIGINT NOT NULL DEFAULT 0, \
                 link_type BIGINT NOT NULL DEFAULT 0, visibility SMALLINT NOT NULL DEFAULT 0, data BYTEA NOT NULL DEFAULT '', \
                 time BIGINT NOT NULL DEFAULT 0, version INT NOT NULL DEFAULT 0, PRIMARY KEY (link_type, id1, id2)) \
                 PARTITION BY HASH (id1)"
                    .to_string(),
            ];
            v.extend((0..PARTITIONS).map(|i| {
                format!(
                    "CREATE TABLE linktable_p{i} PARTITION OF linktable FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {i})"
                )
            }));
            v.push(
                "CREATE TABLE counttable (id BIGINT NOT NULL DEFAULT 0, link_type BIGINT NOT NULL DEFAULT 0, \
                 count BIGINT NOT NULL DEFAULT 0, time BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, \
                 PRIMARY KEY (id, link_type))"
                    .to_string(),
            );
            v.push(
                "CREATE TABLE nodetable (id BIGINT NOT NULL PRIMARY KEY, type INT NOT NULL, version BIGINT NOT NULL, \
                 time INT NOT NULL, data BYTEA NOT NULL)"
                    .to_string(),
            );
            if with_index {
                v.push(index_ddl(Dialect::Postgres, false));
            }
            v
        }
    }
}

/// A MyRocks key comment giving every partition of `linktable` the column
/// family `cf` (`p0_cfname=cf;p1_cfname=cf;…`: a plain name leaves a
/// partitioned table's keys in `default`).
fn per_partition(cf: &str) -> String {
    (0..PARTITIONS)
        .map(|i| format!("p{i}_cfname={cf}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// The id1_type key's definition on MariaDB; on MyRocks in its own
/// reverse-ordered column family.
fn id1_type_key(rocks: bool) -> String {
    format!(
        "KEY id1_type (id1, link_type, visibility, time, id2, version, data){}",
        if rocks {
            format!(" COMMENT '{}'", per_partition("rev:cf_link_id1_type"))
        } else {
            String::new()
        }
    )
}

/// The id1_type index, as its own statement (the `index` step); `rocks`
/// for a MyRocks table.
pub fn index_ddl(dialect: Dialect, rocks: bool) -> String {
    match dialect {
        Dialect::MySql => format!("ALTER TABLE linktable ADD {}", id1_type_key(rocks)),
        Dialect::Postgres => "CREATE INDEX id1_type ON linktable (id1, link_type, visibility, time, id2, version, data)".into(),
    }
}

/// Columns of a link row, in the order every SELECT returns them.
pub const LINK_COLS: &str = "id1, id2, link_type, visibility, data, time, version";

/// Every statement a store sends, built once.
pub struct Texts {
    /// INSERT of one link, no upsert (the fork's ADD_LINK).
    pub insert_link: String,
    /// INSERT of one link, upserting visibility (the original's ADD_LINK;
    /// on PostgreSQL, insert-or-nothing after a locking read).
    pub upsert_link: String,
    /// Count + `base` (or a new row with `base`): params id, type, base,
    /// time, base, time.
    pub count_add: String,
    /// The original's decrement upsert: params id, type, time, time.
    pub count_dec_upsert: String,
    /// The fork's `UPDATE counttable SET count = count + ?`: params delta,
    /// time, id, type.
    pub count_inc: String,
    /// The link's visibility, locked: params id1, id2, type.
    pub visibility_for_update: String,
    /// Set visibility, data, version, time of a link: params visibility,
    /// data, version, time, id1, id2, type.
    pub update_link: String,
    /// Hide a link: params id1, id2, type.
    pub hide_link: String,
    /// A count: params id, type.
    pub count_links: String,
    /// GET_LINKS_LIST: params id1, type, min time, max time, limit, offset.
    pub links_list: String,
    /// A node insert: params id, type, version, time, data.
    pub add_node: String,
    /// A node update: params version, time, data, id.
    pub update_node: String,
    /// A node delete: param id.
    pub delete_node: String,
    /// A node read: param id.
    pub get_node: String,
    dialect: Dialect,
    multiget: Vec<String>,
}

impl Texts {
    /// The statements of `d`.
    // Long: every statement a store sends, built once: the three that differ
    // by dialect side by side, the rest one text with the dialect's
    // placeholders.
    pub fn new(d: Dialect) -> Texts {
        let p = |n: usize| d.ph(n);
        let list = |from: usize, n: usize| (from..from + n).map(p).collect::<Vec<_>>().join(", ");
        let (upsert_tail, count_add, count_dec_upsert) = match d {
            Dialect::MySql => (
                " ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)".to_string(),
                "INSERT INTO counttable (id, link_type, count, time, version) VALUES (?, ?, ?, ?, 0) \
                 ON DUPLICATE KEY UPDATE count = count + ?, version = version + 1, time = ?"
                    .to_string(),
                "INSERT INTO counttable (id, link_type, count, time, version) VALUES (?, ?, 0, ?, 0) \
                 ON DUPLICATE KEY UPDATE count = IF(count = 0, 0, count - 1), time = ?, version = version + 1"
                    .to_string(),
            ),
            Dialect::Postgres => (
                " ON CONFLICT (link_type, id1, id2) DO NOTHING".to_string(),
                "INSERT INTO counttable (id, link_type, count, time, version) VALUES ($1, $2, $3, $4, 0) \
                 ON CONFLICT (id, link_type) DO UPDATE SET count = counttable.count + $5, \
                 version = counttable.version + 1, time = $6"
                    .to_string(),
                "INSERT INTO counttable (id, link_type, count, time, version) VALUES ($1, $2, 0, $3, 0) \
                 ON CONFLICT (id, link_type) DO UPDATE SET count = GREATEST(counttable.count - 1, 0), \
                 time = $4, version = counttable.version + 1"
                    .to_string(),
            ),
        };
        let insert_link = format!(
            "INSERT INTO linktable ({LINK_COLS}) VALUES ({})",
            list(1, 7)
        );
        let force = if d == Dialect::MySql {
            " FORCE INDEX(id1_type)"
        } else {
            ""
        };
        Texts {
            upsert_link: format!("{insert_link}{upsert_tail}"),
            insert_link,
            count_add,
            count_dec_upsert,
            count_inc: format!(
                "UPDATE counttable SET count = count + {}, version = version + 1, time = {} WHERE id = {} AND link_type = {}",
                p(1),
                p(2),
                p(3),
                p(4)
            ),
            visibility_for_update: format!(
                "SELECT visibility FROM linktable WHERE id1 = {} AND id2 = {} AND link_type = {} FOR UPDATE",
                p(1),
                p(2),
                p(3)
            ),
            update_link: format!(
                "UPDATE linktable SET visibility = {}, data = {}, version = {}, time = {} WHERE id1 = {} AND id2 = {} AND link_type = {}",
                p(1),
                p(2),
                p(3),
                p(4),
                p(5),
                p(6),
                p(7)
            ),
            hide_link: format!(
                "UPDATE linktable SET visibility = 0 WHERE id1 = {} AND id2 = {} AND link_type = {}",
                p(1),
                p(2),
                p(3)
            ),
            count_links: format!(
                "SELECT count FROM counttable WHERE id = {} AND link_type = {}",
                p(1),
                p(2)
            ),
            links_list: format!(
                "SELECT {LINK_COLS} FROM linktable{force} WHERE id1 = {} AND link_type = {} AND time >= {} \
                 AND time <= {} AND visibility = 1 ORDER BY time DESC LIMIT {} OFFSET {}",
                p(1),
                p(2),
                p(3),
                p(4),
                p(5),
                p(6)
            ),
            add_node: format!(
                "INSERT INTO nodetable (id, type, version, time, data) VALUES ({})",
                list(1, 5)
            ),
            update_node: format!(
                "UPDATE nodetable SET version = {}, time = {}, data = {} WHERE id = {} AND type = {}",
                p(1),
                p(2),
                p(3),
                p(4),
                super::store::NODE_TYPE
            ),
            delete_node: format!(
                "DELETE FROM nodetable WHERE id = {} AND type = {}",
                p(1),
                super::store::NODE_TYPE
            ),
            get_node: format!(
                "SELECT id, type, version, time, data FROM nodetable WHERE id = {}",
                p(1)
            ),
            dialect: d,
            multiget: Vec::new(),
        }
    }

    /// Builds MULTIGET_LINK's statement for up to `n` id2s.
    pub fn prepare_multiget(&mut self, n: usize) {
        while self.multiget.len() <= n {
            let k = self.multiget.len();
            let p = |i: usize| self.dialect.ph(i);
            let ins = (3..3 + k).map(p).collect::<Vec<_>>().join(", ");
            let s = format!(
                "SELECT {LINK_COLS} FROM linktable WHERE id1 = {} AND link_type = {} AND id2 IN ({ins})",
                p(1),
                p(2)
            );
            self.multiget.push(s);
        }
    }

    /// MULTIGET_LINK with `n` id2s (built by
    /// [`prepare_multiget`](Texts::prepare_multiget)): params id1, type,
    /// then the id2s.
    pub fn multiget(&self, n: usize) -> &str {
        self.multiget.get(n).map_or("", String::as_str)
    }

    /// A multi-row INSERT of `rows` rows of `cols` columns into `table`.
    pub fn values(&self, head: &str, rows: usize, cols: usize) -> String {
        let mut s = String::with_capacity(head.len() + rows * cols * 5);
        s.push_str(head);
        for i in 0..rows {
            s.push_str(if i == 0 { " (" } else { ", (" });
            for j in 1..=cols {
                if j > 1 {
                    s.push_str(", ");
                }
                s.push_str(&self.dialect.ph(cols * i + j));
            }
            s.push(')');
        }
        s
    }
}
