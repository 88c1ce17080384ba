//! What a client of a run trusts (issue 47): a barrier note in the shared
//! results store names a database only within the rules a flag would
//! meet; a client that stops (SIGSTOP) is given up after
//! `--client-timeout` and client 0 then keeps the database it may still
//! use; a results store that goes silent ends the run after
//! `--store-timeout`, its results so far kept; a store already up to
//! date is opened without DDL, so a client arriving while another writes
//! waits on no table lock. Two client namespaces, a
//! MariaDB and a PostgreSQL store, as in `clients`.

use std::process::{Child, Output};
use std::time::{Duration, Instant};

use super::clients::{Serve, World, latest_run, text};
use super::fixture;

fn args(s: String) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// Polls the store until `sql` gives a non-empty answer.
fn store_wait(w: &World, sql: &str, within: Duration) -> String {
    let t0 = Instant::now();
    loop {
        let v = w.store_try(sql).unwrap_or_default();
        if !v.trim().is_empty() {
            return v.trim().to_string();
        }
        assert!(t0.elapsed() < within, "nothing from the store for: {sql}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn signal(c: &Child, sig: i32) {
    // SAFETY: signals a child this test spawned (`ip netns exec` runs
    // ampbench in its own process).
    unsafe {
        libc::kill(c.id() as i32, sig);
    }
}

fn wait_within(c: Child, t: Duration) -> (Output, Duration) {
    let t0 = Instant::now();
    let id = c.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d = done.clone();
    let watchdog = std::thread::spawn(move || {
        while t0.elapsed() < t {
            if d.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // SAFETY: the child this test spawned, past its bound.
        unsafe {
            libc::kill(id as i32, libc::SIGKILL);
        }
    });
    let o = c.wait_with_output().expect("wait");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = watchdog.join();
    (o, t0.elapsed())
}

/// A world of two clients, a MariaDB target and a store; None (the
/// test skipped, named) where this machine cannot make one.
fn world(test: &str) -> Option<World> {
    match World::serving(2, Serve::MariaDb) {
        Ok(w) => Some(w),
        Err(why) => {
            ampbench::testing::skip(test, &format!("no namespaces or servers here: {why}"));
            None
        }
    }
}

/// Notes and locks in the store: forged notes are refused, a held lock
/// does not stall a run.
#[test]
fn clients_trust_only_what_they_can_check() {
    let Some(w) = world("clients_trust_only_what_they_can_check") else {
        return;
    };
    forged_notes(&w);
    busy_store(&w);
}

/// A client and the store stopped mid-run: each side gives up within
/// its timeout. A world of its own, so that it runs beside the test
/// above (both mostly wait).
#[test]
fn a_stopped_client_or_store_is_given_up() {
    let Some(w) = world("a_stopped_client_or_store_is_given_up") else {
        return;
    };
    stopped_client(&w);
    silent_store(&w);
}

/// Client 1 joins a run whose "client 0" the test plays by writing the
/// store's rows itself: a note naming another database, or one of
/// ampbench's form that holds someone's table, is refused, and that
/// database is left as it was.
fn forged_notes(w: &World) {
    // (run name, the note's database given the run's id, what the refusal
    // says): another run's database, this run's form holding someone's
    // table, and a database of someone's.
    type Db = fn(i64, &str) -> String;
    let cases: [(&str, Db, &str); 3] = [
        ("forged-shop", |_, _| "shop".into(), "names database 'shop'"),
        (
            "forged-other-run",
            |_, _| "ampbench_0123456789ab".into(),
            "not one ampbench makes for this run",
        ),
        (
            "forged-form",
            |run, name| {
                format!(
                    "ampbench_{}abcdef",
                    ampbench::engine::target::run_tag(run, name)
                )
            },
            "table ampbench does not know (precious)",
        ),
    ];
    for (name, db_of, says) in cases {
        let c1 = w
            .client(
                1,
                &args(format!(
                    "run -w ycsb --steps load -p recordcount=300 --target {} --results {} --clients 2 --client 1 --run-name {name} --barrier-timeout 60",
                    w.target, w.results
                )),
                &[],
            )
            .spawn()
            .expect("spawn client 1");
        let run = store_wait(
            w,
            &format!("SELECT id FROM runs WHERE name = '{name}'"),
            Duration::from_secs(30),
        );
        let barrier = store_wait(
            w,
            &format!(
                "SELECT name FROM barriers WHERE run_id = {run} AND client = 1 AND name LIKE 'open %'"
            ),
            Duration::from_secs(30),
        );
        let db = db_of(run.parse().expect("a run id"), name);
        if db != "shop" {
            fixture::mariadb_root(
                &w.db[0],
                &format!("CREATE DATABASE {db}; CREATE TABLE {db}.precious (id INT PRIMARY KEY)"),
            )
            .expect("make a database");
        }
        w.store_sql(&format!(
            "INSERT INTO run_clients (run_id, client, host, joined, skew, status, beat) \
             VALUES ({run}, 0, 'forger', 'now', 0, 'running', extract(epoch FROM clock_timestamp())); \
             INSERT INTO barriers (run_id, name, client, at, note) VALUES ({run}, '{barrier}', 0, 0, '{db}')"
        ));
        let (o, took) = wait_within(c1, Duration::from_secs(60));
        let t = text(&o);
        assert!(took < Duration::from_secs(60), "client 1 hung:\n{t}");
        assert!(!o.status.success(), "{name}: client 1 joined {db}:\n{t}");
        assert!(t.contains(says), "{name}:\n{t}");
        let tables =
            fixture::mariadb_root(&w.db[0], &format!("SHOW TABLES FROM {db}")).expect("tables");
        assert!(
            !tables.contains("usertable"),
            "{name}: client 1 wrote into {db}: {tables}"
        );
        if db != "shop" {
            assert_eq!(tables.trim(), "precious", "{name}");
            fixture::mariadb_root(&w.db[0], &format!("DROP DATABASE {db}")).expect("drop");
        }
    }
}

/// Client 1 stopped mid-step: client 0 gives it up after
/// `--client-timeout`, ends the run partial within a bound, and keeps the
/// target's database (client 1's session lives). Client 1, resumed,
/// finds itself given up and stops.
fn stopped_client(w: &World) {
    let a = |k: usize| {
        args(format!(
            "run -w ycsb --steps load,c -p recordcount=2000 --target {} --results {} --clients 2 --client {k} \
             --run-name stopped --duration 4 --warmup 0 --interval 1 --rate 1000 --barrier-timeout 120 --client-timeout 5",
            w.target, w.results
        ))
    };
    let mut kids: Vec<Child> = (0..2)
        .map(|k| w.client(k, &a(k), &[]).spawn().expect("spawn"))
        .collect();
    store_wait(
        w,
        "SELECT 1 FROM steps s JOIN runs r ON r.id = s.run_id \
         WHERE r.name = 'stopped' AND s.client = 1 AND s.step = 'c'",
        Duration::from_secs(90),
    );
    let c1 = kids.pop().expect("client 1");
    signal(&c1, libc::SIGSTOP);
    let c0 = kids.pop().expect("client 0");
    // Its step (4 s), five silent seconds, the close: well within 60 s.
    let (o, took) = wait_within(c0, Duration::from_secs(60));
    let t = text(&o);
    signal(&c1, libc::SIGCONT);
    assert!(
        took < Duration::from_secs(60),
        "client 0 waited for the stopped one:\n{t}"
    );
    assert_eq!(o.status.code(), Some(1), "client 0:\n{t}");
    eprintln!("stopped client: client 0 ended {took:?} after the stop");
    assert!(
        t.contains("client 1 was given up: not heard from for"),
        "client 0:\n{t}"
    );
    assert!(
        t.contains("kept on")
            && t.contains("client(s) 1 were given up but their store sessions live"),
        "client 0:\n{t}"
    );
    let db = t
        .split("database ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("the kept database's name")
        .to_string();
    assert!(db.starts_with("ampbench_"), "{db}");
    let (o1, _) = wait_within(c1, Duration::from_secs(60));
    let t1 = text(&o1);
    assert!(!o1.status.success(), "client 1:\n{t1}");
    assert!(t1.contains("was given up by the others"), "client 1:\n{t1}");
    let run = latest_run(w);
    let status = w.store_sql(&format!(
        "SELECT status FROM run_clients WHERE run_id = {run} AND client = 1"
    ));
    assert_eq!(status.trim(), "lost");
    // Kept, as client 0 said; the test removes it.
    let dbs = fixture::mariadb_root(&w.db[0], "SHOW DATABASES LIKE 'ampbench%'").expect("dbs");
    assert!(dbs.contains(&db), "{dbs}");
    fixture::mariadb_root(&w.db[0], &format!("DROP DATABASE {db}")).expect("drop");
}

/// A store at this schema is opened without DDL: while another session
/// holds a row-write lock on `run_clients` and `runs` (as a client of a
/// run does mid-transaction), a run starts, records and ends. Opening
/// with `IF NOT EXISTS` statements took the tables' exclusive and share
/// locks, waited behind it and deadlocked two clients in CI.
fn busy_store(w: &World) {
    let hold = 40;
    std::thread::scope(|scope| {
        let holder = scope.spawn(|| {
            w.store_try(&format!(
                "BEGIN; LOCK TABLE run_clients, runs IN ROW EXCLUSIVE MODE; \
                 SELECT pg_sleep({hold}); COMMIT;"
            ))
        });
        store_wait(
            w,
            "SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
             WHERE c.relname = 'run_clients' AND l.mode = 'RowExclusiveLock' AND l.granted \
             AND l.pid <> pg_backend_pid()",
            Duration::from_secs(20),
        );
        let c = w
            .client(
                0,
                &args(format!(
                    "run -w ycsb --steps load -p recordcount=300 --target {} --results {}",
                    w.target, w.results
                )),
                &[],
            )
            .spawn()
            .expect("spawn");
        let (o, took) = wait_within(c, Duration::from_secs(90));
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        assert!(
            took < Duration::from_secs(hold - 10),
            "the run waited {took:?} behind another session's lock:\n{t}"
        );
        eprintln!("busy store: the run ended in {took:?} beside a held lock");
        // The holder's sleep is cancelled rather than waited out: its
        // transaction ends, its locks with it.
        w.store_sql(
            "SELECT pg_cancel_backend(pid) FROM pg_stat_activity \
             WHERE query LIKE '%pg_sleep(%' AND pid <> pg_backend_pid()",
        );
        let _ = holder.join();
    });
}

/// The store stopped mid-run: the run fails within `--store-timeout`
/// and a little, saying so on one line; the steps recorded before stay;
/// the target's database (not shared) is dropped.
fn silent_store(w: &World) {
    let c = w
        .client(
            0,
            &args(format!(
                "run -w ycsb --steps load,c -p recordcount=2000 --target {} --results {} \
                 --duration 30 --warmup 0 --interval 1 --rate 1000 --store-timeout 3",
                w.target, w.results
            )),
            &[],
        )
        .spawn()
        .expect("spawn");
    let run = store_wait(
        w,
        "SELECT r.id FROM steps s JOIN runs r ON r.id = s.run_id WHERE s.step = 'c' AND s.status = 'running'",
        Duration::from_secs(90),
    );
    std::thread::sleep(Duration::from_secs(2));
    w.signal_store(libc::SIGSTOP);
    let (o, took) = wait_within(c, Duration::from_secs(40));
    w.signal_store(libc::SIGCONT);
    let t = text(&o);
    assert!(
        took < Duration::from_secs(20),
        "the run waited {took:?} on a stopped store:\n{t}"
    );
    assert!(!o.status.success(), "{t}");
    let err: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with("ampbench: error"))
        .collect();
    assert_eq!(err.len(), 1, "{t}");
    assert!(err[0].contains("sent nothing for 3 s"), "{t}");
    eprintln!(
        "silent store: the run ended {took:?} after the stop: {}",
        err[0]
    );
    // What was recorded before the stop is there.
    let load = w.store_sql(&format!(
        "SELECT status FROM steps WHERE run_id = {run} AND step = 'load'"
    ));
    assert_eq!(load.trim(), "done");
    let dbs = fixture::mariadb_root(&w.db[0], "SHOW DATABASES LIKE 'ampbench%'").expect("dbs");
    assert!(dbs.trim().is_empty(), "left on the target: {dbs}");
}
