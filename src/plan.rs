//! Plan files: a run's settings as TOML (`ampbench run PLAN.toml`). Every
//! key is optional; a flag given on the command line overrides the plan's
//! value; unknown keys are an error naming them. `plans/template.toml`
//! lists every key with its default.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

/// A plan file's contents.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Workload name.
    pub workload: Option<String>,
    /// Engine names.
    pub engines: Option<Vec<String>>,
    /// Steps.
    pub steps: Option<Vec<String>>,
    /// Threads for multi-threaded steps.
    pub threads: Option<usize>,
    /// Warm-up seconds.
    pub warmup: Option<f64>,
    /// Measured seconds per timed step.
    pub duration: Option<f64>,
    /// Seconds between samples.
    pub interval: Option<f64>,
    /// Fixed total arrival rate, ops/s.
    pub rate: Option<f64>,
    /// `poisson` or `uniform`.
    pub arrival: Option<String>,
    /// Run seed.
    pub seed: Option<u64>,
    /// Engine cache size.
    pub cache: Option<String>,
    /// Results file.
    pub results: Option<String>,
    /// Parent of data directories.
    pub dir: Option<String>,
    /// Keep data directories.
    pub keep: Option<bool>,
    /// Settle after loads.
    pub settle: Option<bool>,
    /// Workload parameters.
    #[serde(default)]
    pub params: BTreeMap<String, toml::Value>,
    /// Engine options, per engine.
    #[serde(default)]
    pub set: BTreeMap<String, BTreeMap<String, toml::Value>>,
}

fn scalar(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Plan {
    /// Reads and checks a plan file.
    pub fn load(path: &Path) -> Result<Plan> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read plan file {}", path.display()))?;
        toml::from_str(&text).map_err(|e| {
            crate::UsageError(format!(
                "plan file {}: {}",
                path.display(),
                e.to_string().replace('\n', " ").trim()
            ))
            .into()
        })
    }

    /// `params` as `KEY=VALUE` pairs.
    pub fn param_pairs(&self) -> Vec<(String, String)> {
        self.params
            .iter()
            .map(|(k, v)| (k.clone(), scalar(v)))
            .collect()
    }

    /// `set` as `ENGINE.KEY=VALUE` strings.
    pub fn set_strings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (engine, kv) in &self.set {
            for (k, v) in kv {
                out.push(format!("{engine}.{k}={}", scalar(v)));
            }
        }
        out
    }
}
