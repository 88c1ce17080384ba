//! Helpers shared by the tests that run the real binary.

#![allow(dead_code)]

use std::process::{Command, Output};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_ampbench");

/// Every `.rs` file under `dir`, into `out` (the source checks of
/// tests/layers.rs and tests/lengths.rs).
pub fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Runs ampbench with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run ampbench")
}

/// Runs ampbench with `args`, asserts success, returns its stdout.
pub fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "ampbench {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `ampbench report --format json` of `run` (`latest`, `3`, `1,2`) in a
/// results file, parsed.
pub fn report_json(results: &str, run: &str) -> serde_json::Value {
    let out = ok(&[
        "report",
        "--results",
        results,
        "--run",
        run,
        "--format",
        "json",
    ]);
    serde_json::from_str(&out).expect("report JSON")
}

/// The recorded configuration (JSON) of run `id` in a results file.
pub fn run_config(results: &std::path::Path, id: i64) -> serde_json::Value {
    let c = rusqlite::Connection::open(results).expect("results file");
    let cfg: String = c
        .query_row("SELECT config FROM runs WHERE id = ?1", [id], |r| r.get(0))
        .expect("the run's config");
    serde_json::from_str(&cfg).expect("config JSON")
}

/// Reads and writes the device did per second in each interval of each
/// step: (engine, step, reads/s, writes/s, seconds).
pub fn interval_iops(results: &std::path::Path) -> Vec<(String, String, f64, f64, f64)> {
    let c = rusqlite::Connection::open(results).unwrap();
    let mut q = c
        .prepare(
            "SELECT s.engine, s.step, a.sample, b.sample FROM samples a
             JOIN samples b ON a.step_id = b.step_id AND a.interval_idx = b.interval_idx
             JOIN steps s ON s.id = a.step_id
             WHERE a.at = 'start' AND b.at = 'end' ORDER BY s.id, a.interval_idx",
        )
        .unwrap();
    q.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
        ))
    })
    .unwrap()
    .map(|r| {
        let (e, s, a, b) = r.unwrap();
        let a: serde_json::Value = serde_json::from_str(&a).unwrap();
        let b: serde_json::Value = serde_json::from_str(&b).unwrap();
        let secs = b["t"].as_f64().unwrap() - a["t"].as_f64().unwrap();
        let d = |k: &str| b["disk"][k].as_f64().unwrap() - a["disk"][k].as_f64().unwrap();
        (e, s, d("reads") / secs, d("writes") / secs, secs)
    })
    .collect()
}

/// Processes whose working directory is under `dir` (a server and its
/// children work in their data directory).
pub fn working_in(dir: &std::path::Path) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read_link(format!("/proc/{p}/cwd")).is_ok_and(|c| c.starts_with(dir)) {
            v.push(p);
        }
    }
    v
}

/// Opens engine `kind` in `dir` with a 64 MB cache (a server engine starts
/// its server there, on loopback).
pub fn open(
    kind: ampbench::engine::EngineKind,
    dir: &std::path::Path,
) -> Box<dyn ampbench::engine::Engine> {
    ampbench::engine::open(
        kind,
        &ampbench::engine::OpenSpec::new(dir, vec![], 64 << 20),
    )
    .unwrap()
}

/// The SQL face of a server engine.
pub fn sql(e: &dyn ampbench::engine::Engine) -> &dyn ampbench::engine::SqlEngine {
    e.face().sql().expect("a server engine")
}

/// LinkBench's `-p distribution_file=…` for a small out-degree
/// distribution (about 6 links a node, at most 100), written in `dir`:
/// a load of seconds rather than the built-in curve's million links (its
/// first id takes the maximum, 961,963), for tests of what a run does
/// rather than of the curve.
pub fn small_degrees(dir: &std::path::Path) -> String {
    let p = dir.join("Distribution.dat");
    std::fs::write(&p, "nlinks\n0 10\n1 30\n5 70\n20 95\n100 100\n").unwrap();
    format!("distribution_file={}", p.display())
}

/// Statements per ADD_LINK in each `statements per request:` line a
/// LinkBench run printed on a SQL engine, in order.
pub fn add_link_statements(out: &str) -> Vec<f64> {
    out.lines()
        .filter(|l| l.trim_start().starts_with("statements per request:"))
        .filter_map(|l| {
            let i = l.find("ADD_LINK ")? + "ADD_LINK ".len();
            // `ADD_LINK 4.00, …`, or `ADD_LINK 4.23 (7 rollbacks, …`.
            l[i..]
                .split_whitespace()
                .next()?
                .trim_end_matches(',')
                .parse()
                .ok()
        })
        .collect()
}

/// The summary line of `engine` in a crash check's output.
pub fn summary_line<'a>(out: &'a str, engine: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(&format!("{engine} ")))
        .unwrap_or_else(|| panic!("no line for {engine}: {out}"))
}

