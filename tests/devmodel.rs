//! A device of the user's own (`--storage custom:KEY=VALUE,…`) scaled to
//! this machine's cores (`--io-scale cores=N`): the probe measures the
//! scaled budget, and the storage line prints both figures.

use crate::common;
use common::{no_device_model, ok, run, run_config};

#[test]
fn a_custom_device_scaled_to_this_machines_cores_gives_the_scaled_budget() {
    // One device test at a time, in every test binary.
    let _device = common::device_lock();
    if let Some(why) = no_device_model() {
        ampbench::testing::skip("devmodel", &why);
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    // One unit at 1 ms a read would give about 960 reads/s; the budget,
    // 2,400 IOPS scaled by cores/24, is below that on up to 9 cores.
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
        "custom:units=1,read_us=1000,write_us=1000,iops=2400,mbps=240",
        "--io-scale",
        "cores=24",
        "--device-size",
        "1GB",
        // Its probe's figures are checked: the phase a run takes
        // whatever AMPBENCH_STORAGE_PROBE says.
        "--storage-probe",
        "1",
        "--warmup",
        "0",
        "--duration",
        "1",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    let cfg = run_config(&res, 1);
    let eff = &cfg["storage_effective"];
    let factor = eff["io_scale"]["factor"].as_f64().unwrap();
    let cores = eff["io_scale"]["cores"].as_f64().unwrap();
    assert!((factor - cores / 24.0).abs() < 1e-9, "{eff}");
    let budget = 2400.0 * factor;
    assert_eq!(eff["model"]["iops"].as_f64().unwrap(), budget, "{eff}");
    assert_eq!(
        eff["model_nominal"]["iops"].as_f64().unwrap(),
        2400.0,
        "{eff}"
    );
    assert!(out.contains("storage: custom-model on /dev/loop"), "{out}");
    assert!(
        out.contains(&format!("scaled {budget:.0} IOPS")) && out.contains("nominal 2400 IOPS"),
        "{out}"
    );
    if budget < 900.0 {
        let qd32 = eff["measured"]["read_qd32"]["ops_per_sec"]
            .as_f64()
            .unwrap();
        assert!(
            (0.8 * budget..=1.15 * budget).contains(&qd32),
            "QD32 reads {qd32}/s against a budget of {budget}: {eff}"
        );
    }
}

#[test]
fn a_custom_device_names_what_it_lacks() {
    let o = run(&["run", "-e", "null", "--storage", "custom:units=1,iops=100"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--storage custom: give read_us, write_us, mbps"),
        "{err}"
    );
    let o = run(&["run", "-e", "null", "--io-scale", "cores=0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--io-scale cores=0"), "{err}");
}

/// Processes whose command line holds `needle` and `device-model`.
fn models_naming(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| {
                let c = String::from_utf8_lossy(&c);
                c.contains(needle) && c.contains("device-model")
            })
        })
        .collect()
}

/// The model's server killed mid-step: the loop device fails every IO,
/// the run stops with one line naming the device model, and its loop
/// device, mounts and directories are gone.
#[test]
fn a_dead_device_model_stops_the_run_in_one_line_and_leaves_nothing() {
    // One device test at a time, in every test binary.
    let _device = common::device_lock();
    if let Some(why) = no_device_model() {
        ampbench::testing::skip("devmodel", &why);
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d
        .path()
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let child = std::process::Command::new(common::BIN)
        .args(["run", "-e", "rocksdb", "--steps", "load,pq.1"])
        .args(["-p", "docs=20000", "--warmup", "0", "--duration", "60"])
        .args([
            "--storage",
            "slow-ssd",
            "--device-size",
            "1GB",
            "--dir",
            &dir,
        ])
        // The engine in a process of its own (a memory limit hosts it):
        // RocksDB asserts on the IO errors that follow, and an abort must
        // take only the engine's host.
        .args(["--memory", "256MB"])
        .arg("--results")
        .arg(d.path().join("r.db"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Into the load: the model runs, and the engine's directory is on
    // the device.
    let engine_dir = || {
        std::fs::read_dir(d.path()).ok()?.flatten().find_map(|e| {
            let dev = e.path();
            dev.to_string_lossy().ends_with("-dev").then_some(())?;
            std::fs::read_dir(&dev).ok()?.flatten().find(|x| {
                x.file_name()
                    .to_string_lossy()
                    .starts_with("ampbench-rocksdb-")
            })
        })
    };
    let t0 = std::time::Instant::now();
    let model = loop {
        let m = models_naming(&dir);
        if m.len() == 1 && engine_dir().is_some() {
            break m[0];
        }
        assert!(t0.elapsed().as_secs() < 60, "the run never set up");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    std::thread::sleep(std::time::Duration::from_secs(1));
    // SAFETY: kills the model's server this test's run started.
    unsafe { libc::kill(model as i32, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_ne!(o.status.code(), Some(0), "{out}");
    let named: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(&format!("the device model (pid {model}) died by signal 9")))
        .collect();
    assert!(!named.is_empty(), "{out}");
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&dir), "a mount left under {dir}\n{out}");
    let loops: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("loop/backing_file")).ok())
        .filter(|b| b.contains(&dir))
        .collect();
    assert!(loops.is_empty(), "loop devices left: {loops:?}");
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != "r.db")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{out}");
}

