//! `ampbench run`'s flags: parsed into validated plain data, one
//! [`RunConfig`] per corner (`--bound cache,io`).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

use crate::UsageError;
use crate::driver::{Arrival, Gaps};
use crate::engine::{EngineKind, sets};
use crate::plan::Settings;
use crate::runner::RunConfig;
use crate::setup::StorageConfig;
use crate::setup::storage::Fs;
use crate::units::MAX_SECS;
use crate::workload::WorkloadKind;

mod check;
mod corner;
mod storage;
mod target;
mod timing;

pub use check::{check_args, check_plan};
use corner::corners;

#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// Plan file (TOML) with any of the settings below; flags override it.
    plan: Option<PathBuf>,
    /// Workload to run; `ampbench run` with no plan, workload or engine
    /// runs plans/default.toml.
    #[arg(short, long, value_enum)]
    workload: Option<WorkloadKind>,
    #[arg(
        short,
        long,
        value_delimiter = ',',
        help = crate::engine::registry::short_help(),
        long_help = crate::engine::registry::help()
    )]
    engine: Option<Vec<String>>,
    /// Steps to run, comma-separated, in the workload's order.
    #[arg(long, value_delimiter = ',')]
    steps: Option<Vec<String>>,
    /// Workload parameter KEY=VALUE (repeatable); `ampbench list` shows them.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    param: Vec<String>,
    /// Engine option ENGINE.KEY=VALUE (repeatable), passed to the engine.
    #[arg(long = "set", value_name = "ENGINE.KEY=VALUE")]
    set: Vec<String>,
    /// How long a server may take to answer: every read and write of a
    /// client gives up after it, and a server that stops answering new
    /// connections for it is killed and its step failed.
    #[arg(long, value_parser = crate::units::parse_secs)]
    server_timeout: Option<f64>,
    /// Let engine settings that name files or directories or load code
    /// through (MariaDB's init_file, log_error, plugin_load_add;
    /// PostgreSQL's archive_command, shared_preload_libraries;
    /// WiredTiger's extensions; RocksDB's wal_dir). ampbench runs as
    /// root: only this flag allows them, never a plan file.
    #[arg(long)]
    allow_unsafe_settings: bool,
    /// Sweep an engine option (repeatable): the plan runs once per value,
    /// each on a fresh database; several axes of one engine multiply.
    /// Reported as one table per step with a row per setting (and, on
    /// RocksDB and MyRocks, write-amp per column family).
    #[arg(long, value_name = "ENGINE.KEY=V1,V2,…")]
    sweep: Vec<String>,
    /// Run a sweep of more than 20 engine runs without asking.
    #[arg(long)]
    yes: bool,
    /// Parsed again by the engine host (asks nothing, says nothing).
    #[arg(long, hide = true)]
    host: bool,
    /// Threads for multi-threaded steps (the `.n` steps, YCSB, micro reads,
    /// LinkBench requests). A list, e.g. 1,2,4,8,16, runs each
    /// such step at every level (`pq.n@8`) and fits the Universal
    /// Scalability Law per engine and step.
    #[arg(long, value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// Unrecorded warm-up before each timed step: seconds, or with a unit
    /// (500ms, 90s, 30m, 6h).
    #[arg(long, value_parser = crate::units::parse_secs)]
    warmup: Option<f64>,
    /// Warm each timed step up until its throughput stops rising, for at
    /// most this long (seconds, or with a unit: 10m): unrecorded slices
    /// of --interval (5 s at least) until one is within 3% of the slice
    /// two before it, after --warmup at least; the measured phase then
    /// starts at once. Three whole slices at least. Each step records its
    /// slices' rates.
    #[arg(long, value_parser = crate::units::parse_secs)]
    warmup_steady: Option<f64>,
    /// Measured time of each timed step: seconds, or with a unit (90s,
    /// 30m, 6h).
    #[arg(long, value_parser = crate::units::parse_secs)]
    duration: Option<f64>,
    /// Time between probe samples (figures per interval): seconds, or with
    /// a unit.
    #[arg(long, value_parser = crate::units::parse_secs)]
    interval: Option<f64>,
    /// Report every step as consecutive slices of this length, each with
    /// the full set of figures and a last-against-first line (e.g.
    /// --duration 6h --slice 1h); built from whole intervals, so
    /// --interval defaults to a sixth of it.
    #[arg(long, value_parser = crate::units::parse_secs)]
    slice: Option<f64>,
    /// Fixed total arrival rate, ops/s; latency from the intended start.
    #[arg(long)]
    rate: Option<f64>,
    /// Arrival process under --rate.
    #[arg(long, value_enum)]
    arrival: Option<Gaps>,
    /// Run seed (recorded).
    #[arg(long)]
    seed: Option<u64>,
    /// Engine cache size given to every engine that has one, e.g. 256MB, 1GB.
    #[arg(long)]
    cache: Option<String>,
    /// Results store: a SQLite file, or a PostgreSQL database by URL
    /// (`postgres://user@host/db`, where the clients of one run meet).
    #[arg(long)]
    results: Option<String>,
    /// Directory under which each engine gets a fresh data directory.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the data directories afterwards.
    #[arg(long)]
    keep: bool,
    /// Wait for the engine's background work (compaction, checkpoint) after load steps.
    #[arg(long)]
    settle: bool,
    /// Print more while it runs: the model's explanation under each step.
    #[arg(short, long)]
    verbose: bool,
    /// How clients reach a server engine.
    #[arg(long, value_enum)]
    transport: Option<crate::engine::Transport>,
    /// Reach a server ampbench did not start: mysql://USER[:PASSWORD]@HOST[:PORT][/DB][?tls=…&engine=innodb|rocksdb]
    /// or postgres://USER[:PASSWORD]@HOST[:PORT][/DB][?sslmode=…];
    /// several hosts (HOST1:PORT,HOST2:PORT) or URLs (comma-separated)
    /// take connections in turn. The URL's database is only logged in
    /// to: ampbench works in a database of its own (`ampbench_…`),
    /// dropped at the end, or in --target-db. The password can come
    /// from --target-password-file or AMPBENCH_TARGET_PASSWORD instead.
    #[arg(long, value_name = "URL[,URL…]")]
    target: Option<String>,
    /// A file (mode 600) whose first line is --target's password.
    #[arg(long, value_name = "FILE")]
    target_password_file: Option<PathBuf>,
    /// Work in this existing database of the target: it must hold no
    /// table, or with --target-db-owned only ampbench's workload tables.
    #[arg(long, value_name = "NAME")]
    target_db: Option<String>,
    /// Let ampbench drop the workload tables it finds in --target-db
    /// (never any other table).
    #[arg(long)]
    target_db_owned: bool,
    /// Start this build of the server instead of Debian's: a MariaDB
    /// installation tree (bin/mariadb-install-db, sbin/ or bin/mariadbd,
    /// share/mysql) or a PostgreSQL bin directory (postgres, initdb). Its
    /// version is read from the binary and recorded.
    #[arg(long, value_name = "DIR")]
    server_bin: Option<PathBuf>,
    /// Prometheus' node exporter on the server's host
    /// (http://HOST:9100/metrics[?device=NAME,…]): its devices' reads and
    /// bytes and its CPU, sampled each interval, give per-operation
    /// figures of a host ampbench cannot read /proc of. Devices: every
    /// one but device-mapper, RAID and virtual ones, or those named.
    #[arg(long, value_name = "URL")]
    host_metrics: Option<String>,
    /// The run's clients: this many ampbench processes (on one host or
    /// many, started by your own tool) make one run, meeting in the
    /// PostgreSQL results store (--results postgres://…) against one
    /// --target. Each gets the same plan; loads split their key ranges.
    #[arg(long, value_name = "N")]
    clients: Option<usize>,
    /// This client of them, 0-based (client 0 makes and drops the
    /// target's database).
    #[arg(long, value_name = "K")]
    client: Option<usize>,
    /// The run's name, the same for every client: the first to arrive
    /// creates the run, the others join it.
    #[arg(long, value_name = "NAME")]
    run_name: Option<String>,
    /// How long a client waits at a barrier (each step's start and end)
    /// for the others before the run fails naming them.
    #[arg(long, value_parser = crate::units::parse_secs)]
    barrier_timeout: Option<f64>,
    /// How long a client of the run may go unheard (no heartbeat in the
    /// results store: stopped, or cut off) before the others give it up
    /// and go on without it.
    #[arg(long, value_parser = crate::units::parse_secs)]
    client_timeout: Option<f64>,
    /// How long a PostgreSQL results store may leave a reply owed with
    /// nothing moving before its connection is ended (the run then
    /// fails, its results so far kept).
    #[arg(long, value_parser = crate::units::parse_secs)]
    store_timeout: Option<f64>,
    /// The C allocator under the engines: glibc, jemalloc or tcmalloc
    /// (preloaded; an embedded engine's run goes to a child ampbench)
    ///.
    #[arg(long, value_parser = |s: &str| crate::setup::allocator::Allocator::parse(s).map_err(|e| e.0))]
    allocator: Option<crate::setup::allocator::Allocator>,
    /// A replication log on the servers: MariaDB's binlog with
    /// sync_binlog=1, PostgreSQL's WAL archived by a copying
    /// archive_command (the seed's oplog).
    #[arg(long, value_name = "on|off", value_parser = on_off)]
    replication_log: Option<bool>,
    /// Where the data lives: a dedicated loop device throttled to a
    /// storage class (disk-array ≈ 1k IOPS, slow-ssd ≈ 10k, fast-ssd ≈
    /// 100k), unthrottled (dedicated), or the data directory's own disk
    /// (native). Needs root; otherwise native, said and recorded. A list
    /// (fast-ssd,slow-ssd,disk-array) sweeps one device through the
    /// classes: the load runs once at the first, every later step at each
    /// class in turn (`request@disk-array`).
    #[arg(long, value_delimiter = ',')]
    storage: Option<Vec<String>>,
    /// Scale the storage class's budgets (IOPS, MB/s, destage rates) by
    /// this machine's cores over a reference machine's: `cores=24` keeps a
    /// 24-core server's IO:CPU balance on this machine. The storage line
    /// prints the scaled and the nominal figures.
    #[arg(long, value_name = "cores=N")]
    io_scale: Option<String>,
    /// Filesystem on the dedicated device.
    #[arg(long, value_enum)]
    fs: Option<Fs>,
    /// Size of the dedicated device, e.g. 4GB.
    #[arg(long)]
    device_size: Option<String>,
    /// Seconds of each phase of the probe that measures the dedicated
    /// device before the run (reads at QD1 to 32, writes, a mix, syncs,
    /// sequential reads): 0.1 to 10 (at least 1 in a storage sweep), or
    /// 0 to skip it, and the storage line says so. Where neither the
    /// flag nor the plan gives it, AMPBENCH_STORAGE_PROBE in the
    /// environment does, said and recorded (the test suite's runs probe
    /// 0.2 s a phase).
    #[arg(long, value_parser = crate::units::parse_secs)]
    storage_probe: Option<f64>,
    /// IOPS cap READ[,WRITE] on the dedicated device (implies --storage custom
    /// unless a class is given, whose cap it replaces).
    #[arg(long)]
    iops: Option<String>,
    /// A device model setting over a modelled class's (disk-array,
    /// slow-ssd), repeatable or comma-separated: e.g. `cache=off`,
    /// `iops=2000`, `read_us=5000`. Keys: units, stripe_kb, read_us,
    /// read_sigma, write_us, write_sigma, seq_us, unit_mbps, iops, mbps,
    /// flush_us, queueing, spare, preconditioned, cache
    /// (off|battery|volatile), cache_mb, cache_share, destage_iops,
    /// destage_mbps, hit_us, delay_us (docs/storage.md says what each is)
    #[arg(long = "device-model", value_name = "KEY=VALUE", value_delimiter = ',')]
    device_model: Vec<String>,
    /// Bandwidth cap in MB/s READ[,WRITE] on the dedicated device (as --iops).
    #[arg(long)]
    mbps: Option<String>,
    /// Memory limit for the engine's process, page cache included, e.g.
    /// 256MB: the IO-bound configuration. Engines get their direct-IO
    /// settings and, without --cache, a quarter of it as cache.
    #[arg(long)]
    memory: Option<String>,
    /// A named set of engine settings, over the IO-bound profile and
    /// under --set: `era-2015` runs InnoDB with its pool at 5/8 of the
    /// memory limit and MyRocks, RocksDB and WiredTiger reading through
    /// the page cache, as the seed posts ran them (docs/seeds.md).
    #[arg(long)]
    preset: Option<String>,
    /// Drop the page cache before every step but the first.
    #[arg(long)]
    drop_caches: bool,
    /// Run every (engine, step) N times, each on a fresh database, the
    /// engines interleaved (A B, B A, A B…) so drift hits all of them;
    /// reports show means with 95% intervals.
    #[arg(long)]
    repeat: Option<usize>,
    /// With --repeat: one database per engine, each step but the loads run
    /// N times in a row on it.
    #[arg(long)]
    reuse: bool,
    /// The corner: `io` limits memory to --memory or to a quarter of the
    /// data the load writes, `cache` leaves it unlimited; `cache,io` runs
    /// both, one run each, and reports them side by side (`cache:rocksdb`,
    /// `io:rocksdb`).
    #[arg(long, value_parser = bound_arg, value_delimiter = ',')]
    bound: Option<Vec<Bound>>,
}

