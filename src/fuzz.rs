//! Entry points for the fuzz targets (`fuzz/`, run by `bench/fuzz.sh`)
//! and for replaying their corpora as ordinary tests
//! (`tests/fuzz_corpora.rs`): each takes arbitrary bytes, feeds them to
//! one of ampbench's readers of outside input, and must return a value or
//! an error that names what is wrong, never panic. Each returns that
//! error's text (`None` when the input was accepted), so the replay can
//! also check that an error is one line.

use std::io::Write as _;

use crate::engine::sets::parse_sets;
use crate::units::parse_size;
use crate::workload::WorkloadKind;

/// A scratch file for one input of the targets that read files, named by
/// process and call so that targets run on parallel test threads never
/// share one.
fn scratch(name: &str, data: &[u8]) -> Option<std::path::PathBuf> {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!("ampbench-fuzz-{}-{n}-{name}", std::process::id()));
    let mut f = std::fs::File::create(&p).ok()?;
    f.write_all(data).ok()?;
    Some(p)
}

fn err_text(e: impl std::fmt::Display) -> Option<String> {
    Some(e.to_string())
}

/// A plan file, checked as `ampbench run PLAN` checks it before running.
pub fn plan(data: &[u8]) -> Option<String> {
    // As in `params`: a workload may take 256 MB here.
    crate::workload::kv::data::ROOM_CAP.store(256 << 20, std::sync::atomic::Ordering::Relaxed);
    let p = scratch("plan.toml", data)?;
    let r = crate::cli::check_args(&["run".into(), p.display().to_string()]);
    let _ = std::fs::remove_file(&p);
    r.err().and_then(|e| err_text(format!("{e:#}")))
}

/// A command line, one argument per line (`run --duration 1e20`,
/// `crashcheck --window 1e308h`), checked as far as it goes before
/// anything starts: every step's timings made as the runner makes them.
/// A plan file named on it must not exist (a file is `plan`'s to fuzz).
pub fn args(data: &[u8]) -> Option<String> {
    crate::workload::kv::data::ROOM_CAP.store(256 << 20, std::sync::atomic::Ordering::Relaxed);
    let text = String::from_utf8_lossy(data);
    let argv: Vec<String> = text.lines().map(str::to_string).collect();
    crate::cli::check_args(&argv)
        .err()
        .and_then(|e| err_text(format!("{e:#}")))
}

/// `--set ENGINE.KEY=VALUE` lines, parsed and checked by their engines.
pub fn sets(data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    match parse_sets(&lines) {
        Err(e) => err_text(e.0),
        Ok(m) => m
            .iter()
            .find_map(|(k, o)| crate::engine::validate_options(*k, o).err())
            .and_then(|e| err_text(format!("{e:#}"))),
    }
}

/// `-p KEY=VALUE` lines for every workload (the first line names it). A
/// workload may take 256 MB here: more is refused as on a machine with
/// 512 MB (a legitimately large one is not what this target tests).
pub fn params(data: &[u8]) -> Option<String> {
    crate::workload::kv::data::ROOM_CAP.store(256 << 20, std::sync::atomic::Ordering::Relaxed);
    let text = String::from_utf8_lossy(data);
    let mut lines = text.lines();
    let w = lines.next().unwrap_or_default();
    let Some(kind) = WorkloadKind::ALL
        .iter()
        .copied()
        .find(|k| k.name() == w.trim())
    else {
        return err_text(format!("no workload '{w}'"));
    };
    let pairs: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            (k.to_string(), v.to_string())
        })
        .collect();
    match crate::workload::Params::new(kind.name(), kind.params(), &pairs) {
        Err(e) => err_text(e.0),
        Ok(p) => kind
            .build(&p)
            .err()
            .and_then(|e| err_text(format!("{e:#}"))),
    }
}

/// Sizes (`256MB`) and durations (`1h`, `90s`, `500ms`), one per line.
pub fn units(data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(data);
    // A line is refused when it is neither a size nor a duration.
    let mut last = None;
    for l in text.lines() {
        if let (Err(e), Err(_)) = (parse_size(l), crate::units::parse_secs(l)) {
            last = Some(e);
        }
    }
    last
}

/// A LinkBench `Distribution.dat`, read and used (quantiles, mean).
pub fn distribution(data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(data);
    match crate::workload::linkbench::dist::Cdf::from_text(&text, "input") {
        Err(e) => err_text(format!("{e:#}")),
        Ok(c) => {
            for u in [0.0, 0.5, 0.999, 1.0] {
                let _ = c.quantile(u);
            }
            let _ = c.mean();
            None
        }
    }
}

/// A results file, opened and every run read and reported as text and
/// JSON.
pub fn results(data: &[u8]) -> Option<String> {
    let p = scratch("results.db", data)?;
    let out = (|| -> anyhow::Result<()> {
        let mut r = crate::results::Results::open_existing(&p.as_path().into())?;
        let view = crate::results::load(&mut r, crate::results::read::RunSel::Latest)?;
        let _ = crate::report::render(&view, crate::report::Format::TEXT, None, &r)?;
        let _ = crate::report::render(&view, crate::report::Format::JSON, None, &r)?;
        Ok(())
    })();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
    }
    out.err().and_then(|e| err_text(format!("{e:#}")))
}

/// What a MariaDB server sends to a login (see
/// `engine::mywire::replay_login`).
pub fn mywire_login(data: &[u8]) -> Option<String> {
    crate::engine::mywire::replay_login(data)
}

/// What a MariaDB server sends to a prepared statement and a text query
/// (see `engine::mywire::replay_results`).
pub fn mywire_results(data: &[u8]) -> Option<String> {
    crate::engine::mywire::replay_results(data)
}

/// A fuzz target: arbitrary bytes in, the error's text (if any) out.
pub type Target = fn(&[u8]) -> Option<String>;

/// The targets by name, as `fuzz/` and the corpus directories name them.
pub const TARGETS: &[(&str, Target)] = &[
    ("plan", plan),
    ("args", args),
    ("sets", sets),
    ("params", params),
    ("units", units),
    ("distribution", distribution),
    ("results", results),
    ("mywire_login", mywire_login),
    ("mywire_results", mywire_results),
];
