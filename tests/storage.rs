//! IO-bound runs on a dedicated, throttled device with a memory limit:
//! the throttle holds for an LSM, a B-Tree and a server; a memory limit
//! makes point reads reach the device; nothing of ours outlives a run
//! (success, failure, Ctrl-C, kill -9 then `doctor --cleanup`); the
//! fallback to native storage where loop devices are not allowed.
//! Tests that need root and loop devices say why they skip.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{BIN, interval_iops, ok, run, run_config, storage_pid};

/// Why this machine cannot run the dedicated-device tests, if it cannot.
fn no_dedicated_device() -> Option<String> {
    ampbench::setup::storage::check_abilities(ampbench::setup::storage::Fs::Ext4).err()
}

/// Skips the test, saying why, where this machine has no dedicated
/// device; `need_device!(guard)` also holds the device lock, so that
/// tests that measure a device's rates run one at a time (in every test
/// binary). A test that only checks what a run leaves behind or how it
/// fails takes no lock (`need_device!()`) and may run beside them, as
/// other test binaries' runs do: the rate bounds allow for a loaded
/// machine.
macro_rules! need_device {
    () => {
        if let Some(why) = no_dedicated_device() {
            ampbench::testing::skip("storage", &format!("no dedicated device here: {why}"));
            return;
        }
    };
    ($guard:ident) => {
        let $guard = common::device_lock();
        need_device!();
    };
}

/// Loop devices, mounts and cgroups named after `pid` that still exist,
/// and throttle rules that outlived their run.
fn leftovers(pid: u32) -> Vec<String> {
    let tag = format!("ampbench-{pid}-");
    let mut v = Vec::new();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        if let Ok(b) = std::fs::read_to_string(e.path().join("loop/backing_file")) {
            if b.contains(&tag) {
                v.push(format!("loop device {:?} on {}", e.file_name(), b.trim()));
            }
        }
    }
    for l in std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
    {
        if l.contains(&tag) {
            v.push(format!("mount {l}"));
        }
    }
    if let Some(home) = ampbench::setup::cgroup::own_dir(Some("memory")) {
        for e in std::fs::read_dir(home).into_iter().flatten().flatten() {
            if e.file_name().to_string_lossy().starts_with(&tag) {
                v.push(format!("cgroup {}", e.path().display()));
            }
        }
    }
    v.extend(common::stray_throttle_rules(pid));
    v
}

