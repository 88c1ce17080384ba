//! The seed plans (`plans/seeds/`): each loads, carries the post's
//! published figures and comparisons, and the verdicts come out right on
//! fixed figures, both ways; one plan runs end to end at a tiny scale.

use crate::common;

use std::path::Path;

use ampbench::metrics::Metric;
use ampbench::record::StepExtras;
use ampbench::report::post::{self, Verdict};
use ampbench::results::{RunView, StepView};
use common::ok;

fn plans() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/seeds");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_seed_plan_loads_with_the_posts_figures() {
    let files = plans();
    // One per post; 001 has two (its ForestDB-benchmark table and its
    // insert-benchmark comparison are different workloads).
    assert_eq!(files.len(), 6, "{files:?}");
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/seeds");
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        // Shipped in the binary too, as on disk (ampbench list).
        let embedded = ampbench::plan::SEED_PLANS
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in plan::SEED_PLANS"));
        assert_eq!(embedded.1, std::fs::read_to_string(f).unwrap(), "{name}");
        let cfgs = ampbench::cli::check_plan(f).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let post = cfgs[0]
            .post
            .clone()
            .unwrap_or_else(|| panic!("{name}: no [post]"));
        assert!(name.starts_with(&post.file[..3]), "{name}: {}", post.file);
        if seeds.is_dir() {
            assert!(seeds.join(&post.file).is_file(), "{name}: {}", post.file);
        }
        assert!(!post.title.is_empty() && !post.setup.is_empty());
        assert!(!post.scale_params.is_empty(), "{name}: nothing to scale");
        // Published figures (a post that gives only graphs has claims in
        // its words, and figures without numbers).
        assert!(
            !post.figures.is_empty() && !post.claims.is_empty(),
            "{name}"
        );
        // The post's own numbers satisfy every claim typed from them.
        for c in post::check(&post, &RunView::empty()) {
            assert_ne!(
                c.post_verdict,
                Verdict::DoesNotHold,
                "{name}: the post's figures contradict '{}'",
                c.claim.text
            );
            assert_eq!(c.verdict, Verdict::NotMeasured, "{name}: an empty run");
        }
    }
}

/// Seed 003's figures for a run whose MyRocks/InnoDB ratios are the
/// given ones (InnoDB at 1000 requests/s on every class), in the post's
/// regime (databases 8 and 32 times the 512MB limit, a queue of 6 at
/// the disk array with half the IOs waiting, 0.1 core) or, with
/// `regime` false, with no regime figure at all.
fn run_003(ratios: [f64; 3], regime: bool) -> RunView {
    let mut steps = Vec::new();
    let mem = 512.0 * 1048576.0;
    for (class, r) in ["fast-ssd", "slow-ssd", "disk-array"].iter().zip(ratios) {
        let step = format!("request@{class}");
        for (engine, ops, db) in [
            ("mariadb-innodb", 1000.0, 32.0 * mem),
            ("mariadb-myrocks", 1000.0 * r, 8.0 * mem),
        ] {
            let mut f = vec![(Metric::OpsPerSec, ops)];
            if regime {
                f.extend([
                    (Metric::DbBytes, db),
                    (Metric::DevQueueDepth, 6.0),
                    (Metric::DevWaitedShare, 0.5),
                    (Metric::CpuUsPerOp, 100.0),
                ]);
            }
            steps.push(StepView::with_figures(engine, &step, &f));
        }
    }
    let mut run = RunView {
        steps,
        ..RunView::empty()
    };
    run.recorded.memory = Some(512 << 20);
    run
}

#[test]
fn verdicts_on_fixed_figures_both_ways() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("plans/seeds/003-myrocks-vs-innodb-storage.toml");
    let post = ampbench::cli::check_plan(&f).unwrap()[0]
        .post
        .clone()
        .unwrap();
    let rises = "MyRocks/InnoDB rises as storage slows";
    let verdict = |run: &RunView, text: &str| {
        post::check(&post, run)
            .into_iter()
            .find(|c| c.claim.text.starts_with(text))
            .unwrap()
            .verdict
    };
    let good = run_003([1.2, 1.9, 4.0], true);
    assert_eq!(verdict(&good, rises), Verdict::Holds);
    assert_eq!(
        verdict(&good, "MyRocks beats InnoDB on the disk array"),
        Verdict::Holds
    );
    let bad = run_003([0.9, 0.8, 1.5], true);
    assert_eq!(verdict(&bad, rises), Verdict::DoesNotHold);
    assert_eq!(
        verdict(&bad, "MyRocks beats InnoDB on the fast SSD"),
        Verdict::DoesNotHold
    );
    // The text: the post's figure and ours per row, the verdict per claim.
    let t = post::render(&post, &good);
    assert!(
        t.contains("post 1.40 → 2.30 → 5.30; here 1.20 → 1.90 → 4.00: holds, judged in the post's regime (MyRocks' database over the memory limit 8.00 (≥ 4);"),
        "{t}"
    );
    assert!(
        t.lines().any(|l| l.contains("Disk array")
            && l.contains("MyRocks/InnoDB")
            && l.contains("5.30")
            && l.contains("4.00")),
        "{t}"
    );
    let t = post::render(&post, &bad);
    assert!(
        t.contains("0.90 → 0.80 → 1.50: does not hold, judged"),
        "{t}"
    );
    // Outside the regime (here: none of its figures measured) a verdict
    // is printed as not judged, with the direction it would have.
    let t = post::render(&post, &run_003([1.2, 1.9, 4.0], false));
    assert!(
        t.contains(
            "1.20 → 1.90 → 4.00: not judged: MyRocks' database over the memory limit not measured;"
        ),
        "{t}"
    );
    assert!(t.contains("the direction here would be: holds)"), "{t}");
    // A class that did not run is not a verdict.
    let mut partial = run_003([1.2, 1.9, 4.0], true);
    partial.steps.retain(|s| !s.step.ends_with("disk-array"));
    assert_eq!(verdict(&partial, rises), Verdict::NotMeasured);
}

