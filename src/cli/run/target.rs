//! `--target` and its companions, and `--server-bin`: the URL parsed, the password found, the
//! engines it means, and every setting that only a server ampbench starts
//! can honour refused by name.

use anyhow::Result;

use crate::UsageError;
use crate::engine::EngineKind;
use crate::engine::target::{self, Protocol, Target, TargetSpec};
use crate::plan::Settings;

/// The target of a run, if any. `engines` is replaced by the URL's engine
/// when it is the default list; otherwise each must speak the URL's
/// protocol. `sets` are the `--set` flags (the plan's are in `s`).
// Long: --target checked in the order its errors make sense (URL, password,
// database, the engines it speaks, then each setting only a server ampbench
// starts can honour), each error naming its flag.
pub(super) fn config(
    s: &Settings,
    sets: &[String],
    engines: &mut Vec<EngineKind>,
) -> Result<Option<TargetSpec>> {
    let Some(url) = s.target.as_deref() else {
        for (given, key) in [
            (s.target_db.is_some(), "--target-db"),
            (s.target_password_file.is_some(), "--target-password-file"),
            (s.target_db_owned, "--target-db-owned"),
        ] {
            if given {
                return Err(UsageError(format!("{key}: only with --target")).into());
            }
        }
        return Ok(None);
    };
    let mut t = Target::parse(url)?;
    target::resolve_password(
        &mut t,
        s.target_password_file.as_deref().map(std::path::Path::new),
    )?;
    t.timeout = Some(std::time::Duration::from_secs_f64(super::positive(
        "server-timeout",
        s.server_timeout,
    )?));
    if let Some(w) = t.cleartext_warning("--target") {
        eprintln!("{w}");
    }
    if let Some(d) = &s.target_db {
        target::check_db_name(d)?;
    }
    if s.target_db.is_some() && t.endpoints.len() > 1 {
        return Err(UsageError(
            "--target-db with several endpoints: ampbench checks a named database's tables on one server only; give one endpoint, or let ampbench create its own database"
                .into(),
        )
        .into());
    }
    if t.password.is_some() && url.contains('@') && s.target_password_file.is_none() {
        let given = url
            .split_once("://")
            .and_then(|(_, r)| r.rsplit_once('@'))
            .is_some_and(|(auth, _)| auth.contains(':'));
        if given {
            eprintln!(
                "note: --target's password is in the command line, which other users of this machine can read (ps); --target-password-file or AMPBENCH_TARGET_PASSWORD keep it out"
            );
        }
    }
    if s.target_db_owned && s.target_db.is_none() {
        return Err(UsageError(
            "--target-db-owned: only with --target-db (ampbench's own database is always its own)"
                .into(),
        )
        .into());
    }
    let url_engine = match (t.protocol, t.engine.as_deref()) {
        (Protocol::MySql, Some("rocksdb")) => "mariadb-myrocks",
        (Protocol::MySql, _) => "mariadb-innodb",
        (Protocol::Postgres, _) => "postgres",
    };
    if *engines == default_engines() {
        *engines = vec![EngineKind::parse(url_engine)?];
    }
    for k in engines.iter() {
        let speaks = k.speaks() == Some(t.protocol);
        if !speaks {
            return Err(UsageError(format!(
                "--engine {k}: --target {} is reached by {}",
                t.shown(),
                match t.protocol {
                    Protocol::MySql => "mariadb-innodb or mariadb-myrocks",
                    Protocol::Postgres => "postgres",
                }
            ))
            .into());
        }
        if t.engine.is_some() && k.name() != url_engine {
            return Err(UsageError(format!(
                "--engine {k}: the URL says engine={} ({url_engine})",
                t.engine.as_deref().unwrap_or_default()
            ))
            .into());
        }
    }
    let mine =
        "a setting of the machine and server ampbench starts; an external target's are its own";
    for (given, key) in [
        (s.memory.is_some(), "--memory"),
        (
            s.bound
                .clone()
                .is_some_and(|b| b.into_vec().contains(&crate::bound::Bound::Io)),
            "--bound io",
        ),
        (
            s.storage
                .clone()
                .is_some_and(|c| c.into_vec() != ["native"])
                || s.iops.is_some()
                || s.mbps.is_some(),
            "--storage",
        ),
        (!s.device_model.is_empty(), "--device-model"),
        (s.drop_caches, "--drop-caches"),
        (s.replication_log, "--replication-log"),
        (!s.set.is_empty() || !sets.is_empty(), "--set"),
        (!s.sweep.is_empty(), "--sweep"),
        (
            s.allocator != crate::setup::allocator::Allocator::Glibc,
            "--allocator",
        ),
        (
            s.transport == Some(crate::engine::Transport::Socket),
            "--transport socket",
        ),
        (s.cache.is_some(), "--cache"),
    ] {
        if given {
            return Err(UsageError(format!("{key} with --target: {mine}")).into());
        }
    }
    Ok(Some(TargetSpec {
        target: t,
        db: s.target_db.clone(),
        db_owned: s.target_db_owned,
        keep: s.keep,
        joined: false,
        run_tag: None,
    }))
}