pub use crate::bound::Bound;

/// `--bound cache|io`.
fn bound_arg(s: &str) -> Result<Bound, String> {
    match s {
        "cache" => Ok(Bound::Cache),
        "io" => Ok(Bound::Io),
        _ => Err(format!("'{s}': expected cache or io")),
    }
}

/// The shortest probe interval: ten milliseconds (each interval samples
/// /proc and writes a row).
pub const MIN_INTERVAL: f64 = 0.01;
/// The most threads a step may run (a server takes a connection each).
pub const MAX_THREADS: usize = 1024;
/// The arrival rates --rate takes, ops/s: one per 100 s to a billion.
pub const RATE_RANGE: (f64, f64) = (0.01, 1e9);

/// A number as a person reads it: `1e20` rather than twenty-one digits.
fn shown(v: f64) -> String {
    if v != 0.0 && !(1e-3..1e9).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn positive(name: &str, v: f64) -> Result<f64, UsageError> {
    if v.is_finite() && v > 0.0 && v <= MAX_SECS {
        Ok(v)
    } else {
        Err(UsageError(format!(
            "--{name} {}: must be a positive number of seconds, at most {MAX_SECS} (366 days)",
            shown(v)
        )))
    }
}

impl RunArgs {
    /// The one merge: the flags given on the command line over the
    /// plan's settings (whose missing keys already hold the defaults).
    /// Lists (`-p`, `--set`, `--sweep`) add to the plan's; a switch
    /// turns its key on.
    // Long: one line per setting: the flag over the plan's key, all settings
    // in one place.
    fn merge(&self, s: &mut Settings) {
        macro_rules! given {
            ($($f:ident),*) => { $( if let Some(v) = &self.$f { s.$f = v.clone(); } )* };
        }
        macro_rules! some {
            ($($f:ident),*) => { $( if let Some(v) = &self.$f { s.$f = Some(v.clone()); } )* };
        }
        macro_rules! on {
            ($($f:ident),*) => { $( s.$f |= self.$f; )* };
        }
        given!(
            warmup,
            duration,
            seed,
            allocator,
            replication_log,
            server_timeout,
            clients,
            barrier_timeout,
            client_timeout,
            store_timeout,
            fs,
            repeat
        );
        some!(
            steps,
            warmup_steady,
            interval,
            slice,
            rate,
            cache,
            device_size,
            storage_probe,
            iops,
            mbps,
            io_scale,
            memory,
            preset,
            target,
            target_db,
            host_metrics,
            client,
            run_name
        );
        on!(keep, settle, drop_caches, reuse, target_db_owned);
        if let Some(d) = &self.server_bin {
            s.server_bin = Some(d.to_string_lossy().into_owned());
        }
        if let Some(f) = &self.target_password_file {
            s.target_password_file = Some(f.to_string_lossy().into_owned());
        }
        if let Some(w) = self.workload {
            s.workload = w.name().into();
        }
        if let Some(e) = &self.engine {
            s.engines = e.clone();
        }
        if let Some(t) = &self.threads {
            s.threads = crate::plan::Threads::Many(t.clone());
        }
        if let Some(a) = self.arrival {
            s.arrival = a;
        }
        if let Some(r) = &self.results {
            s.results = r.clone();
        }
        if let Some(d) = &self.dir {
            s.dir = Some(d.to_string_lossy().into_owned());
        }
        if let Some(t) = self.transport {
            s.transport = Some(t);
        }
        if let Some(c) = &self.storage {
            s.storage = Some(crate::plan::Classes::Many(c.clone()));
        }
        if let Some(b) = &self.bound {
            s.bound = Some(crate::plan::Bounds::Many(b.clone()));
        }
        if !self.device_model.is_empty() {
            s.device_model = self.device_model.clone();
        }
        s.sweep.extend(self.sweep.iter().cloned());
    }

    /// One validated configuration per corner, in run order.
    // Long: flags and plan merged into one configuration per corner: checks in
    // the order their inputs are needed (storage, workload, engines, target,
    // timing, corners, sets and sweep, repeats), most in storage.rs,
    // target.rs, timing.rs, corner.rs and sets_and_sweep; the rest is the
    // record built from them.
    pub(crate) fn into_configs(self) -> Result<Vec<RunConfig>> {
        let plan = match &self.plan {
            Some(p) => Settings::load(p)?,
            // The default benchmark is the embedded engines' on a device
            // of this machine: not what a run against a server elsewhere
            // or another server build means.
            None if self.workload.is_none()
                && self.engine.is_none()
                && self.target.is_none()
                && self.server_bin.is_none() =>
            {
                Settings::default_run()?
            }
            None => Settings::default(),
        };
        // What the plan itself sets and sweeps passes the guard as it is,
        // whatever --allow-unsafe-settings says (someone else may have
        // written the plan).
        let (plan_sets, plan_sweep) = (plan.set_strings(), plan.sweep.clone());
        let mut s = plan;
        self.merge(&mut s);
        if s.target.is_some() && s.storage.is_none() && s.iops.is_none() && s.mbps.is_none() {
            // The server's device is its own: no device is made here.
            s.storage = Some(crate::plan::Classes::One("native".into()));
        }
        let storage = storage::config(&s)?;
        let workload = WorkloadKind::from_str(&s.workload, false).map_err(|_| {
            let known: Vec<&str> = WorkloadKind::ALL.iter().map(|w| w.name()).collect();
            UsageError(format!(
                "plan: unknown workload '{}' (known: {})",
                s.workload,
                known.join(", ")
            ))
        })?;
        let mut engines = Vec::new();
        for e in &s.engines {
            let k = EngineKind::parse(e.trim())?;
            if !engines.contains(&k) {
                engines.push(k);
            }
        }
        let target = target::config(&s, &self.set, &mut engines)?;
        let server_bin = target::server_bin(&s, &mut engines)?;
        let steps = match &s.steps {
            Some(v) if !v.is_empty() => v
                .iter()
                .map(|s| workload.step(s.trim()))
                .collect::<Result<Vec<_>, _>>()?,
            _ => workload.steps(),
        };
        timing::rate(&s)?;
        let levels = timing::levels(&s, workload)?;
        let threads = levels[0];
        let timing::Timing {
            duration,
            slice,
            interval,
        } = timing::timing(&s)?;
        let mut params = s.param_pairs();
        params.extend(crate::workload::params::parse_pairs(&self.param)?);
        if let Some(p) = &s.post {
            p.check().map_err(UsageError)?;
        }
        let post_scale = crate::postspec::scale(s.post.as_ref(), &mut params)?;
        let corners = corners(&s, workload, &params)?;
        let (sets, sweep) = self.sets_and_sweep(&s, plan_sets, plan_sweep.len(), &engines)?;
        if s.repeat == 0 {
            return Err(UsageError("--repeat 0: repeat at least once".into()).into());
        }
        if s.reuse && s.repeat < 2 {
            return Err(UsageError("--reuse needs --repeat N with N ≥ 2".into()).into());
        }
        if let Some(p) = &s.preset {
            crate::engine::presets::find(p)?;
        }
        let preset = s.preset.clone();
        let base = RunConfig {
            preset,
            post: s.post.clone(),
            post_scale,
            workload,
            engines,
            steps,
            params,
            sets,
            allow_unsafe_settings: self.allow_unsafe_settings,
            sweep,
            threads,
            thread_levels: if levels.len() > 1 { levels } else { Vec::new() },
            warmup: s.warmup,
            warmup_steady: s.warmup_steady,
            duration,
            interval,
            slice,
            arrival: match s.rate {
                Some(per_sec) => Arrival::Fixed {
                    per_sec,
                    gaps: s.arrival,
                },
                None => Arrival::Closed,
            },
            seed: s.seed,
            cache_bytes: 0,
            results: results_at(&s.results, positive("store-timeout", s.store_timeout)?)?,
            clients: target::clients(&s)?,
            dir: s
                .dir
                .as_ref()
                .map_or_else(std::env::temp_dir, PathBuf::from),
            keep: s.keep,
            settle: s.settle,
            verbose: self.verbose,
            transport: s.transport,
            target,
            server_bin,
            host_metrics: target::host_metrics(&s)?,
            allocator: s.allocator,
            replication_log: s.replication_log,
            server_timeout: positive("server-timeout", s.server_timeout)?,
            storage,
            memory: None,
            bound: Bound::Cache,
            memory_from_data: None,
            cache_from_memory: false,
            drop_caches: s.drop_caches,
            repeat: s.repeat,
            reuse: s.reuse,
            origin: None,
        };
        Ok(corners
            .into_iter()
            .map(|c| RunConfig {
                bound: c.bound,
                memory: c.memory,
                memory_from_data: c.memory_from_data,
                cache_bytes: c.cache_bytes,
                cache_from_memory: c.cache_from_memory,
                // A device cache given as a share of memory: of the limit
                // --bound io worked out from the data when no --memory
                // was given (else --memory's, else the machine's).
                storage: match c.memory_from_data.and(c.memory) {
                    Some(m) => StorageConfig {
                        memory: m,
                        ..base.storage.clone()
                    },
                    None => base.storage.clone(),
                },
                ..base.clone()
            })
            .collect())
    }

    /// The engine settings (`--set` over the plan's) and the sweep's
    /// axes. What the plan sets and the first `plan_sweep` axes (the
    /// plan's) must pass the guard as they are, whatever
    /// --allow-unsafe-settings says: someone else may have written the
    /// plan.
    fn sets_and_sweep(
        &self,
        s: &Settings,
        plan_sets: Vec<String>,
        plan_sweep: usize,
        engines: &[EngineKind],
    ) -> Result<(
        std::collections::BTreeMap<EngineKind, crate::engine::EngineOptions>,
        Vec<crate::runner::sweep::SweepAxis>,
    )> {
        let strict = |kind: EngineKind, pairs: Vec<(String, String)>| {
            let o = crate::engine::EngineOptions {
                pairs,
                allow_unsafe: false,
            };
            crate::engine::guard::check(kind, &o)
                .map_err(|e| UsageError(format!("plan file: {e:#}")))
        };
        for (k, o) in sets::parse_sets(&plan_sets)? {
            strict(k, o.pairs)?;
        }
        let mut all_sets = plan_sets;
        all_sets.extend(self.set.iter().cloned());
        let mut sets = sets::parse_sets(&all_sets)?;
        for o in sets.values_mut() {
            o.allow_unsafe = self.allow_unsafe_settings;
        }
        let mut sweep = Vec::new();
        for (i, a) in s.sweep.iter().enumerate() {
            let axis = crate::runner::sweep::parse(a, engines)?;
            if i < plan_sweep {
                for v in &axis.values {
                    strict(axis.engine, vec![(axis.key.clone(), v.clone())])?;
                }
            }
            sweep.push(axis);
        }
        crate::runner::sweep::check(&sweep, &sets, self.allow_unsafe_settings)?;
        if !self.host {
            crate::runner::sweep::confirm(&sweep, engines, self.yes)?;
        }
        Ok((sets, sweep))
    }
}

/// Parses `on` or `off` (and true/false, yes/no, 1/0).
fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("'{s}': expected on or off")),
    }
}

/// `--results`, with a line when its URL lets the password travel in
/// clear text.
pub(super) fn results_at(s: &str, timeout: f64) -> Result<crate::results::Location, UsageError> {
    let mut at = crate::results::Location::parse(s)?;
    if let crate::results::Location::Postgres(t) = &mut at {
        t.timeout = Some(std::time::Duration::from_secs_f64(timeout));
        if let Some(w) = t.cleartext_warning("--results") {
            eprintln!("{w}");
        }
    }
    Ok(at)
}