/// Seed 001's plan at a hundredth of its scale, on its two throttled
/// classes and two thread counts: the report (text and HTML) has the
/// post's table with a verdict per comparison, and the scale used is
/// stored and printed.
#[test]
fn a_seed_plan_runs_and_reports_beside_the_post() {
    if let Err(why) = ampbench::setup::storage::check_abilities(ampbench::setup::storage::Fs::Ext4)
    {
        ampbench::testing::skip(
            "seeds",
            &format!("seed 001 sweeps two throttled devices, and there is none here: {why}"),
        );
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.db");
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/seeds/001-forestdb-pattern.toml");
    let out = ok(&[
        "run",
        plan.to_str().unwrap(),
        "-p",
        "scale=0.01",
        "--steps",
        "load,pq.1,pq.n,owa.1",
        "--warmup",
        "0",
        "--duration",
        "0.3",
        "--dir",
        d.path().to_str().unwrap(),
        "--results",
        r.to_str().unwrap(),
    ]);
    assert!(
        out.contains("seed post 001_7bf2049ca14c58be.txt: \"RocksDB & ForestDB via the ForestDB benchmark: cached database\" (scale 0.01 here)"),
        "{out}"
    );
    // docs = 400000 × 0.01.
    assert!(out.contains("docs=4000 "), "{out}");
    // A verdict line ends with its verdict, or goes on with the regime
    // it was judged in, or says it was not judged (the plan's
    // [[post.regime]]: cached, and syncs answered by the array's cache).
    let verdicts = |t: &str| {
        t.lines()
            .filter(|l| {
                [": holds", ": does not hold"]
                    .iter()
                    .any(|v| l.ends_with(v) || l.contains(&format!("{v}, judged in")))
                    || l.contains(": not judged: ")
            })
            .count()
    };
    // load, owa.1, pq.1 and pq.n were run: ten claims have a verdict
    // (the load; owa.1, pq.1 and pq.n on each class; owa.1 from the disk
    // array to the SSD; pq.n from 4 to 8 threads for each engine); the
    // rest say what was not measured.
    assert_eq!(verdicts(&out), 10, "{out}");
    assert!(out.contains(": not measured"), "{out}");
    // The point queries of a cached database read nothing from either
    // device, so their comparisons are judged in the post's regime.
    assert!(
        out.lines().any(|l| l.starts_with(
            "  the B-Tree is faster on point queries at 1 thread (disk array): post"
        ) && l.contains(", judged in the post's regime (RocksDB's device reads per point query (disk array) 0")),
        "{out}"
    );
    let text = ok(&["report", "--results", r.to_str().unwrap()]);
    assert_eq!(verdicts(&text), 10, "{text}");
    let html = ok(&[
        "report",
        "--results",
        r.to_str().unwrap(),
        "--format",
        "html",
    ]);
    assert!(
        html.contains("The seed post beside this run"),
        "the HTML shows it"
    );
    assert!(html.contains("the post&#39;s comparisons") || html.contains("the post's comparisons"));
    // -p scale on a plan without [post] is one line naming the key.
    let o = common::run(&["run", "-e", "lmdb", "-p", "scale=2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("-p scale") && err.trim_end().lines().count() == 1,
        "{err}"
    );
}

/// Seed 004's figures are whole-run sums (`step = "all"`): each
/// setting's column families, flush and compaction MB, over a load and a
/// request step. `total` gives each setting's compaction MB per step (the
/// flushes are 10 MB per family and step everywhere). The request step
/// ends with link_pk's tree `levels` deep below L0, 90% in its last
/// level, and a 40 MB database: the requests flushed 20 MB, half of it
/// again.
fn run_004(total: [(&str, f64); 4], levels: f64) -> RunView {
    let mut steps = Vec::new();
    for (setting, comp) in total {
        let engine = format!("mariadb-myrocks[compaction_pri={setting}]");
        for step in ["load", "request"] {
            let mut s = StepView::with_figures(
                &engine,
                step,
                &[(Metric::OpsPerSec, 100.0), (Metric::DbBytes, 40e6)],
            );
            // As a results file stores them.
            let mut rows: Vec<(String, f64)> = Vec::new();
            if step == "request" {
                rows.push(("lsm.cf_link_pk.levels".into(), levels));
                rows.push(("lsm.cf_link_pk.gaps".into(), 0.0));
                rows.push(("lsm.cf_link_pk.last_share".into(), 0.9));
            }
            for cf in ["cf_link_pk", "cf_node_pk"] {
                rows.push((format!("cf.{cf}.flush_mb"), 10.0));
                rows.push((format!("cf.{cf}.compaction_mb"), comp / 2.0));
            }
            s.extras = StepExtras::from_rows(rows.iter().map(|(k, v)| (k.as_str(), *v)));
            steps.push(s);
        }
    }
    RunView {
        steps,
        ..RunView::empty()
    }
}

#[test]
fn whole_run_figures_add_up_every_step() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/seeds/004-compaction-pri.toml");
    let post = ampbench::cli::check_plan(&f).unwrap()[0]
        .post
        .clone()
        .unwrap();
    let verdicts = |run: &RunView| -> Vec<Verdict> {
        post::check(&post, run)
            .into_iter()
            .map(|c| c.verdict)
            .collect()
    };
    // As the post: kOldestSmallestSeqFirst compacts the least and
    // kOldestLargestSeqFirst the most.
    let good = run_004(
        [
            ("kByCompensatedSize", 50.0),
            ("kOldestLargestSeqFirst", 74.0),
            ("kOldestSmallestSeqFirst", 40.0),
            ("kMinOverlappingRatio", 45.0),
        ],
        4.0,
    );
    assert_eq!(verdicts(&good), vec![Verdict::Holds; 3]);
    // By hand: kOldestLargestSeqFirst writes 2 steps × (20 MB of flushes
    // + 74 MB of compaction) = 188 MB, kOldestSmallestSeqFirst 120 MB;
    // write-amp (20 + 74) / 20 = 4.7.
    let r = |figure: &str, setting: &str| {
        post::whole_run(
            &good,
            &format!("mariadb-myrocks[compaction_pri={setting}]"),
            figure,
        )
    };
    assert_eq!(r("cf_total_mb", "kOldestLargestSeqFirst"), Some(188.0));
    assert_eq!(r("cf_ingest_mb", "kOldestLargestSeqFirst"), Some(40.0));
    assert_eq!(r("cf_write_amp", "kOldestLargestSeqFirst"), Some(4.7));
    assert_eq!(
        r("cf.cf_link_pk.write_amp", "kOldestSmallestSeqFirst"),
        Some(3.0)
    );
    assert_eq!(
        r("cf.cf_node_pk.flush_mb", "kOldestSmallestSeqFirst"),
        Some(20.0)
    );
    // Throughputs do not add up; an engine that did not run has nothing.
    assert_eq!(r("ops_per_sec", "kOldestLargestSeqFirst"), None);
    assert_eq!(r("cf_total_mb", "kNoSuchSetting"), None);
    let t = post::render(&post, &good);
    assert!(
        t.contains("post 1.34 (against 1.00); here 1.57 (against 1.00): holds, judged in the post's regime (kOldestLargestSeqFirst: link_pk's levels below L0 (the post's worked out) 4.00 (≥ 3)"),
        "{t}"
    );
    // 20 MB flushed by the requests over the 40 MB database.
    assert!(
        t.contains("kMinOverlappingRatio: MB the requests flushed over the database's MB (the post's worked out): post 1.00; here 0.50 (in the regime: ≥ 0.4): in"),
        "{t}"
    );
    // Two levels deep: the same figures, not judged.
    let shallow = run_004(
        [
            ("kByCompensatedSize", 50.0),
            ("kOldestLargestSeqFirst", 74.0),
            ("kOldestSmallestSeqFirst", 40.0),
            ("kMinOverlappingRatio", 45.0),
        ],
        2.0,
    );
    let t = post::render(&post, &shallow);
    assert!(
        t.contains("here 1.57 (against 1.00): not judged: kOldestLargestSeqFirst: link_pk's levels below L0 (the post's worked out) 2.00, not ≥ 3"),
        "{t}"
    );
    // One setting shallow: the claims comparing two others are still
    // judged; "writes the least", which compares all four, is not.
    let mut one_off = good.clone();
    for s in one_off
        .steps
        .iter_mut()
        .filter(|s| s.engine.contains("kByCompensatedSize") && s.step == "request")
    {
        if let Some(t) = s.extras.trees.get_mut("cf_link_pk") {
            t.levels = Some(2.0);
        }
    }
    let marks: Vec<bool> = post::check(&post, &one_off)
        .into_iter()
        .map(|c| matches!(c.regime, post::RegimeMark::Judged(_)))
        .collect();
    assert_eq!(marks, vec![true, false, true]);
    // The other way round: every direction fails.
    let bad = run_004(
        [
            ("kByCompensatedSize", 30.0),
            ("kOldestLargestSeqFirst", 40.0),
            ("kOldestSmallestSeqFirst", 74.0),
            ("kMinOverlappingRatio", 45.0),
        ],
        4.0,
    );
    assert_eq!(verdicts(&bad), vec![Verdict::DoesNotHold; 3]);
}
