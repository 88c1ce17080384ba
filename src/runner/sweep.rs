//! `--sweep ENGINE.KEY=v1,v2,…`: the same plan once per setting, each on
//! a fresh database. Axes of one engine multiply (their cross product);
//! each setting is an engine run of its own, labelled
//! `ENGINE[KEY=v,…]` in the results, so every report shows it as an
//! engine. A value the engine refuses fails that run only.

use serde::Serialize;

use crate::UsageError;
use crate::engine::{EngineKind, EngineOptions};

/// Runs past which a sweep asks for confirmation (`--yes`).
pub const CONFIRM_PAST: usize = 20;

/// One swept option.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SweepAxis {
    /// The engine it applies to.
    pub engine: EngineKind,
    /// The option, as `--set` names it.
    pub key: String,
    /// Its values, in order.
    pub values: Vec<String>,
}

/// Parses one `--sweep ENGINE.KEY=v1,v2,…`; the error names the part
/// that is wrong.
pub fn parse(s: &str, engines: &[EngineKind]) -> Result<SweepAxis, UsageError> {
    let bad = |why: &str| UsageError(format!("--sweep '{s}': {why}"));
    let (lhs, values) = s
        .split_once('=')
        .ok_or_else(|| bad("expected ENGINE.KEY=v1,v2,…"))?;
    let (engine, key) = lhs
        .split_once('.')
        .ok_or_else(|| bad("expected ENGINE.KEY=v1,v2,… (no engine prefix)"))?;
    let engine = EngineKind::parse(engine).map_err(|e| bad(&e.0))?;
    if !engines.contains(&engine) {
        return Err(bad(&format!(
            "{engine} is not among the run's engines (-e)"
        )));
    }
    if key.is_empty() {
        return Err(bad("empty key"));
    }
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(bad("an empty value"));
    }
    if let Some(d) = values
        .iter()
        .enumerate()
        .find(|(i, v)| values[..*i].contains(v))
    {
        return Err(bad(&format!("value '{}' given twice", d.1)));
    }
    Ok(SweepAxis {
        engine,
        key: key.to_string(),
        values,
    })
}

/// Checks the axes together: no key swept twice for one engine, and each
/// key known to its engine (a key every value of which the engine
/// refuses is taken as unknown; a value only some runs refuse fails
/// those runs when they come).
pub fn check(
    axes: &[SweepAxis],
    sets: &std::collections::BTreeMap<EngineKind, EngineOptions>,
    allow_unsafe: bool,
) -> Result<(), UsageError> {
    for (i, a) in axes.iter().enumerate() {
        if axes[..i]
            .iter()
            .any(|b| b.engine == a.engine && b.key == a.key)
        {
            return Err(UsageError(format!(
                "--sweep {}.{}: swept twice",
                a.engine, a.key
            )));
        }
        let mut base = sets.get(&a.engine).cloned().unwrap_or_default();
        base.allow_unsafe = allow_unsafe;
        // A setting ampbench refuses is refused in every value, not
        // skipped as a value the engine does not take.
        for v in &a.values {
            let mut o = base.clone();
            o.pairs = vec![(a.key.clone(), v.clone())];
            crate::engine::guard::check(a.engine, &o)
                .map_err(|e| UsageError(format!("--sweep {}.{}={v}: {e:#}", a.engine, a.key)))?;
        }
        let errors: Vec<String> = a
            .values
            .iter()
            .filter_map(|v| {
                let mut o = base.clone();
                o.pairs.push((a.key.clone(), v.clone()));
                crate::engine::validate_options(a.engine, &o)
                    .err()
                    .map(|e| format!("{e:#}"))
            })
            .collect();
        if errors.len() == a.values.len() {
            return Err(UsageError(format!(
                "--sweep {}.{}: {} refuses every value ({})",
                a.engine,
                a.key,
                a.engine,
                errors.first().map_or("", String::as_str)
            )));
        }
    }
    Ok(())
}