/// Asserts nothing of run `pid` is left.
fn assert_clean(pid: u32) {
    let left = leftovers(pid);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A write-heavy step (synced overwrites) under a 300 IOPS cap, on an
/// LSM, a B-Tree and a server: in every interval of at least half a
/// second the device did at most 330 reads/s and 330 writes/s, and the
/// write step did write.
#[test]
fn throttle_holds_for_lsm_btree_and_server() {
    need_device!(_serial);
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let out = ok(&[
        "run",
        "-e",
        "rocksdb,wiredtiger,postgres",
        "--steps",
        "load,ows.1,owa.1",
        "-p",
        "docs=10000",
        "--iops",
        "300",
        "--mbps",
        "40",
        "--device-size",
        "2GB",
        "--warmup",
        "0",
        "--duration",
        "2",
        "--interval",
        "1",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    assert!(out.contains("storage: custom on /dev/loop"), "{out}");
    assert!(out.contains("read 300 IOPS 40 MB/s"), "{out}");
    let rows = interval_iops(&res);
    for engine in ["rocksdb", "wiredtiger", "postgres"] {
        let writes: f64 = rows
            .iter()
            .filter(|r| r.0 == engine && r.1.starts_with("ow"))
            .map(|r| r.3 * r.4)
            .sum();
        assert!(writes > 100.0, "{engine}: only {writes} device writes");
    }
    for (e, s, r, w, secs) in &rows {
        if *secs >= 0.5 {
            assert!(
                *r <= 330.0 && *w <= 330.0,
                "{e} {s}: {r:.0} reads/s, {w:.0} writes/s over {secs:.1}s"
            );
        }
    }
    assert_clean(storage_pid(&out));
}

/// The IO-bound corner in one flag: with a 96MB memory limit (cache 24MB)
/// a database of ~110MB answers point reads from the device (r/o > 0.3);
/// the same run cached, on an unthrottled device, does not (r/o < 0.05). The
/// probe stored its measured IOPS with the run.
#[test]
fn memory_limit_makes_point_reads_reach_the_device() {
    need_device!(_serial);
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let common = [
        "run",
        "-e",
        "rocksdb",
        "--steps",
        "load,pq.1",
        "-p",
        "docs=200000",
        "--warmup",
        "0",
        "--duration",
        "2",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ];
    let mut a = common.to_vec();
    a.extend([
        // Its probe's figures are checked: the phase a run takes
        // whatever AMPBENCH_STORAGE_PROBE says (the cached run's are not).
        "--storage-probe",
        "1",
        "--memory",
        "96MB",
        "--storage",
        "slow-ssd",
        "--device-size",
        "2GB",
    ]);
    a.extend(["--set", "rocksdb.write_buffer_size=8388608"]);
    let out = ok(&a);
    assert!(
        out.contains("engine cache 24MB (a quarter of the limit"),
        "{out}"
    );
    assert!(out.contains("use_direct_reads=true"), "{out}");
    // Cached on an unthrottled device of its own: native storage would
    // count every read of the machine's disk, other tests' included.
    let mut b = common.to_vec();
    b.extend(["--storage", "dedicated", "--device-size", "2GB"]);
    ok(&b);
    let c = rusqlite::Connection::open(&res).unwrap();
    let ro = |run: i64| -> f64 {
        c.query_row(
            "SELECT f.value FROM figures f JOIN steps s ON s.id = f.step_id
             WHERE s.run_id = ?1 AND s.step = 'pq.1' AND f.name = 'r_per_op' AND f.interval_idx = -1",
            [run],
            |r| r.get(0),
        )
        .unwrap()
    };
    let (bound, cached) = (ro(1), ro(2));
    assert!(bound > 0.3 && bound < 3.0, "IO-bound r/o {bound}");
    assert!(cached < 0.05, "cached r/o {cached}");
    let cfg = run_config(&res, 1);
    let qd1 = cfg["storage_effective"]["measured"]["read_qd1"]["ops_per_sec"]
        .as_f64()
        .unwrap();
    // The model's 250 µs reads give about 4,000/s at QD1 alone; while
    // other tests run beside it (make test runs two binaries at once) the
    // FUSE round trips wait for a core: 842/s was seen, and 358/s in CI
    // (the device model's CPU per IO, issue 48). Over 250/s is still a
    // flash device (a disk is about 120/s, disk-array's 7.5 ms 133/s),
    // under 11,000/s capped.
    assert!(qd1 > 250.0 && qd1 < 11_000.0, "slow-ssd QD1 reads {qd1}/s");
    assert_eq!(cfg["memory"], 96 << 20);
}

/// Issue 31: a limit an embedded engine cannot live in (RocksDB's
/// IO-bound profile sizes its memtables to the limit; here they are set
/// back to 64MB). The engine runs in a process of its own in the memory
/// group, so the kernel's OOM killer ends that process only: its step is
/// `failed (killed at the memory limit)` in the output and the results,
/// the next engine (`null`, in its own process too) still runs, the run
/// ends with exit 1, and
/// nothing outlives it.
#[test]
fn an_engine_killed_at_its_memory_limit_fails_its_step_only() {
    need_device!();
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let o = run(&[
        "run",
        "-e",
        "rocksdb,null",
        "--steps",
        "load",
        "-p",
        "docs=200000",
        "--memory",
        "48MB",
        "--set",
        "rocksdb.write_buffer_size=67108864",
        "--set",
        "rocksdb.db_write_buffer_size=67108864",
        "--device-size",
        "1GB",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("load: FAILED: killed at the memory limit")
            && out.contains("--memory limit of 48MB"),
        "{out}"
    );
    let j = common::report_json(res.to_str().unwrap(), "latest");
    let steps = j["steps"].as_array().unwrap();
    let find = |e: &str| {
        steps
            .iter()
            .find(|s| s["engine"] == e && s["step"] == "load")
            .unwrap_or_else(|| panic!("no {e} load: {j}"))
    };
    assert_eq!(find("rocksdb")["status"], "failed", "{j}");
    assert!(
        find("rocksdb")["error"]
            .as_str()
            .unwrap_or_default()
            .contains("killed at the memory limit"),
        "{j}"
    );
    assert_eq!(find("null")["status"], "done", "{j}");
    assert!(find("null")["ops"].as_f64().unwrap() >= 200_000.0, "{j}");
    assert_clean(storage_pid(&out));
}

/// A device too small for the load: the step fails with "No space left"
/// and the path, the run ends with exit 1, and nothing is left behind.
/// A full device fails the step with one line naming the path and that no
/// space is left, whatever the engine makes of ENOSPC (LMDB's commit says
/// EIO), keeps what was measured, and the next engine runs.
#[test]
fn full_device_fails_the_step_and_cleans_up() {
    need_device!();
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let o = run(&[
        "run",
        "-e",
        "lmdb,rocksdb",
        "--steps",
        "load",
        "-p",
        "docs=200000",
        "--device-size",
        "48MB",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert_clean(storage_pid(&out));
    let json = run(&[
        "report",
        "--format",
        "json",
        "--results",
        res.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let steps = v["steps"].as_array().unwrap();
    for engine in ["lmdb", "rocksdb"] {
        let s = steps
            .iter()
            .find(|s| s["engine"] == engine && s["step"] == "load")
            .unwrap_or_else(|| panic!("{engine} did not run: {out}"));
        assert_eq!(s["status"], "failed", "{s}");
        let e = s["error"].as_str().unwrap();
        assert!(
            e.starts_with("no space left on the device of ")
                && e.contains(&format!("ampbench-{engine}-")),
            "{e}"
        );
        assert!(!e.contains('\n'), "one line: {e}");
        // What the step did before the device filled is kept.
        assert!(s["ops"].as_f64().unwrap() > 0.0, "{s}");
    }
}

fn spawn(d: &Path, extra: &[&str]) -> std::process::Child {
    Command::new(BIN)
        .args([
            "run",
            "-e",
            "rocksdb",
            "--steps",
            "load,pq.1",
            "-p",
            "docs=20000",
            "--memory",
            "128MB",
            "--warmup",
            "0",
            "--duration",
            "60",
            "--device-size",
            "1GB",
        ])
        .args(extra)
        .arg("--results")
        .arg(d.join("r.db"))
        .arg("--dir")
        .arg(d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the child's device is mounted and its cgroup exists.
fn wait_for_setup(pid: u32) {
    let t0 = Instant::now();
    // The device's mount and the engine's cgroup (a modelled device adds
    // its FUSE mount: counting entries is not enough).
    let ready = |l: &[String]| {
        l.iter().any(|e| e.starts_with("cgroup")) && l.iter().any(|e| e.starts_with("mount"))
    };
    while !ready(&leftovers(pid)) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "never set up: {:?}",
            leftovers(pid)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Into the timed step.
    std::thread::sleep(Duration::from_secs(3));
}

/// Ctrl-C (a real SIGINT) mid-step, Ctrl-C twice (the second while the
/// first's cleanup runs), and SIGTERM (`kill`, `timeout`): the run ends
/// interrupted (exit 1) with its partial report, and its device, mount,
/// throttle and cgroup are gone.
#[test]
fn ctrl_c_leaves_nothing() {
    need_device!();
    for sigs in [
        &[libc::SIGINT][..],
        &[libc::SIGINT, libc::SIGINT],
        &[libc::SIGTERM],
    ] {
        let d = tempfile::tempdir().unwrap();
        let child = spawn(d.path(), &["--storage", "disk-array"]);
        let pid = child.id();
        wait_for_setup(pid);
        for sig in sigs {
            // SAFETY: signals our own child.
            unsafe { libc::kill(pid as i32, *sig) };
            std::thread::sleep(Duration::from_millis(100));
        }
        let o = child.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        // A second signal that comes before the first one's orderly end
        // ends the run at once (130, no report); either way nothing stays.
        if o.status.code() == Some(130) && sigs.len() == 2 {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("second interrupt"), "{err}");
        } else {
            assert_eq!(o.status.code(), Some(1), "signals {sigs:?}: {out}");
            assert!(out.contains("interrupted"), "signals {sigs:?}: {out}");
            assert!(out.contains("\nresults: "), "a partial report: {out}");
        }
        assert_clean(pid);
    }
}

/// kill -9 of ampbench mid-step leaves its device, mount, throttle and
/// cgroup; `doctor --cleanup` removes them all.
#[test]
fn killed_run_is_cleaned_by_doctor() {
    need_device!(_serial);
    let d = tempfile::tempdir().unwrap();
    let mut child = spawn(d.path(), &["--storage", "disk-array"]);
    let pid = child.id();
    wait_for_setup(pid);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!leftovers(pid).is_empty(), "a killed run leaves its setup");
    let out = ok(&["doctor", "--cleanup"]);
    // Every run cleans what killed runs left as it starts: one started
    // by another test binary in between may have been first.
    assert!(
        out.contains(&format!("left by ampbench {pid}")) || leftovers(pid).is_empty(),
        "{out}"
    );
    assert_clean(pid);
}

/// Where loop devices are not allowed (here: not root), the run says so
/// in one line, runs on native storage and records why.
#[test]
fn not_root_falls_back_to_native() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        ampbench::testing::skip("storage", "needs root to run ampbench as another user");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let res = d.path().join("r.db");
    let o = Command::new("runuser")
        .args([
            "-u", "nobody", "--", BIN, "run", "-e", "lmdb", "--steps", "load",
        ])
        .args(["-p", "docs=1000", "--storage", "slow-ssd", "--results"])
        .arg(&res)
        .arg("--dir")
        .arg(d.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line: Vec<&str> = out.lines().filter(|l| l.starts_with("storage:")).collect();
    assert_eq!(line.len(), 1, "{out}");
    assert!(
        line[0].contains("slow-ssd not possible here (not root")
            && line[0].contains("native storage instead"),
        "{out}"
    );
    let cfg = run_config(&res, 1);
    assert_eq!(cfg["storage_effective"]["class_effective"], "native");
    assert!(
        cfg["storage_effective"]["fallback"]
            .as_str()
            .unwrap()
            .contains("not root")
    );
}

/// `--bound io` without `--memory` limits memory to a quarter of what
/// the load writes (here 20000 × (32 + 512) bytes = 10.9 MB, so the 64MB
/// floor), recorded; `--bound cache` with `--memory` and `--bound io` on
/// LinkBench without `--memory` are one-line errors (exit 2).
#[test]
fn bound_presets() {
    need_device!(_serial);
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let out = ok(&[
        "run",
        "-e",
        "lmdb",
        "--steps",
        "load,pq.1",
        "-p",
        "docs=20000",
        "--bound",
        "io",
        "--warmup",
        "0",
        "--duration",
        "0.3",
        "--storage",
        "native",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    assert!(
        out.contains("memory: 64MB (--bound io: a quarter of the 11 MB the load writes)"),
        "{out}"
    );
    let cfg = run_config(&res, 1);
    assert_eq!(cfg["bound"], "io");
    assert_eq!(cfg["memory_from_data"], 20000 * 544);
    for args in [
        &["run", "--bound", "cache", "--memory", "1GB"][..],
        &["run", "-w", "linkbench", "--bound", "io"][..],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("--bound"), "{err}");
    }
}

/// `--keep` on a dedicated device keeps the image: the device is undone,
/// but the engine's files are there when the image is mounted again.
#[test]
fn keep_keeps_the_devices_image() {
    need_device!();
    let d = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["run", "-e", "lmdb", "--steps", "load", "-p", "docs=2000"])
        .args(["--storage", "fast-ssd", "--device-size", "64MB", "--keep"])
        .arg("--results")
        .arg(d.path().join("r.db"))
        .arg("--dir")
        .arg(d.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("kept ") && l.contains("its image"))
        .unwrap_or_else(|| panic!("no kept line: {out}"));
    let image = line
        .split("mount -o loop ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap();
    let kept = line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_start_matches('/');
    assert!(Path::new(image).exists(), "{line}");
    // Issue 31: the image holds the engine's data; only root reads it.
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(image).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{image}");
    }
    assert_clean(storage_pid(&out));
    let m = d.path().join("mnt");
    std::fs::create_dir(&m).unwrap();
    let st = Command::new("mount")
        .args(["-o", "loop,ro", image])
        .arg(&m)
        .status()
        .unwrap();
    assert!(st.success());
    // Mounted again, the kept image is not a killed run's leftover: the
    // sweep every run starts with leaves it alone.
    let sweep = Command::new(BIN)
        .args(["doctor", "--cleanup"])
        .output()
        .unwrap();
    let data = m.join(kept).join("data.mdb");
    let found = data.exists();
    let _ = Command::new("umount").arg(&m).status();
    let swept = String::from_utf8_lossy(&sweep.stdout);
    assert!(!swept.contains(image), "{swept}");
    assert!(found, "{} not in the kept image", data.display());
    assert!(Path::new(image).exists(), "the sweep deleted {image}");
    assert!(image.ends_with("-kept.img"), "{image}");
    let _ = std::fs::remove_file(image);
}

/// Issue 31: a --dir with a space in its name. /proc/self/mountinfo
/// writes the space as `\040`; read as it was written, the mount was not
/// found and stayed after the run, and every cleanup after reported it
/// removed. Now nothing is left, and a cleanup after finds nothing.
#[test]
fn a_dir_with_a_space_leaves_nothing() {
    need_device!();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("a b");
    let o = Command::new(BIN)
        .args(["run", "-e", "lmdb", "--steps", "load", "-p", "docs=2000"])
        .args(["--storage", "fast-ssd", "--device-size", "64MB"])
        .arg("--results")
        .arg(d.path().join("r.db"))
        .arg("--dir")
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("a b/ampbench-"),
        "on the device in the dir: {out}"
    );
    let pid = storage_pid(&out);
    assert_clean(pid);
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!info.contains("a\\040b"), "{info}");
    let sweep = ok(&["doctor", "--cleanup"]);
    assert!(!sweep.contains(&format!("ampbench {pid}")), "{sweep}");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert!(left.is_empty(), "left in {}: {left:?}", dir.display());
}

/// Issue 31 (review): a --dir below a directory other users may write in
/// that is not sticky is refused in one line before anything is made: the
/// device's image or mount point could be swapped there between their
/// making and their use. A sticky one (/tmp) is fine.
#[test]
fn a_dir_others_can_rename_in_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let open = d.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let res = d.path().join("r.db");
    let o = run(&[
        "run",
        "-e",
        "null",
        "--storage",
        "dedicated",
        "--dir",
        open.join("data").to_str().unwrap(),
        "--results",
        res.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("not sticky"), "{err}");
    assert!(!res.exists() && !open.join("data").exists(), "nothing made");
}

/// Issue 32: `disk-array` is a device model behind the loop device, not
/// a rate cap. Its probe, with the battery-backed write cache and with
/// `--device-model cache=off`: random reads at QD1 are a disk's (80–200/s),
/// at QD32 the array's (800–1,300/s); in the 50/50 mix what reaches the
/// medium (reads plus the cache's destages) stays within the 1,000 IOPS
/// budget +10%, while the reads alone get less than at QD16 without
/// writes; synced writes are acknowledged by the cache (under a quarter
/// of a disk's 8.5 ms write) and without it wait for a disk (≤ 200/s). Nothing outlives either run.
#[test]
fn disk_array_is_a_modelled_array_of_disks() {
    need_device!(_serial);
    if !Path::new("/dev/fuse").exists() {
        ampbench::testing::skip("storage", "no /dev/fuse: the device model cannot be served");
        return;
    }
    for cache in ["battery", "off"] {
        let d = tempfile::tempdir().unwrap();
        let res = d.path().join("r.db");
        let out = ok(&[
            "run",
            "-w",
            "micro",
            "-e",
            "null",
            "--steps",
            "fillseq",
            "-p",
            "num=1000",
            "--storage",
            "disk-array",
            "--device-model",
            &format!("cache={cache}"),
            "--device-size",
            "1GB",
            // Its probe's figures are checked: the phase a run takes
            // whatever AMPBENCH_STORAGE_PROBE says. Without the cache only
            // the synced writes are (half a second: 60 at a disk's 8.5 ms).
            "--storage-probe",
            if cache == "off" { "0.5" } else { "1" },
            "--warmup",
            "0",
            "--duration",
            "1",
            "--results",
            res.to_str().unwrap(),
            "--dir",
            d.path().to_str().unwrap(),
        ]);
        assert!(out.contains("device model: 10 units"), "{out}");
        let cfg = run_config(&res, 1);
        let m = &cfg["storage_effective"]["measured"];
        let f = |k: &str| m[k]["ops_per_sec"].as_f64().unwrap();
        let full = |k: &str, v: &str| m["full"][k][v].as_f64().unwrap();
        let sync = f("write_sync");
        if cache == "battery" {
            let (qd1, qd32) = (f("read_qd1"), f("read_qd32"));
            assert!((80.0..=200.0).contains(&qd1), "QD1 {qd1}/s: {m}");
            // Ten units at once: about ten times QD1 alone (1,200/s), less
            // when the model waits for a core (other test binaries run
            // beside this one), never more than ten units' worth.
            assert!(
                (500.0..=1300.0).contains(&qd32) && qd32 > 4.0 * qd1,
                "QD32 {qd32}/s (QD1 {qd1}/s): {m}"
            );
            let medium = full("mix_reads", "medium_per_sec");
            assert!(medium <= 1100.0, "the mix at the medium {medium}/s: {m}");
            let (mixed, alone) = (
                full("mix_reads", "ops_per_sec"),
                full("read_qd16", "ops_per_sec"),
            );
            assert!(
                mixed < alone * 0.8,
                "mix reads {mixed}/s, alone {alone}/s: {m}"
            );
            // Acknowledged by the cache: well under a disk's 8.5 ms write.
            // A bound on latency, not on rate: on a loaded machine the
            // model's own CPU (~120 µs an IO there) and the kernel's
            // journal and loop threads, which wait for a core like any
            // other, cap the rate (250/s, 4.0 ms, with four test binaries
            // on two cores), while a write that waited for a disk would
            // still take ≥ 8.5 ms.
            let sync_us = m["write_sync"]["mean_us"].as_f64().unwrap();
            assert!(
                sync_us < 8_500.0 * 0.75,
                "synced writes {sync}/s, {sync_us} µs with the cache: {m}"
            );
            assert!(out.contains("battery-backed write cache"), "{out}");
        } else {
            assert!(sync <= 200.0, "synced writes {sync}/s without a cache: {m}");
            assert!(out.contains("no write cache"), "{out}");
        }
        assert_clean(storage_pid(&out));
    }
}

/// Issue 32: a storage sweep's classes run the same workload. Each class
/// runs the request step on the database the previous class left, with a
/// stream of its own: ADD_LINK's statements per call (its rollbacks and
/// fallbacks to the update path) agree at both classes, where a replayed
/// stream made every later ADD_LINK find its link already there.
#[test]
fn a_storage_sweeps_classes_run_the_same_workload() {
    need_device!(_serial);
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let degrees = common::small_degrees(d.path());
    let out = ok(&[
        "run",
        "-w",
        "linkbench",
        "-e",
        "postgres",
        "-p",
        "maxid1=3001",
        "-p",
        &degrees,
        "--storage",
        "dedicated,disk-array-cap",
        "--device-size",
        "4GB", // ext4 -T largefile: one inode per MB, and PostgreSQL makes ~1,500 files
        "--warmup",
        "0",
        "--duration",
        "2",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    let add_link = common::add_link_statements(&out);
    assert_eq!(add_link.len(), 2, "{out}");
    assert!(
        (add_link[0] - add_link[1]).abs() < 0.4,
        "statements per ADD_LINK by class: {add_link:?}\n{out}"
    );
    assert_clean(storage_pid(&out));
}
