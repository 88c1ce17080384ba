//! Figures computed by hand from made-up samples.
use super::*;
use crate::probe::{DirSize, DiskCounters, MachineCpu, ProcCounters};

fn samples() -> (Sample, Sample) {
    let a = Sample {
        t: 0.0,
        disk: Some(DiskCounters {
            reads: 100,
            sectors_read: 1000,
            writes: 5,
            sectors_written: 2000,
        }),
        cpu: Some(MachineCpu {
            user: 1000,
            system: 500,
            iowait: 0,
            idle: 0,
            steal: 0,
            ctxt: 10_000,
        }),
        process: Some(ProcCounters {
            read_bytes: 0,
            write_bytes: 1 << 20,
            cpu_us: 1_000_000,
            ctx_switches: 50,
            rss: 1,
            rss_peak: 1,
            ..Default::default()
        }),
        client: None,
        backing: None,
        model: None,
        server: None,
        remote: false,
        host: None,
        dir: DirSize {
            allocated: 0,
            apparent: 0,
            files: 0,
        },
    };
    let b = Sample {
        t: 10.0,
        // +300 reads, +2048 sectors read (1 MiB), +20480 sectors written (10 MiB)
        disk: Some(DiskCounters {
            reads: 400,
            sectors_read: 3048,
            writes: 105,
            sectors_written: 22480,
        }),
        // +200 ticks of user+system at 100 Hz = 2 s; +4000 context switches
        cpu: Some(MachineCpu {
            user: 1150,
            system: 550,
            iowait: 7,
            idle: 9,
            steal: 0,
            ctxt: 14_000,
        }),
        process: Some(ProcCounters {
            read_bytes: 512 << 10,
            write_bytes: 5 << 20,
            cpu_us: 1_500_000,
            ctx_switches: 1050,
            rss: 300 << 20,
            rss_peak: 400 << 20,
            ..Default::default()
        }),
        client: None,
        backing: None,
        model: None,
        server: None,
        remote: false,
        host: None,
        dir: DirSize {
            allocated: 30 << 20,
            apparent: 25 << 20,
            files: 4,
        },
    };
    (a, b)
}

fn get(f: &[(Metric, Figure)], n: &str) -> Option<f64> {
    let m = Metric::parse(n).unwrap();
    f.iter().find(|(k, _)| *k == m).and_then(|(_, v)| v.value())
}

#[test]
fn client_cost_split_by_hand() {
    let (mut a, mut b) = samples();
    let c = |user_us, sys_us, cs, sc| ProcCounters {
        user_us,
        sys_us,
        cpu_us: user_us + sys_us,
        ctx_switches: cs,
        syscalls: sc,
        ..Default::default()
    };
    a.client = Some(c(1000, 500, 10, Some(100)));
    b.client = Some(c(41_000, 20_500, 1010, Some(3100)));
    let w = WorkDone {
        ops: 1000,
        secs: 10.0,
        ..Default::default()
    };
    let f = compute(&a, &b, &w, None, 100.0);
    assert_eq!(get(&f, "client_cpu_us_per_op"), Some(60.0));
    assert_eq!(get(&f, "client_user_us_per_op"), Some(40.0));
    assert_eq!(get(&f, "client_sys_us_per_op"), Some(20.0));
    assert_eq!(get(&f, "client_cs_per_op"), Some(1.0));
    assert_eq!(get(&f, "client_syscalls_per_op"), Some(3.0));
    // Not counted: said, not 0.
    b.client = Some(c(41_000, 20_500, 1010, None));
    let f = compute(&a, &b, &w, None, 100.0);
    assert_eq!(get(&f, "client_syscalls_per_op"), None);
    // An embedded engine has no client figures.
    let (a, b) = samples();
    let f = compute(&a, &b, &w, None, 100.0);
    assert_eq!(get(&f, "client_cpu_us_per_op"), None);
}