/// The settings an engine runs with: the cross product of its axes, in
/// order (one empty setting when it has none).
pub fn variants(axes: &[SweepAxis], kind: EngineKind) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for a in axes.iter().filter(|a| a.engine == kind) {
        out = out
            .into_iter()
            .flat_map(|base| {
                a.values.iter().map(move |v| {
                    let mut s = base.clone();
                    s.push((a.key.clone(), v.clone()));
                    s
                })
            })
            .collect();
    }
    out
}

/// Engine runs the sweep makes over `engines`.
pub fn count(axes: &[SweepAxis], engines: &[EngineKind]) -> usize {
    engines.iter().map(|e| variants(axes, *e).len()).sum()
}

/// The label of an engine run: `rocksdb`, or `rocksdb[compaction_pri=kX]`.
pub fn label(kind: EngineKind, setting: &[(String, String)]) -> String {
    if setting.is_empty() {
        return kind.name().to_string();
    }
    let s: Vec<String> = setting.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}[{}]", kind.name(), s.join(","))
}

/// A sweep past [`CONFIRM_PAST`] runs needs `--yes`, or a yes on a
/// terminal.
pub fn confirm(axes: &[SweepAxis], engines: &[EngineKind], yes: bool) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if axes.is_empty() {
        return Ok(());
    }
    let n = count(axes, engines);
    eprintln!("sweep: {n} engine runs, each on a fresh database");
    if n <= CONFIRM_PAST || yes {
        return Ok(());
    }
    if std::io::stdin().is_terminal() {
        eprint!("run all {n}? [y/N] ");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        if line.trim().eq_ignore_ascii_case("y") {
            return Ok(());
        }
    }
    Err(UsageError(format!(
        "--sweep: {n} engine runs (more than {CONFIRM_PAST}); pass --yes to run them"
    ))
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: &str) -> EngineKind {
        EngineKind::parse(n).unwrap()
    }

    #[test]
    fn parses_and_names_what_is_wrong() {
        let e = [k("rocksdb")];
        let a = parse("rocksdb.compaction_pri=kA,kB", &e).unwrap();
        assert_eq!(a.values, vec!["kA", "kB"]);
        assert!(parse("rocksdb.x", &e).unwrap_err().0.contains("ENGINE.KEY"));
        assert!(parse("nosuch.x=1", &e).unwrap_err().0.contains("nosuch"));
        assert!(parse("lmdb.x=1", &e).unwrap_err().0.contains("not among"));
        assert!(
            parse("rocksdb.x=1,,2", &e)
                .unwrap_err()
                .0
                .contains("empty value")
        );
        assert!(parse("rocksdb.x=1,1", &e).unwrap_err().0.contains("twice"));
    }

    #[test]
    fn cross_product_per_engine() {
        let e = [k("rocksdb"), k("lmdb")];
        let axes = vec![
            parse("rocksdb.a=1,2", &e).unwrap(),
            parse("rocksdb.b=x,y,z", &e).unwrap(),
        ];
        let v = variants(&axes, k("rocksdb"));
        assert_eq!(v.len(), 6);
        assert_eq!(label(k("rocksdb"), &v[1]), "rocksdb[a=1,b=y]");
        assert_eq!(
            variants(&axes, k("lmdb")),
            vec![Vec::<(String, String)>::new()]
        );
        assert_eq!(count(&axes, &e), 7);
    }

    #[test]
    fn a_key_every_value_of_which_is_refused_is_unknown() {
        let e = [k("rocksdb")];
        let sets = Default::default();
        let bad = parse("rocksdb.no_such_option=1,2", &e).unwrap();
        let err = check(&[bad], &sets, false).unwrap_err().0;
        assert!(err.contains("rocksdb.no_such_option"), "{err}");
        let some = parse("rocksdb.compaction_pri=kOldestSmallestSeqFirst,kNoSuch", &e).unwrap();
        check(&[some], &sets, false).unwrap();
    }
}