/// `--server-bin`: the build found in the directory, which must run every
/// engine of the run (without `-e`, its server's: mariadb-innodb or
/// postgres).
pub(super) fn server_bin(
    s: &Settings,
    engines: &mut Vec<EngineKind>,
) -> Result<Option<crate::engine::server::ServerBin>> {
    use crate::engine::server::ServerBin;
    let Some(dir) = s.server_bin.as_deref() else {
        return Ok(None);
    };
    let b = ServerBin::detect(std::path::Path::new(dir))?;
    if *engines == default_engines() {
        *engines = vec![EngineKind::parse(match b {
            ServerBin::MariaDb { .. } => "mariadb-innodb",
            ServerBin::Postgres { .. } => "postgres",
        })?];
    }
    if let Some(k) = engines.iter().find(|k| !b.serves(**k)) {
        return Err(UsageError(format!(
            "--engine {k}: --server-bin {dir} holds {}",
            b.version()
        ))
        .into());
    }
    Ok(Some(b))
}

/// `--host-metrics`: the node exporter's URL, parsed and read once, so
/// that a wrong URL or an exporter that does not answer stops the run
/// before anything starts (one line naming the URL).
pub(super) fn host_metrics(s: &Settings) -> Result<Option<String>> {
    let Some(url) = s.host_metrics.as_deref() else {
        return Ok(None);
    };
    let n = crate::probe::NodeExporter::parse(url).map_err(|e| UsageError(format!("{e:#}")))?;
    n.read()?;
    Ok(Some(url.to_string()))
}

/// The engines a run has when neither the plan nor `-e` names any.
fn default_engines() -> Vec<EngineKind> {
    Settings::default()
        .engines
        .iter()
        .filter_map(|e| EngineKind::parse(e).ok())
        .collect()
}

/// `--clients N --client K --run-name NAME`: this process's place among
/// the clients of a run; None alone. The client comes from `--client`
/// or a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`. Several clients
/// need a name, a PostgreSQL results store (where they meet) and a
/// `--target` (the server they share).
pub(super) fn clients(s: &Settings) -> Result<Option<crate::results::meet::Clients>> {
    use crate::results::meet::{Clients, JOB_INDEX_ENV};
    let n = s.clients;
    if n == 0 {
        return Err(UsageError("--clients 0: a run has at least one client".into()).into());
    }
    let from_env =
        || -> Result<Option<usize>, UsageError> {
            match std::env::var(JOB_INDEX_ENV) {
                Ok(v) => v.trim().parse().map(Some).map_err(|_| {
                    UsageError(format!("{JOB_INDEX_ENV}={v}: expected a client number"))
                }),
                Err(_) => Ok(None),
            }
        };
    let k = match s.client {
        Some(k) => k,
        None if n > 1 => from_env()?.unwrap_or(0),
        None => 0,
    };
    if k >= n {
        return Err(UsageError(format!(
            "--client {k}: the run has {n} client(s), numbered 0 to {}",
            n - 1
        ))
        .into());
    }
    if n == 1 {
        if s.run_name.is_some() {
            return Err(UsageError(
                "--run-name names a run of several clients: give --clients N".into(),
            )
            .into());
        }
        return Ok(None);
    }
    let name = s.run_name.clone().ok_or_else(|| {
        UsageError(format!(
            "--clients {n}: give --run-name NAME, the same for every client (the run they make together)"
        ))
    })?;
    if name.is_empty() || name.len() > 200 || name.chars().any(|c| c.is_control()) {
        return Err(UsageError(format!(
            "--run-name '{name}': 1 to 200 printable characters"
        ))
        .into());
    }
    if !s.results.to_ascii_lowercase().starts_with("postgres") {
        return Err(UsageError(format!(
            "--clients {n}: the clients meet in a PostgreSQL results store; --results {} is a file (give --results postgres://…)",
            s.results
        ))
        .into());
    }
    if s.target.is_none() {
        return Err(UsageError(format!(
            "--clients {n}: the clients share one server: give --target URL"
        ))
        .into());
    }
    Ok(Some(Clients {
        clients: n,
        client: k,
        run_name: name,
        barrier_timeout: super::positive("barrier-timeout", s.barrier_timeout)?,
        client_timeout: super::positive("client-timeout", s.client_timeout)?,
    }))
}