#[test]
fn hand_computed_figures() {
    let (a, b) = samples();
    let w = WorkDone {
        ops: 1000,
        secs: 10.0,
        logical_bytes: 10 << 20,
        logical_written: 5 << 20,
    };
    let f = compute(&a, &b, &w, None, 100.0);
    assert_eq!(f.len(), Metric::ALL.len());
    for ((n, _), want) in f.iter().zip(Metric::ALL) {
        assert_eq!(n, want);
    }
    assert_eq!(get(&f, "ops"), Some(1000.0));
    assert_eq!(get(&f, "ops_per_sec"), Some(100.0));
    assert_eq!(get(&f, "r_per_op"), Some(0.3)); // 300 reads / 1000 ops
    assert_eq!(get(&f, "rkb_per_op"), Some(1.024)); // 1024 KiB / 1000
    assert_eq!(get(&f, "wkb_per_op"), Some(10.24)); // 10240 KiB / 1000
    assert_eq!(get(&f, "proc_rkb_per_op"), Some(0.512)); // 512 KiB / 1000
    assert_eq!(get(&f, "proc_wkb_per_op"), Some(4.096)); // 4 MiB / 1000
    assert_eq!(get(&f, "cpu_us_per_op"), Some(500.0)); // 0.5 s / 1000
    assert_eq!(get(&f, "sys_cpu_us_per_op"), Some(2000.0)); // 2 s / 1000
    assert_eq!(get(&f, "cs_per_op"), Some(1.0));
    assert_eq!(get(&f, "sys_cs_per_op"), Some(4.0));
    assert_eq!(get(&f, "rss_bytes"), Some((300 << 20) as f64));
    assert_eq!(get(&f, "db_bytes"), Some((30 << 20) as f64));
    assert_eq!(get(&f, "db_apparent_bytes"), Some((25 << 20) as f64));
    assert_eq!(get(&f, "space_amp"), Some(3.0)); // 30 MiB / 10 MiB
    assert_eq!(get(&f, "write_amp"), Some(2.0)); // 10 MiB / 5 MiB
}

#[test]
fn device_model_figures_by_hand() {
    use crate::probe::modelstats::ModelCounters;
    let (mut a, mut b) = samples();
    let w = WorkDone {
        ops: 1000,
        secs: 10.0,
        ..Default::default()
    };
    let f = compute(&a, &b, &w, None, 100.0);
    assert_eq!(get(&f, "dev_latency_us"), None, "not modelled: said, not 0");
    a.t = 0.0;
    b.t = 10.0;
    a.model = Some(ModelCounters {
        ios: 100,
        flushes: 10,
        waited: 5,
        medium_writes: 50,
        latency_ns: 1_000_000,
        late: 2,
        late_ns: 60_000,
        ..Default::default()
    });
    b.model = Some(ModelCounters {
        ios: 2100,
        flushes: 510,
        waited: 505,
        medium_writes: 850,
        latency_ns: 16_001_000_000,
        late: 102,
        late_ns: 3_060_000,
        absorbed: 300,
        cache_reads: 40,
        // 64 MiB held for the whole 10 s.
        dirty_byte_ms: 64 * (1 << 20) * 10_000,
        ..Default::default()
    });
    let f = compute(&a, &b, &w, None, 100.0);
    assert_eq!(get(&f, "dev_flush_per_op"), Some(0.5)); // 500 / 1000 ops
    assert_eq!(get(&f, "dev_latency_us"), Some(8000.0)); // 16 s / 2000 IOs
    assert_eq!(get(&f, "dev_qd"), Some(1.6)); // 16 s of latency in 10 s
    assert_eq!(get(&f, "dev_waited_share"), Some(0.25)); // 500 / 2000
    assert_eq!(get(&f, "dev_medium_w_per_op"), Some(0.8)); // 800 / 1000
    assert_eq!(get(&f, "dev_late_share"), Some(0.05)); // 100 / 2000
    assert_eq!(get(&f, "dev_late_us"), Some(30.0)); // 3 ms / 100
    assert_eq!(get(&f, "dev_absorbed_per_op"), Some(0.3)); // 300 / 1000
    assert_eq!(get(&f, "dev_cache_r_per_op"), Some(0.04)); // 40 / 1000
    assert_eq!(get(&f, "dev_dirty_mb"), Some(64.0));
}