/// Each of the model's servers (`uring`, `fuse-dev`, the reference
/// `threads`) serves the class probe of the same device: the QD32 reads
/// meet the budget, QD1 reads the model's time (within a quarter; the
/// reference `threads` within half under load), the
/// storage line names the server, and FUSE's io_uring switch is as it
/// was before the run.
#[test]
fn every_server_serves_the_probe_and_puts_the_switch_back() {
    let _device = common::device_lock();
    if let Some(why) = no_device_model() {
        ampbench::testing::skip("devmodel", &why);
        return;
    }
    let switch = "/sys/module/fuse/parameters/enable_uring";
    let before = std::fs::read_to_string(switch).ok();
    for server in ["uring", "fuse-dev", "threads"] {
        if server == "uring" && before.is_none() {
            ampbench::testing::skip(
                "devmodel",
                &format!("{switch}: this kernel has no FUSE over io_uring"),
            );
            continue;
        }
        // QD1 within a quarter of the model's time while other tests run
        // beside it. The reference `threads` server wakes late under load
        // (CI, two test lanes: +31% at QD1 while `uring` was +0.6% and
        // `fuse-dev` +1.0% in the same run), which is why it is not the
        // default: it must stay within half. A test beside it that takes
        // both cores for a while (a Galera cluster starting) makes any
        // server late: a late probe is measured again, twice at most,
        // and the test fails when every one is over the bound.
        let bound = if server == "threads" { 0.5 } else { 0.25 };
        let mut errs = Vec::new();
        let (m, err, qd32) = loop {
            let d = tempfile::tempdir().unwrap();
            let res = d.path().join("r.db");
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_ampbench"))
                .args([
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
                    "custom:units=2,read_us=2000,write_us=2000,iops=600,mbps=100",
                    "--device-size",
                    "1GB",
                    // Its probe's figures are checked: the phase a run takes
                    // whatever AMPBENCH_STORAGE_PROBE says (0.5 s: 250
                    // QD1 reads, 300 at QD32, a phase).
                    "--storage-probe",
                    "0.5",
                    "--warmup",
                    "0",
                    "--duration",
                    "1",
                    "--results",
                    res.to_str().unwrap(),
                    "--dir",
                    d.path().to_str().unwrap(),
                ])
                .env("AMPBENCH_DEVICE_LOOP", server)
                .output()
                .unwrap();
            let out = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(o.status.success(), "{server}:\n{out}");
            let eff = run_config(&res, 1)["storage_effective"].clone();
            let named = eff["model_server"].as_str().unwrap_or_default().to_string();
            assert!(named.starts_with(&format!("{server}:")), "{server}: {eff}");
            assert!(
                out.contains(&format!("the model's server: {server}:")),
                "{out}"
            );
            // The loop device in direct IO, no request over one FUSE request.
            assert_eq!(eff["loop_dio"].as_u64(), Some(1), "{eff}");
            assert!(
                eff["loop_max_request_kb"]
                    .as_u64()
                    .is_some_and(|kb| kb <= 1024),
                "{eff}"
            );
            let m = &eff["measured"];
            let qd32 = m["read_qd32"]["ops_per_sec"].as_f64().unwrap();
            let err = m["model_qd1_error"].as_f64().unwrap();
            errs.push(err);
            // Only a late server is measured again, twice at most: load
            // beside it makes a server late (CI, 2026-11-29: fuse-dev +69%
            // with the model's CPU at 109 µs per IO while a cluster
            // started), never early; an early one is the model's error.
            // At QD32 a late server is one under the budget (a stall of
            // 100 ms is 20% of a 0.5 s phase).
            let late = err > bound || qd32 < 480.0;
            if !late || errs.len() == 3 {
                break (m.clone(), err, qd32);
            }
            eprintln!(
                "{server}: QD1 error {err:+.3} (bound {bound}), QD32 {qd32:.0}/s: measured again"
            );
        };
        assert!(
            (480.0..=660.0).contains(&qd32),
            "{server}: QD32 {qd32}/s against 600: {m}"
        );
        assert!(err.abs() < bound, "{server}: QD1 errors {errs:?}: {m}");
        // What one timed sleep costs here is measured beside it.
        let sleep = m["sleep_cpu_us"].as_f64().unwrap_or(f64::NAN);
        assert!(
            sleep > 0.0 && sleep < 1000.0,
            "{server}: sleep {sleep}: {m}"
        );
        eprintln!(
            "{server}: QD32 {qd32:.0}/s, QD1 error {:+.1}%, model CPU {:.1} µs per IO",
            err * 100.0,
            m["model_cpu_us_per_io"].as_f64().unwrap_or(f64::NAN)
        );
        // Runs of other test binaries (power cuts, crash checks) may hold
        // the switch on for their own start meanwhile: give them a while.
        let t0 = std::time::Instant::now();
        let back = loop {
            let now = std::fs::read_to_string(switch).ok();
            let off = now.as_deref().map(str::trim) == Some("N");
            if now == before || off || t0.elapsed() > std::time::Duration::from_secs(10) {
                break now;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(
            back == before || back.as_deref().map(str::trim) == Some("N"),
            "{switch} after {server}: {back:?}, before {before:?}"
        );
    }
}
