//! A corner (`--bound cache|io`): its memory limit and engine cache.

use anyhow::Result;

use super::Bound;
use crate::UsageError;
use crate::plan::Settings;
use crate::workload::WorkloadKind;

/// What one corner sets: its memory limit and the engine cache.
pub(super) struct Corner {
    pub(super) bound: Bound,
    pub(super) memory: Option<u64>,
    pub(super) memory_from_data: Option<u64>,
    pub(super) cache_bytes: u64,
    pub(super) cache_from_memory: bool,
}

/// Every corner of the run, in `--bound`'s order without repeats: `io`
/// alone when `--memory` is given and `--bound` is not, else `cache`.
pub(super) fn corners(
    s: &Settings,
    workload: WorkloadKind,
    params: &[(String, String)],
) -> Result<Vec<Corner>> {
    let given_memory = match s.memory.as_deref() {
        Some(m) => {
            let b =
                crate::units::parse_size(m).map_err(|e| UsageError(format!("--memory: {e}")))?;
            if b < 16 << 20 {
                return Err(UsageError(format!("--memory {m}: at least 16MB")).into());
            }
            Some(b)
        }
        None => None,
    };
    let mut bounds: Vec<Bound> = Vec::new();
    let listed = s.bound.clone().map(|b| b.into_vec());
    for b in listed.unwrap_or_else(|| match given_memory {
        Some(_) => vec![Bound::Io],
        None => vec![Bound::Cache],
    }) {
        if !bounds.contains(&b) {
            bounds.push(b);
        }
    }
    if bounds == [Bound::Cache] && given_memory.is_some() {
        return Err(
            UsageError("--bound cache: not with --memory (cache means no limit)".into()).into(),
        );
    }
    bounds
        .into_iter()
        .map(|b| corner(b, given_memory, s.cache.as_deref(), workload, params))
        .collect()
}

/// The memory limit and cache of one corner. `cache`: unlimited, the
/// given cache or 256MB. `io`: `--memory`, or a quarter of the bytes the
/// load writes (at least 64MB); the cache a quarter of the limit unless
/// given.
fn corner(
    bound: Bound,
    given_memory: Option<u64>,
    given_cache: Option<&str>,
    workload: WorkloadKind,
    params: &[(String, String)],
) -> Result<Corner> {
    let mut memory_from_data = None;
    let memory = match (bound, given_memory) {
        (Bound::Cache, _) => None,
        (Bound::Io, Some(m)) => Some(m),
        (Bound::Io, None) => {
            let p = crate::workload::Params::new(workload.name(), workload.params(), params)?;
            let Some(bytes) = workload.expected_bytes(&p)? else {
                return Err(UsageError(format!(
                    "--bound io: give --memory for workload {} (its data size is not known before the load)",
                    workload.name()
                ))
                .into());
            };
            memory_from_data = Some(bytes);
            // A quarter of the data, in whole MB, at least 64MB (at 32MB
            // the harness and LMDB's page cache alone were OOM-killed).
            Some(((bytes / 4) >> 20).max(64) << 20)
        }
    };
    let cache_bytes = match (given_cache, memory) {
        (Some(c), _) => {
            crate::units::parse_size(c).map_err(|e| UsageError(format!("--cache: {e}")))?
        }
        (None, Some(m)) => (m / 4) >> 20 << 20,
        (None, None) => 256 << 20,
    };
    Ok(Corner {
        bound,
        memory,
        memory_from_data,
        cache_bytes,
        cache_from_memory: given_cache.is_none() && memory.is_some(),
    })
}
