//! `--server-bin DIR`: a server build other than Debian's installed one,
//! here a copy of Debian's MariaDB tree in another directory, started and
//! recorded with its version; a directory without a server is one line.

use crate::common;

use std::process::Command;

/// A MariaDB installation tree copied from Debian's files: bin/ with the
/// bootstrap script and its helpers, sbin/mariadbd, share/mysql, and the
/// plugin directory linked.
fn copy_tree(at: &std::path::Path) -> std::io::Result<()> {
    for d in ["bin", "sbin", "share", "lib/mysql"] {
        std::fs::create_dir_all(at.join(d))?;
    }
    std::fs::copy("/usr/sbin/mariadbd", at.join("sbin/mariadbd"))?;
    for f in ["mariadb-install-db", "my_print_defaults", "resolveip"] {
        std::fs::copy(format!("/usr/bin/{f}"), at.join("bin").join(f))?;
    }
    let st = Command::new("cp")
        .args(["-r", "/usr/share/mysql"])
        .arg(at.join("share/mysql"))
        .status()?;
    assert!(st.success());
    std::os::unix::fs::symlink("/usr/lib/mysql/plugin", at.join("lib/mysql/plugin"))
}

#[test]
fn a_copied_mariadb_tree_runs_and_is_recorded() {
    if !std::path::Path::new("/usr/sbin/mariadbd").exists() {
        ampbench::testing::skip("server_bin", "no /usr/sbin/mariadbd to copy");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // The server runs as mysql: it must reach the tree.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let tree = d.path().join("mariadb-copy");
    copy_tree(&tree).expect("copy Debian's MariaDB tree");
    let data = d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let results = d.path().join("r.db");
    let out = common::ok(&[
        "run",
        "-w",
        "ycsb",
        "-p",
        "recordcount=1000",
        "--steps",
        "load,c",
        "--warmup",
        "0",
        "--duration",
        "1",
        "--server-bin",
        tree.to_str().unwrap(),
        "--storage",
        "native",
        "--keep",
        "--dir",
        data.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    assert!(out.contains("mariadb-innodb MariaDB 10."), "{out}");
    // The copy's binary served: its path in the server's log.
    let log = walk(&data)
        .into_iter()
        .find(|p| p.ends_with("error.log"))
        .expect("the kept server's error log");
    let text = std::fs::read_to_string(&log).unwrap();
    let ready = format!(
        "{}: ready for connections",
        tree.join("sbin/mariadbd").display()
    );
    assert!(text.contains(&ready), "not started from the copy:\n{text}");
    // Its version, read from the binary, recorded.
    let c = rusqlite::Connection::open(&results).unwrap();
    let versions: String = c
        .query_row("SELECT versions FROM runs", [], |r| r.get(0))
        .unwrap();
    assert!(
        versions.contains(&format!("(--server-bin {})", tree.display())),
        "{versions}"
    );
    let cfg = common::run_config(&results, 1);
    assert_eq!(cfg["server_bin"]["server"], "mariadb");
    assert!(
        cfg["server_bin"]["version"]
            .as_str()
            .unwrap()
            .starts_with("10.")
    );
}

#[test]
fn a_directory_without_a_server_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let o = common::run(&[
        "run",
        "-w",
        "ycsb",
        "--server-bin",
        d.path().to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("--server-bin"))
        .unwrap_or_default();
    assert!(line.contains("no server in it"), "{err}");
    // A PostgreSQL build for a MariaDB engine: refused, naming both.
    let pg = std::fs::read_dir("/usr/lib/postgresql")
        .ok()
        .and_then(|rd| rd.flatten().map(|e| e.path()).max());
    if let Some(pg) = pg {
        let o = common::run(&[
            "run",
            "-w",
            "ycsb",
            "-e",
            "mariadb-innodb",
            "--server-bin",
            pg.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{err}");
        assert!(
            err.contains("--engine mariadb-innodb: --server-bin") && err.contains("PostgreSQL"),
            "{err}"
        );
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
