//! Several clients, one run: three ampbench clients, each in a network
//! namespace of its own, against one MariaDB in a fourth, meeting in a
//! PostgreSQL results store in a fifth (all bridged, addresses that
//! exist only inside the namespaces). The LinkBench run is made of the
//! Kubernetes manifest's own arguments, each client given only
//! JOB_COMPLETION_INDEX; one client's clock is 5 s ahead.

use std::mem::ManuallyDrop;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::cluster::Bridged;
use super::common;
use super::fixture::{self, Net, PASSWORD, Proc};

/// What the clients run against.
pub enum Serve {
    /// One MariaDB.
    MariaDb,
    /// A three-node Galera cluster (every node an endpoint).
    Galera,
}

/// The clients' namespaces, the target's and the store's, and the servers.
pub struct World {
    /// The namespaces: clients first, then the target's nodes, the store.
    pub net: Bridged,
    /// The target's servers.
    pub db: Vec<Proc>,
    store: Proc,
    /// The target's URL (no password).
    pub target: String,
    /// The store's URL (no password).
    pub results: String,
    /// The clients' TMPDIR, where a run keeps its data directory: a
    /// client the test kills cannot remove its own, and this goes with
    /// the world.
    tmp: tempfile::TempDir,
}

impl World {
    fn new() -> Result<World, String> {
        World::serving(3, Serve::MariaDb)
    }

    /// `clients` client namespaces against `serve`, with a PostgreSQL
    /// results store.
    pub fn serving(clients: usize, serve: Serve) -> Result<World, String> {
        let servers = match serve {
            Serve::MariaDb => 1,
            Serve::Galera => 3,
        };
        let net = Bridged::new(clients + servers + 1)?;
        // The fixture's servers take a client/server pair: here the
        // bridge's namespace and the node's (deleted by `net` on drop).
        let as_net = |i: usize| {
            ManuallyDrop::new(Net {
                client: net.client.clone(),
                server: net.nodes[i].clone(),
                server_ip: net.ips[i].clone(),
                dead_ip: String::new(),
            })
        };
        let db = match serve {
            Serve::MariaDb => vec![fixture::mariadb(&as_net(clients))?],
            Serve::Galera => super::cluster::galera_on(&net, clients..clients + servers)?,
        };
        let at = clients + servers;
        let store = fixture::postgres(&as_net(at))?;
        fixture::postgres_as(
            &store,
            "postgres",
            "postgres",
            "CREATE DATABASE results OWNER bench",
        )?;
        let hosts: Vec<String> = net.ips[clients..at]
            .iter()
            .map(|ip| format!("{ip}:3306"))
            .collect();
        Ok(World {
            tmp: tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?,
            target: format!("mysql://bench@{}/", hosts.join(",")),
            results: format!("postgres://bench@{}:5432/results", net.ips[at]),
            net,
            db,
            store,
        })
    }

