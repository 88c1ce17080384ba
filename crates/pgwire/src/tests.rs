//! A scripted server: its bytes given in advance, what the client writes
//! dropped. The real servers are in the integration tests
//! (tests/loopback_servers.rs, tests/targets/).

use super::*;

fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn auth(code: u32, rest: &[u8]) -> Vec<u8> {
    let mut b = code.to_be_bytes().to_vec();
    b.extend_from_slice(rest);
    msg(b'R', &b)
}

fn ready() -> Vec<u8> {
    msg(b'Z', b"I")
}

fn options(allowed: Allowed) -> Options<'static> {
    Options {
        user: "bench",
        password: Some("pw"),
        db: "ampbench",
        connect_timeout: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        allowed,
        tls: None,
    }
}

/// A connection whose server says `script`, started under `allowed`.
fn started(script: Vec<u8>, allowed: Allowed) -> Result<Conn> {
    let mut c = Conn::over(
        Stream::Replay(std::io::Cursor::new(script)),
        Duration::from_secs(1),
    );
    c.start(&options(allowed))?;
    Ok(c)
}

fn welcome() -> Vec<u8> {
    let mut s = auth(0, &[]);
    s.extend(msg(b'S', b"server_version\x0016.1\x00"));
    s.extend(msg(b'K', &[0, 0, 0, 7, 0, 0, 0, 9]));
    s.extend(ready());
    s
}

/// A prepare's reply: parameters of `params` types, columns of `cols`.
fn prepared(params: &[u32], cols: &[(&str, u32)]) -> Vec<u8> {
    let mut s = msg(b'1', b"");
    let mut t = (params.len() as u16).to_be_bytes().to_vec();
    for p in params {
        t.extend_from_slice(&p.to_be_bytes());
    }
    s.extend(msg(b't', &t));
    let mut d = (cols.len() as u16).to_be_bytes().to_vec();
    for (name, ty) in cols {
        d.extend_from_slice(name.as_bytes());
        d.push(0);
        d.extend_from_slice(&[0; 6]);
        d.extend_from_slice(&ty.to_be_bytes());
        d.extend_from_slice(&[0; 8]);
    }
    s.extend(msg(b'T', &d));
    s.extend(ready());
    s
}

