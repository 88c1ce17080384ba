//! Workloads through the driver on real engines.

use std::time::Duration;

use ampbench::driver::{self, Arrival, IntervalRecord, StepSink};
use ampbench::engine::{self, EngineKind, EngineOptions, KeyRange, OpenSpec, Order, Table};
use ampbench::metrics::Latency;
use ampbench::probe::Probe;
use ampbench::workload::{Params, StepCtx, WorkloadKind};

struct Quiet;
impl StepSink for Quiet {
    fn interval(&mut self, _r: &IntervalRecord) -> anyhow::Result<()> {
        Ok(())
    }
    fn interval_latency(&mut self, _i: usize, _l: &[(String, Latency)]) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The key hash is a bijection on the document range: after a load (with
/// several threads), a full scan counts exactly `docs` documents.
#[test]
fn load_then_full_scan_counts_every_doc() {
    for kind in [
        EngineKind::parse("rocksdb").unwrap(),
        EngineKind::parse("wiredtiger").unwrap(),
        EngineKind::parse("lmdb").unwrap(),
    ] {
        let d = tempfile::tempdir().unwrap();
        let p = Params::new(
            "pattern",
            WorkloadKind::Pattern.params(),
            &[
                ("docs".into(), "20011".into()),
                ("batch".into(), "1000".into()),
                ("load_threads".into(), "3".into()),
            ],
        )
        .unwrap();
        let w = WorkloadKind::Pattern.build(&p).unwrap();
        let spec = OpenSpec {
            dir: d.path().into(),
            tables: w.tables(),
            cache_bytes: 8 << 20,
            options: EngineOptions::default(),
            transactions: false,
            transport: Default::default(),
            replication_log: false,
            cgroup: None,
            timeout: Some(ampbench::engine::SERVER_TIMEOUT),
            target: None,
            server_bin: None,
        };
        let e = engine::open(kind, &spec).unwrap();
        let ctx = StepCtx {
            threads: 2,
            warmup: Duration::ZERO,
            duration: Duration::from_millis(100),
            interval: Duration::from_secs(1),
            arrival: Arrival::Closed,
            seed: 1,
            share: Default::default(),
        };
        let planned = w
            .plan(WorkloadKind::Pattern.step("load").unwrap(), e.face(), &ctx)
            .unwrap();
        let o = driver::run_step(
            &planned.spec,
            &*planned.fg,
            None,
            &Probe::new(d.path(), std::process::id()),
            &mut Quiet,
        );
        drop(planned);
        assert_eq!(o.error, None);
        assert_eq!(o.ops, 20011);
        let mut session = e.face().kv().unwrap().session().unwrap();
        let n = session
            .scan(
                Table(0),
                KeyRange::all(),
                Order::Forward,
                usize::MAX,
                &mut |_, _| {},
            )
            .unwrap();
        assert_eq!(n, 20011, "{kind}");
        // Keys were inserted in document order, which is not key order.
        let mut first = Vec::new();
        session
            .scan(Table(0), KeyRange::all(), Order::Forward, 5, &mut |k, _| {
                first.push(k.to_vec())
            })
            .unwrap();
        drop(session);
        let in_doc_order: Vec<Vec<u8>> = (0..5)
            .map(|i| {
                let mut k = Vec::new();
                ampbench::workload::kv::data::doc_key(i, 32, &mut k);
                k
            })
            .collect();
        assert_ne!(first, in_doc_order);
        // Point reads all hit afterwards.
        let planned = w
            .plan(WorkloadKind::Pattern.step("pq.1").unwrap(), e.face(), &ctx)
            .unwrap();
        let o = driver::run_step(
            &planned.spec,
            &*planned.fg,
            None,
            &Probe::new(d.path(), std::process::id()),
            &mut Quiet,
        );
        drop(planned);
        assert!(o.ops > 0);
        // No point read missed a loaded document (misses are reported only
        // when there are some).
        assert_eq!(
            w.figures(WorkloadKind::Pattern.step("pq.1").unwrap()),
            vec![],
            "{kind}"
        );
        e.close().unwrap();
    }
}