    /// `ampbench ARGS` as client `k` (in namespace `k`), the passwords
    /// in the environment as the manifest gives them.
    pub fn client(&self, k: usize, args: &[String], env: &[(&str, String)]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.net.nodes[k], common::BIN])
            .args(args)
            .env("AMPBENCH_TARGET_PASSWORD", PASSWORD)
            .env("AMPBENCH_RESULTS_PASSWORD", PASSWORD)
            .env("TMPDIR", self.tmp.path())
            .env_remove("JOB_COMPLETION_INDEX")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    /// Runs clients `ks` together; their outputs.
    pub fn together(
        &self,
        ks: &[usize],
        args: impl Fn(usize) -> Vec<String>,
        env: impl Fn(usize) -> Vec<(&'static str, String)>,
    ) -> Vec<Output> {
        let children: Vec<Child> = ks
            .iter()
            .map(|&k| {
                self.client(k, &args(k), &env(k))
                    .spawn()
                    .expect("spawn a client")
            })
            .collect();
        children
            .into_iter()
            .map(|c| c.wait_with_output().expect("wait for a client"))
            .collect()
    }

    /// `ampbench ARGS` in the bridge's namespace (reports, copies).
    fn here(&self, args: &[&str]) -> String {
        let o = self
            .net
            .in_client(common::BIN)
            .args(args)
            .env("AMPBENCH_RESULTS_PASSWORD", PASSWORD)
            .output()
            .expect("run ampbench");
        assert!(o.status.success(), "ampbench {args:?}: {}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub fn report(&self, run: i64, format: &str) -> String {
        self.here(&[
            "report",
            "--results",
            &self.results,
            "--run",
            &run.to_string(),
            "--format",
            format,
        ])
    }

    /// Sends `sig` to every process of the store: the one the fixture
    /// started and all below it (PostgreSQL's backends each make a
    /// session of their own, so the group is not enough).
    pub fn signal_store(&self, sig: i32) {
        let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
            .expect("/proc")
            .flatten()
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                let ppid = stat
                    .rsplit_once(')')?
                    .1
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()?;
                Some((pid, ppid))
            })
            .collect();
        let mut all = vec![self.store.child.id()];
        let mut i = 0;
        while i < all.len() {
            let p = all[i];
            all.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
            i += 1;
        }
        for p in all {
            // SAFETY: signals a process the fixture started or its child.
            unsafe {
                libc::kill(p as i32, sig);
            }
        }
    }

    /// `sql` on the store, as its owner; its error, if any.
    pub fn store_try(&self, sql: &str) -> Result<String, String> {
        fixture::postgres_as(&self.store, "bench", "results", sql)
    }

    /// `sql` on the store, as its owner.
    pub fn store_sql(&self, sql: &str) -> String {
        fixture::postgres_as(&self.store, "bench", "results", sql).expect("query the store")
    }
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The manifest's `args:` with its `$(VAR)`s set as Kubernetes would.
fn manifest_args(vars: &[(&str, &str)]) -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/kubernetes/ampbench-clients.yaml"
    );
    let m = std::fs::read_to_string(path).expect("the manifest");
    let mut args = Vec::new();
    let mut inside = false;
    for l in m.lines() {
        let t = l.trim();
        if t == "args:" {
            inside = true;
            continue;
        }
        if inside {
            let Some(item) = t.strip_prefix("- ") else {
                break;
            };
            let mut a = item.trim_matches('"').to_string();
            for (k, v) in vars {
                a = a.replace(&format!("$({k})"), v);
            }
            args.push(a);
        }
    }
    assert!(args.len() > 5, "no args in the manifest: {args:?}");
    args
}

/// The merged step named `step` of a JSON report, and each client's rows.
pub fn step<'a>(j: &'a serde_json::Value, step: &str) -> &'a serde_json::Value {
    j["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["step"] == step)
        .unwrap_or_else(|| panic!("no step {step}"))
}

pub fn client_rows<'a>(j: &'a serde_json::Value, step: &str) -> Vec<&'a serde_json::Value> {
    j["clients"]["steps"]
        .as_array()
        .expect("clients' steps")
        .iter()
        .filter(|s| s["step"] == step)
        .collect()
}

pub fn latest_run(w: &World) -> i64 {
    w.store_sql("SELECT max(id) FROM runs")
        .trim()
        .parse()
        .expect("a run id")
}