fn row(fields: &[Option<&[u8]>]) -> Vec<u8> {
    let mut b = (fields.len() as u16).to_be_bytes().to_vec();
    for f in fields {
        match f {
            Some(v) => {
                b.extend_from_slice(&(v.len() as u32).to_be_bytes());
                b.extend_from_slice(v);
            }
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    msg(b'D', &b)
}

fn error(code: &str, text: &str) -> Vec<u8> {
    let mut b = Vec::new();
    for (k, v) in [(b'S', "ERROR"), (b'V', "ERROR"), (b'C', code), (b'M', text)] {
        b.push(k);
        b.extend_from_slice(v.as_bytes());
        b.push(0);
    }
    b.push(0);
    msg(b'E', &b)
}

#[test]
fn a_scripted_server_starts_prepares_and_answers() {
    let mut s = welcome();
    s.extend(prepared(
        &[20, 17],
        &[("id", 20), ("data", 17), ("n", 1700)],
    ));
    s.extend(msg(b'2', b""));
    s.extend(row(&[
        Some(&7i64.to_be_bytes()),
        Some(b"xy"),
        Some(b"12.50"),
    ]));
    s.extend(row(&[Some(&(-1i64).to_be_bytes()), None, None]));
    s.extend(msg(b'C', b"SELECT 2\x00"));
    s.extend(ready());
    // The same text again: no second prepare.
    s.extend(msg(b'2', b""));
    s.extend(msg(b'C', b"SELECT 0\x00"));
    s.extend(ready());
    let mut c = started(s, Allowed::default_for(false)).expect("start");
    let sql = "SELECT id, data, n FROM t WHERE id = $1 AND data = $2";
    let mut got = Vec::new();
    c.exec_each(
        sql,
        &[Val::Int(7), Val::Bytes(b"xy")],
        Some(&mut |r| got.push(std::mem::take(r))),
    )
    .expect("exec");
    assert_eq!(
        got,
        vec![
            vec![
                Cell::Int(7),
                Cell::Bytes(b"xy".to_vec()),
                Cell::Text("12.50".into())
            ],
            vec![Cell::Int(-1), Cell::Null, Cell::Null],
        ]
    );
    assert_eq!(c.affected_rows(), 2);
    c.exec_each(sql, &[Val::Int(8), Val::Null], None)
        .expect("again");
    assert_eq!((c.stmts.len(), c.affected_rows()), (1, 0));
    // A wrong parameter count sends nothing and leaves it usable.
    let e = c.exec_each(sql, &[Val::Int(8)], None).unwrap_err();
    assert!(e.to_string().contains("takes 2 parameters, 1 given"), "{e}");
    assert!(!c.in_flight);
}

#[test]
fn a_server_error_is_read_to_its_end_and_keeps_the_connection() {
    let mut s = welcome();
    s.extend(prepared(&[23], &[]));
    s.extend(msg(b'2', b""));
    s.extend(error(
        "23505",
        "duplicate key value violates unique constraint",
    ));
    s.extend(ready());
    s.extend(msg(b'C', b"INSERT 0 1\x00"));
    s.extend(ready());
    let mut c = started(s, Allowed::default_for(false)).expect("start");
    let sql = "INSERT INTO t VALUES ($1)";
    let e = c.exec_each(sql, &[Val::Int(1)], None).unwrap_err();
    assert_eq!(error_code(&e), Some("23505"));
    assert_eq!(
        one_line(&e),
        "duplicate key value violates unique constraint"
    );
    assert!(!c.in_flight);
    let n = c.simple("INSERT INTO t VALUES (2)", None).expect("simple");
    assert_eq!((n, c.affected_rows()), (0, 1));
    // An int4 parameter out of its range is refused before it is sent.
    let e = c.exec_each(sql, &[Val::Int(1 << 40)], None).unwrap_err();
    assert!(format!("{e:#}").contains("out of range"), "{e:#}");
    assert!(!c.in_flight);
}

#[test]
fn a_broken_reply_poisons_the_connection() {
    let mut s = welcome();
    s.extend(prepared(&[], &[("id", 20)]));
    s.extend(msg(b'2', b""));
    // An 8-byte integer of 3 bytes.
    s.extend(row(&[Some(b"abc")]));
    let mut c = started(s, Allowed::default_for(false)).expect("start");
    let e = c.exec_each("SELECT 1", &[], Some(&mut |_| {})).unwrap_err();
    assert!(e.to_string().contains("integer of 3 bytes"), "{e}");
    let again = c.batch("SELECT 1").unwrap_err();
    assert!(again.to_string().contains("broke off"), "{again}");
}

#[test]
fn limits_refuse_what_is_not_believable() {
    let mut s = welcome();
    s.extend(msg(b'D', &[0; 100]));
    let mut c = started(s, Allowed::default_for(false)).expect("start");
    c.set_limits(Limits {
        message: 50,
        result: 1 << 20,
    });
    let e = c.batch("SELECT x").unwrap_err();
    assert!(e.to_string().contains("more than 50 bytes"), "{e}");
    // A length under 4 is out of step.
    let mut s = welcome();
    s.extend([b'Z', 0, 0, 0, 2]);
    let mut c = started(s, Allowed::default_for(false)).expect("start");
    assert!(
        c.batch("SELECT 1")
            .unwrap_err()
            .to_string()
            .contains("out of step")
    );
}

#[test]
fn authentication_is_refused_as_the_url_says() {
    let plain = Allowed::default_for(false);
    // The password in clear text without verified TLS: refused.
    let e = started(auth(3, &[]), plain).err().expect("refused");
    assert!(e.to_string().contains("clear text"), "{e}");
    // Allowed by the URL, it is answered.
    let mut s = auth(3, &[]);
    s.extend(welcome());
    started(s, Allowed::parse("password").unwrap()).expect("cleartext allowed");
    // MD5 is answered by default; not under require_auth=scram-sha-256.
    let mut s = auth(5, &[1, 2, 3, 4]);
    s.extend(welcome());
    started(s.clone(), plain).expect("md5");
    let e = started(s, Allowed::parse("scram-sha-256").unwrap())
        .err()
        .expect("refused");
    assert!(e.to_string().contains("md5"), "{e}");
    // Let in without a request where none is allowed.
    let e = started(welcome(), Allowed::parse("scram-sha-256").unwrap())
        .err()
        .expect("refused");
    assert!(e.to_string().contains("without authentication"), "{e}");
    // GSS (7) is not spoken.
    let e = started(auth(7, &[]), plain).err().expect("refused");
    assert!(e.to_string().contains("method 7"), "{e}");
    // A server's error at the start is its message.
    let e = started(
        error("28P01", "password authentication failed for user \"bench\""),
        plain,
    )
    .err()
    .expect("refused");
    assert_eq!(error_code(&e), Some("28P01"));
    // SCRAM without any mechanism this client speaks.
    let e = started(auth(10, b"SCRAM-SHA-1\0\0"), plain)
        .err()
        .expect("refused");
    assert!(e.to_string().contains("none of the SASL mechanisms"), "{e}");
}

#[test]
fn command_tags_give_their_counts() {
    assert_eq!(codec::affected(b"INSERT 0 5\0"), 5);
    assert_eq!(codec::affected(b"UPDATE 3\0"), 3);
    assert_eq!(codec::affected(b"BEGIN\0"), 0);
    assert_eq!(codec::affected(b""), 0);
}

#[test]
fn a_queued_begin_goes_with_the_next_request_and_its_error_is_that_requests() {
    let mut s = welcome();
    // BEGIN's reply within the prepare's (one ReadyForQuery), then the
    // execution's.
    s.extend(msg(b'1', b""));
    s.extend(msg(b'2', b""));
    s.extend(msg(b'C', b"BEGIN\x00"));
    s.extend(prepared(&[], &[("n", 20)]));
    s.extend(msg(b'2', b""));
    s.extend(row(&[Some(&5i64.to_be_bytes())]));
    s.extend(msg(b'C', b"SELECT 1\x00"));
    s.extend(msg(b'Z', b"T"));
    // A queued BEGIN before a simple query: its own reply, failed, then
    // the query's.
    s.extend(error("25001", "there is already a transaction in progress"));
    s.extend(msg(b'Z', b"E"));
    s.extend(msg(b'C', b"COMMIT\x00"));
    s.extend(ready());
    // Queued before an execution: the server skipped it after BEGIN's
    // error, and the error is the execution's.
    s.extend(error("25P02", "current transaction is aborted"));
    s.extend(ready());
    let mut c = started(s, Allowed::default_for(false)).expect("start");
    c.queue_begin().expect("queue");
    c.queue_begin().expect("queued once");
    assert!(!c.out.is_empty(), "queued, not sent");
    let mut got = Vec::new();
    c.exec_each(
        "SELECT n FROM t",
        &[],
        Some(&mut |r| got.push(std::mem::take(r))),
    )
    .expect("exec");
    assert_eq!(
        (got, c.queued, c.affected_rows()),
        (vec![vec![Cell::Int(5)]], false, 1)
    );
    c.queue_begin().expect("queue");
    let e = c.batch("COMMIT").unwrap_err();
    assert_eq!(error_code(&e), Some("25001"));
    assert!(!c.in_flight);
    c.queue_begin().expect("queue");
    let e = c.exec_each("SELECT n FROM t", &[], None).unwrap_err();
    assert_eq!(error_code(&e), Some("25P02"));
    assert!(!c.in_flight && c.out.is_empty());
}

#[test]
fn rows_reuse_the_previous_rows_byte_buffers() {
    let cols = [20, 17];
    let mut r = Vec::new();
    let body = |id: i64, data: &[u8]| {
        let m = row(&[Some(&id.to_be_bytes()), Some(data)]);
        m[5..].to_vec()
    };
    codec::binary_row(&body(1, b"a longer payload"), &cols, &mut r).expect("row");
    let at = |r: &Vec<Cell>| match &r[1] {
        Cell::Bytes(b) => b.as_ptr(),
        _ => std::ptr::null(),
    };
    let first = at(&r);
    codec::binary_row(&body(-2, b"short"), &cols, &mut r).expect("row");
    assert_eq!(r, [Cell::Int(-2), Cell::Bytes(b"short".to_vec())]);
    assert_eq!(at(&r), first, "the bytea's buffer was not reused");
    // A row of another width is refused.
    assert!(codec::binary_row(&body(3, b"x"), &[20], &mut r).is_err());
}

#[test]
fn scram_must_run_to_its_end_in_order() {
    let plain = Allowed::default_for(false);
    // Let in right after the client's first SCRAM message: the server
    // never proved it knows the password.
    let mut s = auth(10, b"SCRAM-SHA-256\0\0");
    s.extend(welcome());
    let e = started(s, plain).err().expect("refused");
    assert!(e.to_string().contains("before SCRAM was done"), "{e}");
    // SASL final before SASL continue.
    let mut s = auth(10, b"SCRAM-SHA-256\0\0");
    s.extend(auth(12, b"v=AAAA"));
    let e = started(s, plain).err().expect("refused");
    assert!(e.to_string().contains("out of order"), "{e}");
    // A second method after the first.
    let mut s = auth(5, &[1, 2, 3, 4]);
    s.extend(auth(3, &[]));
    let e = started(s, Allowed::parse("md5,password").unwrap())
        .err()
        .expect("refused");
    assert!(
        e.to_string().contains("second authentication request"),
        "{e}"
    );
    // A SASL step with no SASL begun.
    let e = started(auth(11, b"r=x"), plain).err().expect("refused");
    assert!(e.to_string().contains("before SASL was begun"), "{e}");
}

#[test]
fn a_fatal_error_then_a_close_gives_the_error_and_ends_the_connection() {
    let mut s = welcome();
    s.extend(error(
        "57P01",
        "terminating connection due to administrator command",
    ));
    let mut c = started(s, Allowed::default_for(false)).expect("start");
    let e = c.batch("SELECT 1").unwrap_err();
    assert_eq!(error_code(&e), Some("57P01"));
    let again = c.batch("SELECT 1").unwrap_err();
    assert!(again.to_string().contains("broke off"), "{again}");
}

#[test]
fn a_nul_in_the_text_sends_nothing_and_keeps_the_connection() {
    let mut s = welcome();
    // The queued BEGIN's reply (closed by a Sync), then the query's.
    s.extend(msg(b'1', b""));
    s.extend(msg(b'2', b""));
    s.extend(msg(b'C', b"BEGIN\x00"));
    s.extend(msg(b'Z', b"T"));
    s.extend(msg(b'C', b"SELECT 1\x00"));
    s.extend(msg(b'Z', b"T"));
    let mut c = started(s, Allowed::default_for(false)).expect("start");
    c.queue_begin().expect("queue");
    let queued = c.out.len();
    assert!(c.batch("SELECT '\0'").is_err());
    assert!(c.exec_each("SELECT '\0'", &[], None).is_err());
    assert!(
        !c.in_flight && c.out.len() == queued,
        "the queued BEGIN stays"
    );
    assert_eq!(c.simple("SELECT 1", None).expect("usable"), 0);
}

#[test]
fn only_rows_may_be_long() {
    let mut s = welcome();
    s.extend(msg(b'N', &vec![b'x'; MAX_OTHER + 1]));
    let mut c = started(s, Allowed::default_for(false)).expect("start");
    let e = c.batch("SELECT 1").unwrap_err();
    assert!(e.to_string().contains("more than 1048576 bytes"), "{e}");
    // Rows count their cells against the result limit.
    let mut s = welcome();
    for _ in 0..3 {
        s.extend(row(&[None, None, None, None]));
    }
    s.extend(msg(b'C', b"SELECT 3\x00"));
    s.extend(ready());
    let mut c = started(s, Allowed::default_for(false)).expect("start");
    c.set_limits(Limits {
        message: 1 << 20,
        // Two rows of four NULLs: 2 x (18 + 24 + 4 x 32) = 340 bytes.
        result: 340,
    });
    let e = c.batch("SELECT a, b, c, d FROM t").unwrap_err();
    assert!(e.to_string().contains("more than 340 bytes"), "{e}");
}
