//! A MariaDB Galera cluster of three InnoDB nodes that ampbench starts:
//! a distributed target on one machine, for what replication costs (write
//! sets, certification conflicts, flow control) beside a single server.
//!
//! Each node is the MariaDB server of [`mariadb`](super::mariadb) (its
//! own data directory under the engine's, its socket, its settings) with
//! Debian's Galera provider (galera-4). Node 1 bootstraps the cluster;
//! nodes 2 and 3 join it one after the other by a state transfer (rsync)
//! and are used once synced.
//!
//! **Isolation.** A Galera node admits any peer that reaches its group
//! port and sends it the whole database, with no password. The nodes
//! therefore run in a private network namespace ampbench makes (see
//! [`PrivateNet`]): their group, state-transfer and client ports are on
//! that namespace's loopback, which no user of the machine but root can
//! reach (processes of the servers' own user, `mysql`, could act inside
//! it through a node, as they can read its data directory). Workers connect over TCP from inside it (`setns` for the
//! connect only) or over each node's socket (`--transport socket`), and
//! connections go to the nodes in turn, as to a target's endpoints.
//!
//! **Figures.** The cluster is the engine: the CPU, IO and memory of all
//! three servers, their data files and their counters are summed (three
//! copies of the data: space-amp is about three times one server's), and
//! consistency checks run on every node once each has applied what the
//! others committed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use mysql::prelude::Queryable;

use super::mariadb::{MariaDb, Member, root_conn};
use super::server::PrivateNet;
use super::sql::{Dialect, SqlConn, SqlEngine};
use super::target::mysql::{Counters, global_status};
use super::{
    Conformance, Engine, EngineDef, EngineInfo, EngineKind, EngineRef, EngineStats, OpenSpec,
    Structure,
};

/// The registry entry.
pub const ENGINES: &[EngineDef] = &[EngineDef {
    name: "mariadb-galera",
    about: "MariaDB Galera cluster of three InnoDB nodes (servers ampbench starts in a private network; clients go to the nodes in turn)",
    structure: Structure::UpdateInPlaceBTree,
    model: super::mariadb::INNODB_MODEL,
    conformance: Conformance::NONE,
    server: Some(crate::address::Protocol::MySql),
    run_as: Some("mysql"),
    library: || None,
    library_version,
    default_settings: |cache| super::mariadb::default_settings(false, cache),
    io_bound: super::mariadb::innodb_io_bound,
    direct_io: true,
    // The cluster's nodes share the one limit.
    presets: &[(crate::presets::ERA_2015, |m| {
        vec![(
            "innodb_buffer_pool_size".into(),
            crate::presets::innodb_pool(m, NODES as u64),
        )]
    })],
    validate: super::mariadb_options::validate,
    guard: super::mariadb_options::guard,
    open: |kind, spec| match &spec.target {
        Some(t) => super::target::mysql::open(kind, spec, t),
        None => Ok(Box::new(Galera::open(kind, spec)?)),
    },
}];

/// Nodes in the cluster.
pub const NODES: usize = 3;

/// Where Debian's galera-4 puts the provider.
const PROVIDERS: &[&str] = &[
    "/usr/lib/galera/libgalera_smm.so",
    "/usr/lib/libgalera_smm.so",
];

/// The Galera provider library installed here.
fn provider() -> Result<&'static str> {
    PROVIDERS
        .iter()
        .copied()
        .find(|p| std::path::Path::new(p).exists())
        .ok_or_else(|| {
            anyhow!(
                "no Galera provider ({}; make deps installs galera-4)",
                PROVIDERS[0]
            )
        })
}

/// The server's version and the provider's presence.
fn library_version() -> Result<String> {
    let server = super::mariadb::library_version()?;
    provider()?;
    // rsync makes the state transfers.
    if which("rsync").is_none() {
        bail!("rsync not found (make deps installs it): nodes join by an rsync state transfer");
    }
    Ok(format!("{server} with Galera (galera-4)"))
}