#[test]
fn three_clients_one_run() {
    let w = match World::new() {
        Ok(w) => w,
        Err(why) => {
            ampbench::testing::skip("targets", &format!("no namespaces or servers here: {why}"));
            return;
        }
    };
    let t0 = Instant::now();
    // 1. LinkBench, the manifest's command; client 1's clock 5 s ahead.
    // A small out-degree curve is added: the clients split the load
    // whatever its size, and the built-in curve's first node alone holds
    // 961,963 links.
    let mut args = manifest_args(&[
        ("TARGET", &w.target),
        ("RESULTS", &w.results),
        ("RUN_NAME", "lb"),
    ]);
    args.extend(["-p".to_string(), common::small_degrees(w.tmp.path())]);
    // Paced: what is checked is how the clients' rows merge, not how fast
    // three clients at full speed go on two cores.
    args.extend(["--rate".to_string(), "500".to_string()]);
    let outs = w.together(
        &[0, 1, 2],
        |_| args.clone(),
        |k| {
            let mut e = vec![("JOB_COMPLETION_INDEX", k.to_string())];
            if k == 1 {
                e.push(("AMPBENCH_TEST_CLOCK_OFFSET", "5".into()));
            }
            e
        },
    );
    for (k, o) in outs.iter().enumerate() {
        let t = text(o);
        assert!(o.status.success(), "client {k} failed:\n{t}");
        assert!(!t.contains(PASSWORD), "a password was printed:\n{t}");
        assert!(t.contains(&format!("client {k} of 3")), "{t}");
    }
    eprintln!("linkbench, 3 clients: {:.1} s", t0.elapsed().as_secs_f64());
    let run = latest_run(&w);
    let j: serde_json::Value = serde_json::from_str(&w.report(run, "json")).expect("JSON");
    assert_eq!(j["run"]["status"], "done", "{}", j["run"]);
    for s in ["load", "request"] {
        let merged = step(&j, s);
        let rows = client_rows(&j, s);
        assert_eq!(rows.len(), 3, "{s}: {rows:?}");
        let sum: f64 = rows.iter().map(|r| r["ops"].as_f64().expect("ops")).sum();
        assert_eq!(merged["ops"].as_f64(), Some(sum), "{s}: merged ops");
        let tput: f64 = rows
            .iter()
            .map(|r| r["ops_per_sec"].as_f64().expect("ops/s"))
            .sum();
        // Over the common window on the store's clock: at most the sum of
        // the clients' rates, and near it when they ran together.
        let m = merged["ops_per_sec"].as_f64().expect("merged ops/s");
        assert!(m <= tput * (1.0 + 1e-9), "{s}: {m} vs {tput}");
        if s == "request" {
            assert!(m >= 0.9 * tput, "{s}: {m} vs {tput}");
        }
        let mismatches = &merged["extras"]["consistency_mismatches"];
        assert!(
            mismatches.is_null() && s == "load" || mismatches.as_f64() == Some(0.0),
            "{s}: {mismatches}"
        );
    }
    // The load split the ids: every node was loaded once.
    let load = step(&j, "load");
    assert_eq!(
        load["extras"]["nodes_loaded"].as_f64(),
        Some(5000.0),
        "{load}"
    );
    // The skewed clock was measured, and its intervals line up.
    let joined = j["clients"]["joined"].as_array().expect("joined");
    let skew = |k: usize| joined[k]["skew"].as_f64().expect("skew");
    assert!((skew(1) + 5.0).abs() < 0.5, "client 1's skew {}", skew(1));
    assert!(skew(0).abs() < 0.5 && skew(2).abs() < 0.5, "{joined:?}");
    let req = step(&j, "request");
    let n = req["intervals"].as_array().expect("intervals").len();
    assert!(
        (4..=6).contains(&n),
        "{n} merged intervals for a 5 s step of 1 s intervals"
    );
    let lags: Vec<f64> = client_rows(&j, "request")
        .iter()
        .map(|r| r["start_lag"].as_f64().expect("start lag"))
        .collect();
    eprintln!("request: start lags after the barrier (s): {lags:?}");
    assert!(lags.iter().all(|l| *l > -0.5 && *l < 2.0), "{lags:?}");
    // Exact percentiles: one histogram of every recorded value.
    exact_percentiles(&w, run);
    // The text report: the clients' rows and the merged one.
    let txt = w.report(run, "text");
    assert!(txt.contains("each client's steps"), "{txt}");
    assert!(
        txt.lines()
            .any(|l| l.contains(" request ") && l.contains(" all ")),
        "{txt}"
    );
    // The file and the store give the same reports.
    same_reports(&w, run);

    // 2. The insert benchmark: each client its own tables.
    let ins = |k: usize| -> Vec<String> {
        format!(
            "run -w insert --target {} --results {} --clients 3 --client {k} --run-name ins \
             -p load_rows=3000 -p i1_rows=300 -p i2_rows=100 --threads 1 --duration 2 --warmup 0 --interval 1 \
             --steps l.i0,l.x,l.i1",
            w.target, w.results
        )
        .split_whitespace()
        .map(String::from)
        .collect()
    };
    let outs = w.together(&[0, 1, 2], ins, |_| Vec::new());
    let all: Vec<String> = outs
        .iter()
        .enumerate()
        .map(|(k, o)| format!("insert client {k} ({}):\n{}", o.status, text(o)))
        .collect();
    assert!(
        outs.iter().all(|o| o.status.success()),
        "{}",
        all.join("\n")
    );
    let j: serde_json::Value =
        serde_json::from_str(&w.report(latest_run(&w), "json")).expect("JSON");
    let l = step(&j, "l.i0");
    assert_eq!(l["ops"].as_f64(), Some(9000.0), "{}", l["ops"]);
    let notes: Vec<String> = step(&j, "l.i1")["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(|n| n.as_str().map(String::from))
        .filter(|n| n.contains("check:"))
        .collect();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(
        notes.iter().all(|n| n.contains(" 0 mismatches")),
        "{notes:?}"
    );

    // 3. A client that never comes: the barrier names it.
    let short = |k: usize| -> Vec<String> {
        format!(
            "run -w ycsb --steps load -p recordcount=300 --target {} --results {} --clients 3 --client {k} --run-name missing --barrier-timeout 3",
            w.target, w.results
        )
        .split_whitespace()
        .map(String::from)
        .collect()
    };
    for o in w.together(&[0, 1], short, |_| Vec::new()) {
        let t = text(&o);
        assert!(!o.status.success(), "{t}");
        assert!(
            t.lines()
                .any(|l| l.contains("client(s) 2 did not arrive within 3 s")),
            "{t}"
        );
    }

    // 4. A client killed mid-step: the run is partial, the others' kept.
    killed_client(&w);
    // Nothing of ampbench's is left on the target.
    let left =
        fixture::mariadb_root(&w.db[0], "SHOW DATABASES LIKE 'ampbench%'").expect("databases");
    assert!(left.trim().is_empty(), "left on the target: {left}");
    eprintln!(
        "three clients, all parts: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// The merged p50/p99/p99.9 of the request step against one histogram
/// made of every value the clients recorded (read from a copy of the
/// store in a file).
fn exact_percentiles(w: &World, run: i64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("copy.db");
    w.here(&[
        "copy",
        "--from",
        &w.results,
        "--to",
        file.to_str().expect("path"),
        "--run",
        &run.to_string(),
    ]);
    let c = rusqlite::Connection::open(&file).expect("the copy");
    let mut st = c
        .prepare(
            "SELECT l.op, l.hist FROM latencies l JOIN steps s ON s.id = l.step_id \
             WHERE s.run_id = ?1 AND s.step = 'request' AND l.interval_idx = -1",
        )
        .expect("query");
    let rows: Vec<(String, Vec<u8>)> = st
        .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert!(rows.len() >= 3 * 5, "{} histograms", rows.len());
    let mut all: std::collections::BTreeMap<String, hdrhistogram::Histogram<u64>> =
        Default::default();
    for (op, b) in rows {
        let l = ampbench::metrics::Latency::from_bytes(&b).expect("histogram");
        let h = all.entry(op).or_insert_with(|| {
            hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("hist")
        });
        for v in l.histogram().iter_recorded() {
            h.record_n(v.value_iterated_to(), v.count_at_value())
                .expect("record");
        }
    }
    let j: serde_json::Value = serde_json::from_str(&w.report(run, "json")).expect("JSON");
    let merged = step(&j, "request")["latency"].clone();
    // The interval log of the merged step holds every client's values.
    let logged = hlog_counts(&w.report(run, "hlog"), "/request/");
    for (op, h) in &all {
        let s = &merged[op.as_str()];
        assert!(s.is_object(), "no merged {op}: {merged}");
        assert_eq!(s["count"].as_u64(), Some(h.len()), "{op} count");
        assert_eq!(logged.get(op.as_str()), Some(&h.len()), "{op} in the hlog");
        for (q, k) in [(0.5, "p50"), (0.99, "p99"), (0.999, "p999")] {
            assert_eq!(s[k].as_u64(), Some(h.value_at_quantile(q)), "{op} {k}");
        }
    }
}

/// Values per operation in an interval log's histograms whose tag holds
/// `step` (`/request/`).
fn hlog_counts(log: &str, step: &str) -> std::collections::BTreeMap<String, u64> {
    use base64::Engine as _;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let mut de = Deserializer::new();
    let mut counts = std::collections::BTreeMap::new();
    for e in IntervalLogIterator::new(log.as_bytes()) {
        let Ok(LogEntry::Interval(h)) = e else {
            continue;
        };
        let tag = h.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
        let Some((_, op)) = tag.split_once(step) else {
            continue;
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(h.encoded_histogram())
            .expect("base64");
        let hist: hdrhistogram::Histogram<u64> = de
            .deserialize(&mut std::io::Cursor::new(bytes))
            .expect("a histogram");
        *counts.entry(op.to_string()).or_default() += hist.len();
    }
    counts
}

/// Every report format of `run` from the store and from a file copy.
fn same_reports(w: &World, run: i64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("same.db");
    let f = file.to_str().expect("path");
    w.here(&[
        "copy",
        "--from",
        &w.results,
        "--to",
        f,
        "--run",
        &run.to_string(),
    ]);
    for format in ["text", "summary", "json", "csv", "html", "markdown", "hlog"] {
        let a = w.report(run, format);
        let b = w.here(&[
            "report",
            "--results",
            f,
            "--run",
            &run.to_string(),
            "--format",
            format,
        ]);
        assert!(
            a == b,
            "{format}: the store's and the file's reports differ"
        );
    }
}

fn killed_client(w: &World) {
    let args = |k: usize| -> Vec<String> {
        format!(
            "run -w ycsb --steps load,a -p recordcount=3000 --target {} --results {} --clients 3 --client {k} \
             --run-name killed --duration 6 --warmup 0 --interval 1 --barrier-timeout 60",
            w.target, w.results
        )
        .split_whitespace()
        .map(String::from)
        .collect()
    };
    let mut kids: Vec<Child> = (0..3)
        .map(|k| w.client(k, &args(k), &[]).spawn().expect("spawn"))
        .collect();
    // Client 2 dies two seconds into step a.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        let n = w.store_sql(
            "SELECT count(*) FROM steps s JOIN runs r ON r.id = s.run_id \
             WHERE r.name = 'killed' AND s.client = 2 AND s.step = 'a'",
        );
        if n.trim() == "1" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    // `ip netns exec` runs ampbench in its own process: the kill is its.
    // SAFETY: signals a child this test spawned.
    unsafe {
        libc::kill(kids[2].id() as i32, libc::SIGKILL);
    }
    let dead = kids
        .pop()
        .expect("client 2")
        .wait_with_output()
        .expect("wait");
    assert!(!dead.status.success());
    // The others finish; a partial run exits with 1, as any run not
    // done does.
    for (k, c) in kids.into_iter().enumerate() {
        let o = c.wait_with_output().expect("wait");
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "client {k}:\n{t}");
        assert!(t.contains(" · partial"), "client {k}:\n{t}");
    }
    let run = latest_run(w);
    let j: serde_json::Value = serde_json::from_str(&w.report(run, "json")).expect("JSON");
    assert_eq!(j["run"]["status"], "partial", "{}", j["run"]);
    let rows = client_rows(&j, "a");
    assert_eq!(rows.len(), 3);
    for r in &rows {
        let k = r["client"].as_u64().expect("client");
        if k == 2 {
            assert_eq!(r["status"], "failed", "{r}");
            assert!(
                r["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("client 2 died")),
                "{r}"
            );
        } else {
            assert_eq!(r["status"], "done", "{r}");
            assert!(r["ops"].as_f64().is_some_and(|o| o > 0.0), "{r}");
        }
    }
    assert_eq!(step(&j, "a")["status"], "partial");
    let died = w.store_sql(&format!(
        "SELECT status FROM run_clients WHERE run_id = {run} AND client = 2"
    ));
    assert_eq!(died.trim(), "died");
}
