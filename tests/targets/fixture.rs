//! Servers ampbench did not start, for `--target`: a client and a server
//! network namespace joined by a veth pair (addresses in a /29 of 10.250.0.0/16
//! that exist only inside the two namespaces), and a MariaDB or a
//! PostgreSQL started by this fixture — not by ampbench's engine code —
//! in the server namespace, with password authentication. Everything is
//! removed on drop: servers killed, namespaces deleted.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A random hex suffix for names (namespaces, interfaces).
pub fn suffix() -> String {
    let mut b = [0u8; 3];
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .expect("read /dev/urandom");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn sh(cmd: &mut Command) -> Result<String, String> {
    let o = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

pub fn ip(args: &[&str]) -> Result<String, String> {
    sh(Command::new("ip").args(args))
}

/// Two namespaces and the veth pair between them.
pub struct Net {
    /// Where ampbench runs.
    pub client: String,
    /// Where the server runs.
    pub server: String,
    /// The server's address.
    pub server_ip: String,
    /// An address in the same subnet where nothing answers.
    pub dead_ip: String,
}

impl Net {
    /// Makes the namespaces, or says why it cannot.
    pub fn new() -> Result<Net, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root: network namespaces need it".into());
        }
        let s = suffix();
        let net = Net {
            client: format!("ampt-c-{s}"),
            server: format!("ampt-s-{s}"),
            server_ip: String::new(),
            dead_ip: String::new(),
        };
        ip(&["netns", "add", &net.client])?;
        // From here on, drop removes what exists.
        let mut net = net;
        ip(&["netns", "add", &net.server])?;
        let third = u8::from_str_radix(&s[..2], 16).unwrap_or(0);
        let fourth = (u8::from_str_radix(&s[2..4], 16).unwrap_or(0) & 0x1f) * 8;
        let addr = |i: u8| format!("10.250.{third}.{}", fourth + i);
        let (a, b) = (format!("vac{s}"), format!("vas{s}"));
        // Made in the namespaces directly: nothing is left in the host's
        // if a step fails.
        ip(&[
            "link",
            "add",
            &a,
            "netns",
            &net.client,
            "type",
            "veth",
            "peer",
            "name",
            &b,
            "netns",
            &net.server,
        ])?;
        for (ns, dev, at) in [(&net.client, &a, addr(1)), (&net.server, &b, addr(2))] {
            ip(&["-n", ns, "addr", "add", &format!("{at}/29"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        net.server_ip = addr(2);
        // Another host address of the subnet: on the link, never answered.
        net.dead_ip = addr(5);
        Ok(net)
    }

    /// A command run in the client namespace.
    pub fn in_client(&self, prog: &str) -> Command {
        in_ns(&self.client, prog)
    }
}

/// `prog` run in namespace `ns`.
pub fn in_ns(ns: &str, prog: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, prog]);
    c
}

/// Deletes namespaces (their interfaces go with them).
pub fn del_ns<'a>(names: impl IntoIterator<Item = &'a String>) {
    for ns in names {
        let _ = Command::new("ip")
            .args(["netns", "del", ns])
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        del_ns([&self.client, &self.server]);
    }
}

/// A server process the fixture started, stopped (with its group) on
/// drop: its shutdown signal first, so it takes its backends and shared
/// memory with it, then SIGKILL if it is still there after 20 s.
pub struct Proc {
    /// The process (a group leader).
    pub child: Child,
    /// The signal that shuts it down.
    pub stop: i32,
    /// Its scratch directory.
    pub dir: tempfile::TempDir,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let pid = self.child.id() as i32;
        // SAFETY: signals the process group this fixture made. SIGCONT
        // after the stop signal: a leader a test stopped and did not
        // resume would hold the signal, and the group wait out the 20 s
        // (the trust tests stop and resume the store's processes: its
        // drop took the 20 s after them, and 0.2 s with the SIGCONT).
        unsafe {
            libc::kill(-pid, self.stop);
            libc::kill(-pid, libc::SIGCONT);
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            // The group is gone once no process of it is left.
            // SAFETY: signal 0 only checks that the group exists.
            if unsafe { libc::kill(-pid, 0) } != 0 {
                break;
            }
            let _ = self.child.try_wait();
            std::thread::sleep(Duration::from_millis(100));
        }
        if t0.elapsed() >= Duration::from_secs(20) {
            eprintln!(
                "fixture: group {pid} still ran 20 s after signal {}: killed",
                self.stop
            );
        }
        // SAFETY: as above.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// The password the fixture's `bench` user logs in with.
pub const PASSWORD: &str = "fixture-Pw-7d1e";

pub fn wait_until(what: &str, t: Duration, mut ready: impl FnMut() -> bool) -> Result<(), String> {
    let t0 = Instant::now();
    while t0.elapsed() < t {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("{what} not ready within {t:?}"))
}

pub fn ids(user: &str) -> Result<(u32, u32), String> {
    let id = |flag: &str| -> Result<u32, String> {
        sh(Command::new("id").args([flag, user]))?
            .trim()
            .parse()
            .map_err(|e| format!("id {flag} {user}: {e}"))
    };
    Ok((id("-u")?, id("-g")?))
}

/// A scratch directory owned by the server's system user, with its ids.
pub fn server_dir(prefix: &str, user: &str) -> Result<(tempfile::TempDir, u32, u32), String> {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| e.to_string())?;
    let (uid, gid) = ids(user)?;
    std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).map_err(|e| e.to_string())?;
    Ok((dir, uid, gid))
}

