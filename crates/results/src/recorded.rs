//! The part of a run's recorded configuration the reports read, as a
//! type: a field renamed in the runner's `RunConfig` fails the test
//! that reads a recorded `RunConfig` back as this
//! (`cli::settings_doc`'s `the_recorded_config_reads_back_typed`), where
//! reading `config["…"]` would silently print `-`.

use serde::{Deserialize, Serialize};

use crate::bound::Bound;
use crate::postspec::PostSpec;

/// What the reports read of a run's recorded configuration. Every field
/// is optional: a results file from before a field existed still reads.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct RecordedConfig {
    /// The corner: `cache` or `io`.
    pub bound: Option<Bound>,
    /// The engine's memory limit, bytes (`None`: unlimited).
    pub memory: Option<u64>,
    /// Every engine's cache, bytes.
    pub cache_bytes: Option<u64>,
    /// `--slice`, seconds.
    pub slice: Option<f64>,
    /// The option sweep's axes (`--sweep`), as recorded.
    pub sweep: Vec<serde_json::Value>,
    /// The seed post a seed plan reproduces.
    pub post: Option<PostSpec>,
    /// `-p scale=` of a seed plan.
    pub post_scale: Option<f64>,
    /// The storage asked for.
    pub storage: RecordedStorage,
    /// The storage the run had (the runner's record of the device).
    pub storage_effective: RecordedEffective,
    /// `--reuse`: repetitions after the first ran on its database.
    pub reuse: bool,
}

/// The storage a run asked for.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct RecordedStorage {
    /// The class's name.
    pub class: Option<String>,
}

/// The storage a run had.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct RecordedEffective {
    /// The class in effect (native when no device could be made).
    pub class_effective: Option<String>,
}

impl RecordedConfig {
    /// Reads the typed fields of a recorded configuration; a field that
    /// does not have the type above (a file written by a build that
    /// recorded it otherwise) reads as unknown rather than failing the
    /// report.
    pub fn of(config: &serde_json::Value) -> RecordedConfig {
        // Field by field: one field a build recorded otherwise loses only
        // itself, not the rest.
        fn field<T: serde::de::DeserializeOwned + Default>(c: &serde_json::Value, k: &str) -> T {
            c.get(k)
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default()
        }
        RecordedConfig {
            bound: field(config, "bound"),
            memory: field(config, "memory"),
            cache_bytes: field(config, "cache_bytes"),
            slice: field(config, "slice"),
            sweep: field(config, "sweep"),
            post: field(config, "post"),
            post_scale: field(config, "post_scale"),
            storage: field(config, "storage"),
            storage_effective: field(config, "storage_effective"),
            reuse: field(config, "reuse"),
        }
    }

    /// The storage class the run had, or else the one it asked for.
    pub fn class(&self) -> Option<&str> {
        self.storage_effective
            .class_effective
            .as_deref()
            .or(self.storage.class.as_deref())
    }
}
