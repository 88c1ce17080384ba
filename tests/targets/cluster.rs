//! A two-node Galera cluster (Debian's MariaDB with galera-4), each node
//! in a network namespace of its own, joined with the client's namespace
//! by a bridge there (addresses in a /28 of 10.250.0.0/16 that exist only
//! inside the namespaces). Node 1 bootstraps the cluster, node 2 joins it
//! by a state transfer (rsync). Everything is removed on drop.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::fixture::{
    PASSWORD, Proc, del_ns, in_ns, install_db, ip, server_dir, sh, suffix, wait_until,
};

/// The client's namespace and the nodes' namespaces, bridged.
pub struct Bridged {
    /// Where ampbench runs (the bridge's side).
    pub client: String,
    /// The nodes' namespaces.
    pub nodes: Vec<String>,
    /// The nodes' addresses.
    pub ips: Vec<String>,
}

impl Bridged {
    /// Makes the namespaces and the bridge, or says why it cannot.
    pub fn new(n: usize) -> Result<Bridged, String> {
        // A /28: the bridge's address and 13 nodes'.
        assert!(n <= 13, "{n} namespaces do not fit a /28");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root: network namespaces need it".into());
        }
        let s = suffix();
        let mut b = Bridged {
            client: format!("ampt-gc-{s}"),
            nodes: Vec::new(),
            ips: Vec::new(),
        };
        ip(&["netns", "add", &b.client])?;
        let third = u8::from_str_radix(&s[..2], 16).unwrap_or(0);
        let fourth = (u8::from_str_radix(&s[2..4], 16).unwrap_or(0) & 0x0f) * 16;
        let addr = |i: usize| format!("10.250.{third}.{}", fourth as usize + i);
        let br = format!("agb{s}");
        ip(&["-n", &b.client, "link", "add", &br, "type", "bridge"])?;
        ip(&[
            "-n",
            &b.client,
            "addr",
            "add",
            &format!("{}/28", addr(1)),
            "dev",
            &br,
        ])?;
        ip(&["-n", &b.client, "link", "set", &br, "up"])?;
        ip(&["-n", &b.client, "link", "set", "lo", "up"])?;
        for i in 0..n {
            let ns = format!("ampt-g{i}-{s}");
            ip(&["netns", "add", &ns])?;
            b.nodes.push(ns.clone());
            let (outer, inner) = (format!("agv{i}{s}"), format!("agp{i}{s}"));
            // Made in the namespaces directly: nothing is left in the
            // host's if a step fails.
            ip(&[
                "link", "add", &outer, "netns", &b.client, "type", "veth", "peer", "name", &inner,
                "netns", &ns,
            ])?;
            ip(&["-n", &b.client, "link", "set", &outer, "master", &br])?;
            ip(&["-n", &b.client, "link", "set", &outer, "up"])?;
            let at = addr(2 + i);
            ip(&["-n", &ns, "addr", "add", &format!("{at}/28"), "dev", &inner])?;
            ip(&["-n", &ns, "link", "set", &inner, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            b.ips.push(at);
        }
        Ok(b)
    }

    /// A command run in the client namespace.
    pub fn in_client(&self, prog: &str) -> Command {
        in_ns(&self.client, prog)
    }
}

impl Drop for Bridged {
    fn drop(&mut self) {
        del_ns(std::iter::once(&self.client).chain(&self.nodes));
    }
}

/// Runs `sql` as root on node `p` over its socket.
pub fn node_root(p: &Proc, sql: &str) -> Result<String, String> {
    sh(Command::new("mariadb")
        .arg(format!(
            "--socket={}",
            p.dir.path().join("s.sock").display()
        ))
        .args(["-uroot", "-N", "-e", sql]))
}

/// A Galera cluster of one node per namespace `on` of `net` (the others
/// are clients or other servers), synced: `bench` (password
/// [`PASSWORD`]) may create `ampbench_…` databases.
pub fn galera_on(net: &Bridged, on: std::ops::Range<usize>) -> Result<Vec<Proc>, String> {
    let (names, ips) = (&net.nodes[on.clone()], &net.ips[on]);
    let provider = [
        "/usr/lib/galera/libgalera_smm.so",
        "/usr/lib/libgalera_smm.so",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
    .ok_or("no Galera provider (libgalera_smm.so; Debian's galera-4)")?;
    let members = ips.join(",");
    let mut nodes: Vec<Proc> = Vec::new();
    for (i, (ns, at)) in names.iter().zip(ips).enumerate() {
        let (dir, _, _) = server_dir(&format!("ampt-galera{i}"), "mysql")?;
        let d = dir.path();
        install_db(d)?;
        let cnf = d.join("my.cnf");
        std::fs::write(
            &cnf,
            format!(
                "[mysqld]\nuser=mysql\ndatadir={d}/data\ntmpdir={d}/tmp\nsocket={d}/s.sock\nport=3306\nbind-address={at}\n\
                 skip-name-resolve\nskip-log-bin\nbinlog_format=ROW\ndefault_storage_engine=InnoDB\n\
                 innodb_autoinc_lock_mode=2\ninnodb_buffer_pool_size=64M\nlog-error={d}/error.log\n\
                 pid-file={d}/m.pid\nwsrep_on=ON\nwsrep_provider={provider}\n\
                 wsrep_cluster_address=gcomm://{members}\nwsrep_cluster_name=ampt\n\
                 wsrep_node_address={at}\nwsrep_sst_method=rsync\n",
                d = d.display()
            ),
        )
        .map_err(|e| e.to_string())?;
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, "mariadbd"])
            .arg(format!("--defaults-file={}", cnf.display()));
        if i == 0 {
            c.arg("--wsrep-new-cluster");
        }
        use std::os::unix::process::CommandExt;
        let child = c
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| e.to_string())?;
        nodes.push(Proc {
            child,
            stop: libc::SIGTERM,
            dir,
        });
        let p = &nodes[i];
        // Ready once it is a synced member (node 2 after its transfer).
        wait_until(
            &format!("galera node {}", i + 1),
            Duration::from_secs(120),
            || {
                node_root(p, "SHOW STATUS LIKE 'wsrep_local_state_comment'")
                    .is_ok_and(|s| s.contains("Synced"))
            },
        )?;
        if i == 0 {
            node_root(
                p,
                &format!(
                    "CREATE USER 'bench'@'%' IDENTIFIED BY '{PASSWORD}'; \
                     GRANT ALL ON `ampbench\\_%`.* TO 'bench'@'%'"
                ),
            )?;
        }
    }
    let size = node_root(&nodes[0], "SHOW STATUS LIKE 'wsrep_cluster_size'")?;
    if !size.trim().ends_with(&ips.len().to_string()) {
        return Err(format!("the cluster did not form: {size}"));
    }
    Ok(nodes)
}

/// The node's count of connections made to it since it started.
pub fn connections(p: &Proc) -> u64 {
    node_root(p, "SHOW GLOBAL STATUS LIKE 'Connections'")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}