/// Certificates for a server at `ip`, in `d` (P-256 keys: an RSA key
/// took 0.33 CPU-s to make, and each server makes three): `ca.pem` (the CA that
/// signed the server's), `server.pem` and `server.key` (the address and
/// `db.test` as its names; the key private to `uid`), and `other-ca.pem`,
/// a CA that signed nothing here.
fn certs(d: &std::path::Path, ip: &str, uid: u32, gid: u32) -> Result<(), String> {
    let ssl = |args: &[&str]| sh(Command::new("openssl").current_dir(d).args(args));
    for ca in ["ca", "other-ca"] {
        ssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN=ampbench fixture {ca}"),
            "-keyout",
            &format!("{ca}.key"),
            "-out",
            &format!("{ca}.pem"),
        ])?;
    }
    ssl(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-subj",
        "/CN=db.test",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ])?;
    std::fs::write(
        d.join("san.ext"),
        format!("subjectAltName=IP:{ip},DNS:db.test\n"),
    )
    .map_err(|e| e.to_string())?;
    ssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        "-out",
        "server.pem",
    ])?;
    let key = d.join("server.key");
    std::os::unix::fs::chown(&key, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| e.to_string())
}

/// A MariaDB in the server namespace on port 3306: `bench` may create
/// `ampbench_…` databases and owns `shop` (with a table of its own,
/// `orders`) and the empty `scratch`; `secure`, with the same password
/// and rights, must come over TLS (certificates from [`certs`]).
pub fn mariadb(net: &Net) -> Result<Proc, String> {
    let (dir, uid, gid) = server_dir("ampt-mariadb", "mysql")?;
    let d = dir.path();
    certs(d, &net.server_ip, uid, gid)?;
    install_db(d)?;
    let sock = d.join("s.sock");
    let cnf = d.join("my.cnf");
    std::fs::write(
        &cnf,
        format!(
            "[mysqld]\nuser=mysql\ndatadir={d}/data\ntmpdir={d}/tmp\nsocket={s}\nport=3306\nbind-address={ip}\nskip-name-resolve\nskip-log-bin\ninnodb_buffer_pool_size=64M\nlog-error={d}/error.log\npid-file={d}/m.pid\nssl-ca={d}/ca.pem\nssl-cert={d}/server.pem\nssl-key={d}/server.key\n",
            d = d.display(),
            s = sock.display(),
            ip = net.server_ip
        ),
    )
    .map_err(|e| e.to_string())?;
    let child = Command::new("ip")
        .args(["netns", "exec", &net.server, "mariadbd"])
        .arg(format!("--defaults-file={}", cnf.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| e.to_string())?;
    let p = Proc {
        child,
        stop: libc::SIGTERM,
        dir,
    };
    let client = |sql: &str| {
        sh(Command::new("mariadb")
            .arg(format!("--socket={}", sock.display()))
            .args(["-uroot", "-N", "-e", sql]))
    };
    wait_until("mariadbd", Duration::from_secs(60), || {
        client("SELECT 1").is_ok()
    })?;
    client(&format!(
        "CREATE USER 'bench'@'%' IDENTIFIED BY '{PASSWORD}'; \
         GRANT ALL ON `ampbench\\_%`.* TO 'bench'@'%'; \
         CREATE DATABASE shop; CREATE TABLE shop.orders (id INT PRIMARY KEY); \
         GRANT ALL ON shop.* TO 'bench'@'%'; \
         CREATE DATABASE scratch; GRANT ALL ON scratch.* TO 'bench'@'%'; \
         CREATE USER 'secure'@'%' IDENTIFIED BY '{PASSWORD}' REQUIRE SSL; \
         GRANT ALL ON `ampbench\\_%`.* TO 'secure'@'%'"
    ))?;
    Ok(p)
}

/// A MariaDB data directory in `d/data` (root by socket only), a copy of
/// one install-db made, and `d/tmp` (owned like `d`) for the server's
/// temporary files. The server's configuration must name `d/tmp`: a
/// MariaDB starting with the shared `/tmp` deletes every `#sql…` file
/// there, so two servers starting at once lost each other's temporary
/// tables (CI failed on it, 2026-11-29).
pub fn install_db(d: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let owner = std::fs::metadata(d).map_err(|e| e.to_string())?;
    std::os::unix::fs::chown(&tmp, Some(owner.uid()), Some(owner.gid()))
        .map_err(|e| e.to_string())?;
    // The server install-db runs: on PATH (root's has /usr/sbin).
    let server = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([std::path::PathBuf::from("/usr/sbin")])
        .map(|d| d.join("mariadbd"))
        .find(|p| p.is_file())
        .ok_or("no mariadbd on PATH")?;
    super::template::copy("mariadb", &server, "mysql", &d.join("data"), |w| {
        let tmp = w.join("tmp");
        std::fs::create_dir(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let (uid, gid) = ids("mysql")?;
        std::os::unix::fs::chown(&tmp, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
        sh(Command::new("mariadb-install-db").args([
            "--no-defaults",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
            "--user=mysql",
            &format!("--datadir={}/data", w.display()),
            &format!("--tmpdir={}", tmp.display()),
        ]))
        .map(drop)
    })
}

/// Runs `sql` as root on the fixture's MariaDB.
pub fn mariadb_root(p: &Proc, sql: &str) -> Result<String, String> {
    sh(Command::new("mariadb")
        .arg(format!(
            "--socket={}",
            p.dir.path().join("s.sock").display()
        ))
        .args(["-uroot", "-N", "-e", sql]))
}

/// A PostgreSQL in the server namespace on port 5432 (scram-sha-256 over
/// TCP): `bench` may create databases and owns `shop` (with `orders`) and
/// the empty `scratch`; `secure`, who may create databases too, must come
/// over TLS (certificates from [`certs`]).
pub fn postgres(net: &Net) -> Result<Proc, String> {
    let bin = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| format!("no PostgreSQL: {e}"))?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("postgres").exists())
        .max()
        .ok_or("no PostgreSQL bin directory")?;
    let (dir, uid, gid) = server_dir("ampt-postgres", "postgres")?;
    let d = dir.path();
    certs(d, &net.server_ip, uid, gid)?;
    let data = d.join("data");
    super::template::copy("postgres", &bin.join("postgres"), "postgres", &data, |w| {
        let pw = w.join("pw");
        std::fs::write(&pw, format!("{PASSWORD}\n")).map_err(|e| e.to_string())?;
        std::os::unix::fs::chown(&pw, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
        sh(Command::new(bin.join("initdb"))
            .arg("-D")
            .arg(w.join("data"))
            .args(["-U", "postgres", "--auth=scram-sha-256", "--no-sync"])
            .arg(format!("--pwfile={}", pw.display()))
            // The encoding test.sh's runs gave it (SQL_ASCII), whatever
            // the locale of the run that makes the template.
            .env("LC_ALL", "C")
            .uid(uid)
            .gid(gid))
        .map(drop)
    })?;
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("pg_hba.conf"))
            .map_err(|e| e.to_string())?;
        writeln!(
            f,
            "hostnossl all secure 10.250.0.0/16 reject\nhost all all 10.250.0.0/16 scram-sha-256"
        )
        .map_err(|e| e.to_string())?;
    }
    let child = Command::new("ip")
        .args([
            "netns",
            "exec",
            &net.server,
            "runuser",
            "-u",
            "postgres",
            "--",
        ])
        .arg(bin.join("postgres"))
        .arg("-D")
        .arg(&data)
        .args(["-p", "5432", "-k"])
        .arg(d)
        .args(["-c", &format!("listen_addresses={}", net.server_ip)])
        .args(["-c", "shared_buffers=64MB", "-c", "ssl=on"])
        .arg("-c")
        .arg(format!("ssl_cert_file={}/server.pem", d.display()))
        .arg("-c")
        .arg(format!("ssl_key_file={}/server.key", d.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| e.to_string())?;
    // Immediate shutdown: the postmaster ends its backends and exits
    // without a checkpoint (the directory is thrown away). A fast one
    // (SIGINT) after the trust tests stopped and resumed the store took
    // the whole 20 s on a busy machine, every time.
    let p = Proc {
        child,
        stop: libc::SIGQUIT,
        dir,
    };
    wait_until("postgres", Duration::from_secs(60), || {
        postgres_as(&p, "postgres", "postgres", "SELECT 1").is_ok()
    })?;
    postgres_as(
        &p,
        "postgres",
        "postgres",
        &format!(
            "CREATE ROLE bench LOGIN CREATEDB PASSWORD '{PASSWORD}'; CREATE ROLE secure LOGIN CREATEDB PASSWORD '{PASSWORD}'"
        ),
    )?;
    postgres_as(
        &p,
        "postgres",
        "postgres",
        "CREATE DATABASE shop OWNER bench",
    )?;
    postgres_as(
        &p,
        "postgres",
        "postgres",
        "CREATE DATABASE scratch OWNER bench",
    )?;
    postgres_as(
        &p,
        "bench",
        "shop",
        "CREATE TABLE orders (id INT PRIMARY KEY)",
    )?;
    Ok(p)
}

/// Runs `sql` on the fixture's PostgreSQL over its socket.
pub fn postgres_as(p: &Proc, user: &str, db: &str, sql: &str) -> Result<String, String> {
    sh(Command::new("psql")
        .arg("-h")
        .arg(p.dir.path())
        .args(["-p", "5432", "-U", user, "-d", db, "-At", "-c", sql])
        .env("PGPASSWORD", PASSWORD))
}

/// Prometheus' node exporter (Debian's) in the server namespace on port
/// 9100: the server host's devices and CPU for `--host-metrics`.
pub fn node_exporter(net: &Net) -> Result<Proc, String> {
    let dir = tempfile::Builder::new()
        .prefix("ampt-node-exporter")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let child = Command::new("ip")
        .args(["netns", "exec", &net.server, "prometheus-node-exporter"])
        .arg(format!("--web.listen-address={}:9100", net.server_ip))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("prometheus-node-exporter: {e}"))?;
    let p = Proc {
        child,
        stop: libc::SIGTERM,
        dir,
    };
    let probe = format!("exec 3<>/dev/tcp/{}/9100", net.server_ip);
    wait_until("prometheus-node-exporter", Duration::from_secs(30), || {
        net.in_client("bash")
            .args(["-c", &probe])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })?;
    Ok(p)
}