/// The number after `key` in a summary line.
pub fn figure_after(line: &str, key: &str) -> u64 {
    let at = line.find(key).unwrap_or_else(|| panic!("no {key}: {line}")) + key.len();
    line[at..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no figure after {key}: {line}"))
}

/// Why this machine cannot serve a modelled device (root, loop devices,
/// mkfs, /dev/fuse), if it cannot.
pub fn no_device_model() -> Option<String> {
    if let Err(why) = ampbench::setup::storage::check_abilities(ampbench::setup::storage::Fs::Ext4)
    {
        return Some(format!("no dedicated device here: {why}"));
    }
    (!std::path::Path::new("/dev/fuse").exists())
        .then(|| "no /dev/fuse: the device model cannot be served".into())
}

/// Held while a test makes and measures devices: one such test at a
/// time across every test binary (`make test` runs two binaries at once;
/// a device's measured rates and another run's throttle rules must not
/// meet). An exclusive `flock` on a file in cargo's per-build temporary
/// directory for tests; released when dropped.
pub struct DeviceLock(std::fs::File);

/// Takes the [`DeviceLock`], waiting for it.
pub fn device_lock() -> DeviceLock {
    use std::os::fd::AsRawFd;
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("device-tests.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: flock on a descriptor this File owns for the lock's life.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock {}", path.display());
    DeviceLock(f)
}

/// The pid of the run whose output is `out`, from its `storage:` line
/// (`… image …/ampbench-PID-RAND-dev.img`); an earlier line may name
/// another run's leftovers.
pub fn storage_pid(out: &str) -> u32 {
    out.lines()
        .find(|l| l.starts_with("storage: ") && l.contains("ampbench-"))
        .and_then(|l| l.split("ampbench-").nth(1))
        .and_then(|r| r.split('-').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no storage line with a device: {out}"))
}

/// The root blkio group's throttle rules (cgroup v1) that outlived their
/// run: on a device no run holds (a loop device without a backing file,
/// or not a loop device), or on one holding run `pid`'s image. A rule on
/// a device another run holds is that run's: a run removes its rules
/// before it frees its device, so no run's rule is ever on a free one.
pub fn stray_throttle_rules(pid: u32) -> Vec<String> {
    let tag = format!("ampbench-{pid}-");
    let root = std::path::Path::new("/sys/fs/cgroup/blkio");
    let mut v = Vec::new();
    for f in [
        "read_iops_device",
        "write_iops_device",
        "read_bps_device",
        "write_bps_device",
    ] {
        let rules =
            std::fs::read_to_string(root.join(format!("blkio.throttle.{f}"))).unwrap_or_default();
        for rule in rules.lines() {
            let Some(dev) = rule.split_whitespace().next() else {
                continue;
            };
            let stray =
                match std::fs::read_to_string(format!("/sys/dev/block/{dev}/loop/backing_file")) {
                    Ok(b) => b.contains(&tag),
                    Err(_) => true,
                };
            if stray {
                v.push(format!("{f}: {rule}"));
            }
        }
    }
    v
}

/// A loop device of the test's own, formatted and mounted: nothing but
/// the run under test writes to it (`make test` runs other test binaries
/// beside this one, which write to the machine's disk). Unmounted and
/// detached when dropped.
pub struct OwnDevice {
    /// The device (`/dev/loopN`).
    pub dev: String,
    /// Where it is mounted.
    pub mount: tempfile::TempDir,
    _image: tempfile::TempDir,
}

impl OwnDevice {
    /// The device, or why loop devices cannot be made here.
    pub fn new() -> Result<OwnDevice, String> {
        ampbench::setup::storage::check_abilities(ampbench::setup::storage::Fs::Ext4)?;
        let image = tempfile::tempdir().map_err(|e| e.to_string())?;
        let file = image.path().join("disk.img");
        std::fs::File::create(&file)
            .and_then(|f| f.set_len(512 << 20))
            .map_err(|e| e.to_string())?;
        let o = std::process::Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&file)
            .output()
            .map_err(|e| e.to_string())?;
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).into_owned());
        }
        let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let mount = tempfile::tempdir().map_err(|e| e.to_string())?;
        let own = OwnDevice {
            dev,
            mount,
            _image: image,
        };
        let sh = |c: &mut std::process::Command| c.status().is_ok_and(|s| s.success());
        if !sh(std::process::Command::new("mkfs.ext4").args(["-q", &own.dev]))
            || !sh(std::process::Command::new("mount")
                .arg(&own.dev)
                .arg(own.mount.path()))
        {
            return Err(format!("cannot format and mount {}", own.dev));
        }
        Ok(own)
    }
}

impl Drop for OwnDevice {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.mount.path())
            .status();
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.dev])
            .status();
    }
}