#[test]
fn server_counters_by_hand_and_a_remote_server() {
    use crate::probe::ServerCounters;
    let (mut a, mut b) = samples();
    let w = WorkDone {
        ops: 1000,
        secs: 10.0,
        logical_bytes: 10 << 20,
        ..Default::default()
    };
    let f = compute(&a, &b, &w, None, 100.0);
    assert_eq!(get(&f, "srv_r_per_op"), None, "no counters: said, not 0");
    a.server = Some(ServerCounters {
        reads: Some(100),
        read_bytes: Some(100 * 16384),
        data_written: Some(1 << 20),
        log_written: Some(0),
        db_bytes: Some(1),
    });
    b.server = Some(ServerCounters {
        reads: Some(600),
        read_bytes: Some(600 * 16384),
        data_written: Some(9 << 20),
        log_written: Some(2 << 20),
        db_bytes: None,
    });
    let f = compute(&a, &b, &w, None, 100.0);
    assert_eq!(get(&f, "srv_r_per_op"), Some(0.5)); // 500 / 1000
    assert_eq!(get(&f, "srv_rkb_per_op"), Some(8.0)); // 500 × 16 KiB / 1000
    assert_eq!(get(&f, "srv_wkb_per_op"), Some(10.24)); // (8 + 2) MiB / 1000
    assert_eq!(get(&f, "srv_log_kb_per_op"), Some(2.048));
    assert_eq!(get(&f, "srv_db_bytes"), None);
    // Local figures stand beside them.
    assert_eq!(get(&f, "db_bytes"), Some((30 << 20) as f64));
    assert_eq!(get(&f, "space_amp"), Some(3.0));
    // A remote server: no process, files or device here are its.
    b.remote = true;
    b.process = None;
    b.server.as_mut().unwrap().db_bytes = Some(20 << 20);
    let f = compute(&a, &b, &w, Some("external target"), 100.0);
    assert_eq!(get(&f, "db_bytes"), None);
    assert_eq!(get(&f, "cpu_us_per_op"), None);
    assert_eq!(get(&f, "space_amp"), Some(2.0)); // 20 MiB on the server / 10 MiB
    assert_eq!(get(&f, "srv_db_bytes"), Some((20 << 20) as f64));
    let why = |n: &str| {
        let m = Metric::parse(n).unwrap();
        match &f.iter().find(|(k, _)| *k == m).unwrap().1 {
            Figure::NotMeasured(w) => w.clone(),
            Figure::Value(v) => panic!("{n} = {v}"),
        }
    };
    assert!(why("cpu_us_per_op").contains("another host"));
    assert!(why("db_bytes").contains("another host"));
}

#[test]
fn missing_device_and_zero_ops_are_not_zero() {
    let (mut a, b) = samples();
    a.disk = None;
    let w = WorkDone {
        ops: 0,
        secs: 1.0,
        logical_bytes: 0,
        logical_written: 0,
    };
    let f = compute(&a, &b, &w, Some("tmpfs"), 100.0);
    let fig = |n: &str| {
        let m = Metric::parse(n).unwrap();
        f.iter().find(|(k, _)| *k == m).unwrap().1.clone()
    };
    assert_eq!(fig("r_per_op"), Figure::NotMeasured("tmpfs".into()));
    assert_eq!(
        fig("cpu_us_per_op"),
        Figure::NotMeasured("no operations in this phase".into())
    );
    assert!(matches!(fig("space_amp"), Figure::NotMeasured(_)));
    assert!(matches!(fig("write_amp"), Figure::NotMeasured(_)));
    assert_eq!(fig("ops"), Figure::Value(0.0));
}

#[test]
fn host_counters_by_hand() {
    use crate::probe::HostCounters;
    let (mut a, mut b) = samples();
    let w = WorkDone {
        ops: 2000,
        secs: 10.0,
        ..Default::default()
    };
    let f = compute(&a, &b, &w, None, 100.0);
    assert_eq!(
        get(&f, "host_cpu_us_per_op"),
        None,
        "no exporter: said, not 0"
    );
    a.host = Some(HostCounters {
        reads: 10,
        read_bytes: 10 * 4096,
        writes: 5,
        written_bytes: 1 << 20,
        cpu_busy_us: 3_000_000,
    });
    b.host = Some(HostCounters {
        reads: 1010,
        read_bytes: 1010 * 4096,
        writes: 50,
        written_bytes: 5 << 20,
        cpu_busy_us: 4_000_000,
    });
    let f = compute(&a, &b, &w, None, 100.0);
    assert_eq!(get(&f, "host_r_per_op"), Some(0.5)); // 1000 / 2000
    assert_eq!(get(&f, "host_rkb_per_op"), Some(2.0)); // 4000 KB / 2000
    assert_eq!(get(&f, "host_wkb_per_op"), Some(2.048)); // 4096 KB / 2000
    assert_eq!(get(&f, "host_cpu_us_per_op"), Some(500.0)); // 1 s / 2000
}