/// `prog` on PATH.
fn which(prog: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(prog))
        .find(|p| p.is_file())
}

/// The group-communication port of node `i` (0-based) in the private
/// network; the next two are its incremental and full state transfers'.
fn group_port(i: usize) -> u16 {
    4567 + 10 * i as u16
}

/// The cluster's settings for node `i`.
fn member_settings(i: usize, provider: &str) -> Vec<(String, String)> {
    let g = group_port(i);
    let all: Vec<String> = (0..NODES)
        .map(|j| format!("127.0.0.1:{}", group_port(j)))
        .collect();
    [
        ("wsrep_on", "ON".to_string()),
        ("wsrep_provider", provider.to_string()),
        ("wsrep_cluster_name", "ampbench".into()),
        (
            "wsrep_cluster_address",
            format!("gcomm://{}", all.join(",")),
        ),
        ("wsrep_node_name", format!("node{}", i + 1)),
        ("wsrep_node_address", format!("127.0.0.1:{g}")),
        (
            "wsrep_provider_options",
            format!(
                "\"gmcast.listen_addr=tcp://127.0.0.1:{g};ist.recv_addr=127.0.0.1:{}\"",
                g + 1
            ),
        ),
        ("wsrep_sst_receive_address", format!("127.0.0.1:{}", g + 2)),
        ("wsrep_sst_method", "rsync".into()),
        // What Galera requires of InnoDB: row-based write sets and
        // interleaved auto-increment locks.
        ("binlog_format", "ROW".into()),
        ("innodb_autoinc_lock_mode", "2".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A Galera cluster of [`NODES`] MariaDB servers.
pub struct Galera {
    info: EngineInfo,
    nodes: Vec<MariaDb>,
    next: AtomicUsize,
}

impl Galera {
    /// Makes the private network, starts node 1 as a new cluster and the
    /// others joining it, each once the one before is synced.
    pub fn open(kind: EngineKind, spec: &OpenSpec) -> Result<Galera> {
        let provider = provider()?;
        let net = Arc::new(PrivateNet::new().context("mariadb-galera")?);
        let mut nodes: Vec<MariaDb> = Vec::new();
        for i in 0..NODES {
            let member = Member {
                settings: member_settings(i, provider),
                args: if i == 0 {
                    vec!["--wsrep-new-cluster".into()]
                } else {
                    Vec::new()
                },
                net: net.clone(),
                port: 3306 + i as u16,
                password: nodes.first().map(|n| n.password.clone()),
            };
            let node_spec = OpenSpec {
                dir: spec.dir.join(format!("node{}", i + 1)),
                ..spec.clone()
            };
            std::fs::create_dir_all(&node_spec.dir)
                .with_context(|| format!("cannot create {}", node_spec.dir.display()))?;
            let node = MariaDb::start(kind, &node_spec, Some(&member))
                .with_context(|| format!("mariadb-galera node {}", i + 1))?;
            nodes.push(node);
        }
        let mut c = nodes[0].admin()?;
        let size: Option<(String, String)> =
            c.query_first("SHOW STATUS LIKE 'wsrep_cluster_size'")?;
        let size = size.map(|(_, v)| v).unwrap_or_default();
        if size != NODES.to_string() {
            bail!("mariadb-galera: the cluster has {size} nodes, not {NODES}");
        }
        let provider_version: Option<(String, String)> =
            c.query_first("SHOW STATUS LIKE 'wsrep_provider_version'")?;
        let first = &nodes[0].info;
        // The user's settings and the cluster's, as node 1 has them.
        let mut settings = first.settings.clone();
        settings.retain(|(k, _)| {
            !matches!(
                k.as_str(),
                "wsrep_node_name"
                    | "wsrep_node_address"
                    | "wsrep_provider_options"
                    | "wsrep_sst_receive_address"
            )
        });
        settings.push(("nodes".into(), NODES.to_string()));
        Ok(Galera {
            info: EngineInfo {
                kind,
                version: format!(
                    "{} with Galera {}",
                    first.version,
                    provider_version.map(|(_, v)| v).unwrap_or_default()
                ),
                settings,
                dir: spec.dir.clone(),
            },
            nodes,
            next: AtomicUsize::new(0),
        })
    }

    /// A root connection to each node.
    fn admins(&self) -> Result<Vec<mysql::Conn>> {
        self.nodes.iter().map(|n| n.admin()).collect()
    }

    /// Waits until every node has applied what any node had committed when
    /// called (each one's `wsrep_last_committed` at least the highest
    /// seen first), at most `limit`: writes that go on meanwhile do not
    /// hold it up.
    fn caught_up(&self, limit: Duration) -> Result<()> {
        let t = Instant::now();
        let mut conns = self.admins()?;
        let committed = |c: &mut mysql::Conn| -> Result<u64> {
            let rows: Vec<(String, String)> = c.query("SHOW STATUS LIKE 'wsrep_last_committed'")?;
            rows.first()
                .and_then(|(_, v)| v.parse().ok())
                .ok_or_else(|| anyhow!("mariadb-galera: no wsrep_last_committed"))
        };
        let mut target = 0;
        for c in &mut conns {
            target = target.max(committed(c)?);
        }
        loop {
            let seen = conns
                .iter_mut()
                .map(committed)
                .collect::<Result<Vec<u64>>>()?;
            if seen.iter().all(|s| *s >= target) {
                return Ok(());
            }
            if t.elapsed() > limit {
                bail!(
                    "mariadb-galera: the nodes did not apply write set {target} within {} s (last committed: {seen:?})",
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until every node has applied every write set the cluster
    /// committed (the same `wsrep_last_committed` on all, nothing in
    /// their receive queues), at most `limit`: for a consistency check,
    /// when nothing else writes.
    fn applied_everywhere(&self, limit: Duration) -> Result<()> {
        let t = Instant::now();
        let mut conns = self.admins()?;
        loop {
            let mut seen = Vec::new();
            for c in &mut conns {
                let rows: Vec<(String, String)> = c.query(
                    "SHOW STATUS WHERE Variable_name IN ('wsrep_last_committed', 'wsrep_local_recv_queue')",
                )?;
                let get = |k: &str| rows.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                seen.push((get("wsrep_last_committed"), get("wsrep_local_recv_queue")));
            }
            let same = seen.windows(2).all(|w| w[0].0 == w[1].0);
            let empty = seen.iter().all(|s| s.1.as_deref() == Some("0"));
            if same && empty {
                return Ok(());
            }
            if t.elapsed() > limit {
                bail!(
                    "mariadb-galera: the nodes did not converge within {} s (last committed: {:?})",
                    limit.as_secs(),
                    seen.iter()
                        .map(|s| s.0.clone().unwrap_or_default())
                        .collect::<Vec<_>>()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl SqlEngine for Galera {
    fn dialect(&self) -> Dialect {
        Dialect::MySql
    }
    fn table_options(&self) -> &str {
        "ENGINE=InnoDB"
    }
    fn connect(&self) -> Result<Box<dyn SqlConn>> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.nodes.len();
        self.nodes[i].connect()
    }
    /// A DDL statement returns once the node it was sent to applied it;
    /// the others apply it in the same order but later, so a loader on
    /// node 2 could find no table yet (ERROR 1146, seen in CI). The
    /// schema is ready once every node has caught up with it.
    fn schema_made(&self) -> Result<()> {
        self.caught_up(Duration::from_secs(120))
    }
    fn before_step(&self) -> Result<()> {
        self.caught_up(Duration::from_secs(120))
    }
    fn server(&self) -> Option<&crate::server::Server> {
        // crashcheck restarts one server; a cluster is not one.
        None
    }
    fn hung(&self) -> Option<String> {
        self.nodes.iter().find_map(|n| n.server.hung())
    }
    fn nodes(&self) -> Result<Vec<(String, &dyn SqlEngine)>> {
        self.applied_everywhere(Duration::from_secs(120))?;
        Ok(self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("node{}", i + 1), n as &dyn SqlEngine))
            .collect())
    }
}

/// Counter sources summed over the nodes: the cluster's reads and writes.
struct Summed(Vec<Arc<dyn crate::probe::CounterSource>>);

impl crate::probe::CounterSource for Summed {
    fn read(&self) -> Option<crate::probe::ServerCounters> {
        let mut all = self.0.iter().map(|s| s.read());
        let mut sum = all.next()??;
        for c in all {
            sum.add(&c?);
        }
        Some(sum)
    }
    fn source(&self) -> &'static str {
        "SHOW GLOBAL STATUS (summed over the nodes)"
    }
}

impl Engine for Galera {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Sql(self)
    }
    fn data_paths(&self) -> Vec<std::path::PathBuf> {
        self.nodes.iter().flat_map(|n| n.data_paths()).collect()
    }
    fn pid(&self) -> Option<u32> {
        self.nodes.first().and_then(|n| n.pid())
    }
    fn pids(&self) -> Vec<u32> {
        self.nodes.iter().filter_map(|n| n.pid()).collect()
    }
    fn counters(&self) -> Option<Arc<dyn crate::probe::CounterSource>> {
        let each: Vec<_> = self
            .nodes
            .iter()
            .map(|n| {
                let (socket, timeout) = (n.socket.clone(), n.timeout);
                Arc::new(Counters::new(
                    Box::new(move || Ok(root_conn(&socket, timeout)?)),
                    "ampbench".into(),
                    false,
                )) as Arc<dyn crate::probe::CounterSource>
            })
            .collect();
        Some(Arc::new(Summed(each)))
    }
    fn stats(&self) -> Result<EngineStats> {
        // Every counter summed over the nodes (the cluster's), under its
        // own name; node 1's InnoDB status text.
        let mut values: Vec<(String, f64)> = Vec::new();
        for n in &self.nodes {
            for (k, v) in global_status(&mut n.admin()?)? {
                match values.iter_mut().find(|(s, _)| *s == k) {
                    Some((_, sum)) => *sum += v,
                    None => values.push((k, v)),
                }
            }
        }
        let mut st = self.nodes[0].stats()?;
        st.values = values;
        Ok(st)
    }
    fn settle(&self) -> Result<String> {
        let mut said = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            said.push(format!("node{}: {}", i + 1, n.settle()?));
        }
        Ok(said.join("; "))
    }
    fn close(self: Box<Self>) -> Result<()> {
        // The joiners first, node 1 (the cluster's first) last; every
        // node is stopped even when one fails to.
        let mut first_err = None;
        for n in self.nodes.into_iter().rev() {
            if let Err(e) = Box::new(n).close() {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_have_ports_of_their_own_and_know_each_other() {
        let a = member_settings(0, "/p.so");
        let b = member_settings(2, "/p.so");
        let get = |v: &[(String, String)], k: &str| {
            v.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(
            get(&a, "wsrep_cluster_address"),
            get(&b, "wsrep_cluster_address")
        );
        assert_eq!(
            get(&a, "wsrep_cluster_address"),
            "gcomm://127.0.0.1:4567,127.0.0.1:4577,127.0.0.1:4587"
        );
        assert_eq!(get(&b, "wsrep_node_address"), "127.0.0.1:4587");
        assert_eq!(get(&b, "wsrep_sst_receive_address"), "127.0.0.1:4589");
        assert!(get(&b, "wsrep_provider_options").contains("ist.recv_addr=127.0.0.1:4588"));
    }
}
