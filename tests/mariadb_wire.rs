//! ampbench's own MariaDB protocol client (`engine::mywire`) against a
//! real server started on loopback by the test, and always stopped.

use ampbench::engine::EngineKind;
use ampbench::engine::sql::{Cell, SqlConn, Val};

use crate::common;
use common::{open, sql};

/// ampbench's own MariaDB protocol client (engine::mywire) against the
/// server: every column type's binary decoding, NULLs, long values,
/// multi-statement text queries, server errors by number, and many
/// statements prepared on one connection.
#[test]
fn mariadb_wire_protocol_values_and_errors() {
    let kind = EngineKind::parse("mariadb-innodb").unwrap();
    let d = tempfile::tempdir().unwrap();
    let s = open(kind, d.path());
    let mut c = sql(&*s).connect().unwrap();
    c.batch(
        "CREATE TABLE w (id BIGINT PRIMARY KEY, t TINYINT, s SMALLINT, m MEDIUMINT, i INT, \
     u BIGINT UNSIGNED, f DOUBLE, dt DATETIME, dd DATE, dec_ DECIMAL(10,2), \
     vc VARCHAR(20), b MEDIUMBLOB) ENGINE=InnoDB; SET @x = 1",
    )
    .unwrap();
    let ins = "INSERT INTO w VALUES (?, -5, -300, -70000, -2000000000, 18446744073709551615, 2.5, \
           '2026-11-25 03:04:05', '2026-11-25', 12.34, ?, ?)";
    let long: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(
        c.execute(ins, &[Val::Int(1), Val::Text("héllo"), Val::Bytes(&long)])
            .unwrap(),
        1
    );
    assert_eq!(
        c.execute(ins, &[Val::Int(2), Val::Null, Val::Null])
            .unwrap(),
        1
    );
    let rows = c
        .query(
            "SELECT id, t, s, m, i, u, f, dt, dd, dec_, vc, b FROM w ORDER BY id",
            &[],
        )
        .unwrap();
    assert_eq!(rows.len(), 2);
    let r = &rows[0];
    assert_eq!(
        r[..5],
        [
            Cell::Int(1),
            Cell::Int(-5),
            Cell::Int(-300),
            Cell::Int(-70000),
            Cell::Int(-2000000000)
        ]
    );
    assert_eq!(r[5], Cell::Int(-1), "u64::MAX comes back as its bits");
    assert_eq!(r[6], Cell::Text("2.5".into()));
    assert_eq!(r[7], Cell::Text("2026-11-25 03:04:05".into()));
    assert_eq!(r[8], Cell::Text("2026-11-25".into()));
    assert_eq!(r[9], Cell::Bytes(b"12.34".to_vec()));
    assert_eq!(r[10].text(), "héllo");
    assert_eq!(r[11], Cell::Bytes(long));
    assert_eq!(rows[1][10], Cell::Null);
    assert_eq!(rows[1][11], Cell::Null);
    // A duplicate key is error 1062, which the store sees as such.
    let e = c
        .execute(ins, &[Val::Int(1), Val::Null, Val::Null])
        .unwrap_err();
    assert!(c.is_duplicate_key(&e), "{e:#}");
    assert!(!c.is_retryable(&e));
    assert!(format!("{e:#}").contains("1062"), "{e:#}");
    // A syntax error names the server's message; the connection goes on.
    let e = c.batch("SELEC 1").unwrap_err();
    assert!(format!("{e:#}").contains("1064"), "{e:#}");
    // More statements than one connection keeps prepared (256).
    for k in 0..300 {
        let q = format!("SELECT COUNT(*) + {k} FROM w WHERE id > ?");
        assert_eq!(
            c.query(&q, &[Val::Int(0)]).unwrap(),
            vec![vec![Cell::Int(2 + k)]]
        );
    }
    assert_eq!(
        c.execute("DELETE FROM w WHERE id > ?", &[Val::Int(0)])
            .unwrap(),
        2
    );
    // A value past 16 MB goes out and comes back in several packets.
    c.batch("SET GLOBAL max_allowed_packet = 67108864; CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB)")
        .unwrap();
    let mut c2 = sql(&*s).connect().unwrap();
    let huge: Vec<u8> = (0..(17u32 << 20)).map(|i| (i % 253) as u8).collect();
    c2.execute(
        "INSERT INTO big VALUES (?, ?)",
        &[Val::Int(1), Val::Bytes(&huge)],
    )
    .unwrap();
    let back = c2
        .query("SELECT b, LENGTH(b) FROM big WHERE id = ?", &[Val::Int(1)])
        .unwrap();
    assert_eq!(back[0][1], Cell::Int(huge.len() as i64));
    assert!(
        back[0][0] == Cell::Bytes(huge),
        "the 17 MB value came back changed"
    );
    drop(c2);
    drop(c);
    s.close().unwrap();
}

/// The server's `Bytes_sent` for this session.
fn bytes_sent(c: &mut dyn SqlConn) -> i64 {
    let r = c
        .query("SHOW SESSION STATUS LIKE 'Bytes_sent'", &[])
        .unwrap();
    r[0][1].text().parse().unwrap()
}

/// MariaDB's metadata caching: executions of a prepared statement come
/// back without their column definitions, and a statement whose columns
/// change (ALTER TABLE) is decoded with the new types, not the cached ones.
#[test]
fn mariadb_prepared_results_skip_unchanged_column_definitions() {
    let kind = EngineKind::parse("mariadb-innodb").unwrap();
    let d = tempfile::tempdir().unwrap();
    let s = open(kind, d.path());
    let mut c = sql(&*s).connect().unwrap();
    c.batch(
        "CREATE TABLE m (id INT PRIMARY KEY, a INT, b INT, c INT, d INT, e INT); \
         INSERT INTO m VALUES (1, 7, 8, 9, 10, 11)",
    )
    .unwrap();
    let q = "SELECT a, b, c, d, e FROM m WHERE id = ?";
    let want: Vec<Cell> = (7..12).map(Cell::Int).collect();
    assert_eq!(c.query(q, &[Val::Int(1)]).unwrap(), vec![want.clone()]);
    // What one status query costs, then twenty executions.
    let s0 = bytes_sent(&mut *c);
    let s1 = bytes_sent(&mut *c);
    for _ in 0..20 {
        assert_eq!(c.query(q, &[Val::Int(1)]).unwrap(), vec![want.clone()]);
    }
    let s2 = bytes_sent(&mut *c);
    let per = (s2 - s1 - (s1 - s0)) as f64 / 20.0;
    // With definitions: a count, five of about 38 bytes, two EOFs and the
    // row, about 240 bytes; without them about 50.
    assert!(
        per < 120.0,
        "{per} bytes per execution: definitions were sent"
    );
    // The columns change type: the server sends definitions again, and
    // the values are decoded as text, not as the cached integers.
    c.batch("ALTER TABLE m MODIFY a VARCHAR(10); UPDATE m SET a = 'seven'")
        .unwrap();
    let r = c.query(q, &[Val::Int(1)]).unwrap();
    assert_eq!(r[0][0].text(), "seven");
    assert_eq!(r[0][1..], want[1..]);
    assert_eq!(c.query(q, &[Val::Int(1)]).unwrap(), r);
    drop(c);
    s.close().unwrap();
}
