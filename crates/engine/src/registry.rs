//! The engine registry: one [`EngineDef`] per engine, declared in the
//! engine's own file. The command line, `list`, `doctor`, `--help` and the
//! plan template all read this table, so adding an engine is its file plus
//! one line in `engines! { … }` (lib.rs).

use anyhow::Result;
use serde::{Serialize, Serializer};

use super::{Engine, EngineOptions, OpenSpec};
use crate::UsageError;

pub use crate::structure::EngineStructure as Structure;

/// Settings made from a size in bytes (a cache, a memory limit).
pub type SettingsFor = fn(u64) -> Vec<(String, String)>;

/// One engine: its name and what it is, and the functions that describe,
/// validate and open it.
pub struct EngineDef {
    /// The command-line name (`rocksdb`, `mariadb-innodb`, …).
    pub name: &'static str,
    /// One line on what it is (shown by `--help`, `list`, `doctor`).
    pub about: &'static str,
    /// How it stores data.
    pub structure: Structure,
    /// What the write-amp and space-amp model needs of it besides its
    /// structure (its page setting, row overhead, page compression).
    pub model: crate::structure::ModelKnobs,
    /// How the conformance suite (tests/conformance) runs it as a
    /// key-value engine.
    pub conformance: Conformance,
    /// For a server ampbench starts and reaches through SQL, the wire
    /// protocol it speaks; None for an embedded engine.
    pub server: Option<crate::address::Protocol>,
    /// The system user a server runs as, when not ampbench's (it must
    /// reach the data directory).
    pub run_as: Option<&'static str>,
    /// The real version of the library or server installed here.
    pub library_version: fn() -> Result<String>,
    /// The shared library an embedded engine runs with: the file loaded
    /// and how the build chose it (the system's, or a `*_LIB_DIR`), and
    /// anything that differs from the usual path (RocksDB's point reads
    /// through the C API); None for servers and bundled engines.
    pub library: fn() -> Option<String>,
    /// The default settings for a cache size in bytes (`--cache`).
    pub default_settings: SettingsFor,
    /// Settings added for IO-bound runs, from the memory limit in bytes
    /// (`--memory`): the engine's direct IO, so reads the cache misses
    /// reach the device rather than the page cache, and its memory sized
    /// to the limit. `--set` overrides them.
    pub io_bound: SettingsFor,
    /// True when `io_bound` gives the engine direct IO; false: it reads
    /// and writes through the page cache (said at run time).
    pub direct_io: bool,
    /// Its settings under each named preset (`--preset`, see
    /// [`super::presets`]) that changes it, from the memory limit in
    /// bytes; a preset not listed leaves the engine as it is.
    pub presets: &'static [(&'static str, SettingsFor)],
    /// Checks `--set` options without opening anything; the error names
    /// the first bad key.
    pub validate: fn(EngineKind, &EngineOptions) -> Result<()>,
    /// Judges one setting (key, value) as the engine would read it: None,
    /// or why ampbench refuses it (see [`super::guard`]).
    pub guard: fn(&str, &str) -> Option<super::options::Refusal>,
    /// Opens (creating if needed) the engine in `spec.dir`, which exists.
    pub open: fn(EngineKind, &OpenSpec) -> Result<Box<dyn Engine>>,
}

/// What the conformance suite (tests/conformance) runs on an engine.
#[derive(Clone, Copy, Debug)]
pub struct Conformance {
    /// Random operation sequences (proptest cases); 0 leaves the engine
    /// out (servers are checked through SQL by their own tests).
    pub cases: u32,
    /// Settings it opens with besides the defaults: each case closes and
    /// reopens the engine several times, so what an open costs counts
    /// hundreds of times over (and changes nothing the suite checks).
    pub settings: &'static [(&'static str, &'static str)],
}

impl Conformance {
    /// Left out of the suite.
    pub const NONE: Conformance = Conformance::cases(0);

    /// `cases` sequences, opened with the default settings.
    pub const fn cases(cases: u32) -> Conformance {
        Conformance {
            cases,
            settings: &[],
        }
    }
}

/// An engine, by its registry entry. Compared, ordered and serialized by
/// name.
#[derive(Clone, Copy)]
pub struct EngineKind(&'static EngineDef);

impl EngineKind {
    /// Every engine compiled into this binary, in registry order.
    pub fn all() -> impl Iterator<Item = EngineKind> {
        super::MODULES.iter().flat_map(|m| m.iter()).map(EngineKind)
    }

    /// Parses a command-line name; the error lists the valid names.
    pub fn parse(name: &str) -> Result<EngineKind, UsageError> {
        EngineKind::all()
            .find(|k| k.name() == name)
            .ok_or_else(|| UsageError(format!("unknown engine '{name}' (known: {})", names())))
    }

    /// The registry entry.
    pub fn def(self) -> &'static EngineDef {
        self.0
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// True for a server engine.
    pub fn is_server(self) -> bool {
        self.0.server.is_some()
    }

    /// The wire protocol of a server engine; None for an embedded one.
    pub fn speaks(self) -> Option<crate::address::Protocol> {
        self.0.server
    }

    /// How it stores data.
    pub fn structure(self) -> Structure {
        self.0.structure
    }

    /// The real version installed here, or why it is not usable.
    pub fn library_version(self) -> Result<String> {
        (self.0.library_version)()
    }

    /// See [`EngineDef::library`].
    pub fn library(self) -> Option<String> {
        (self.0.library)()
    }

    /// The default settings for a cache size.
    pub fn default_settings(self, cache_bytes: u64) -> Vec<(String, String)> {
        (self.0.default_settings)(cache_bytes)
    }
}

/// Every engine's name, comma-separated.
pub fn names() -> String {
    EngineKind::all()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `--engine` short help: every engine's name.
pub fn short_help() -> String {
    format!("Engines, comma-separated: {}", names())
}

/// The `--engine` long help: every engine with what it is.
pub fn help() -> String {
    let mut s = String::from("Engines, comma-separated.\n\nKnown engines:");
    for k in EngineKind::all() {
        s.push_str(&format!("\n  {:<16} {}", k.name(), k.def().about));
    }
    s
}

impl PartialEq for EngineKind {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}
impl Eq for EngineKind {}
impl PartialOrd for EngineKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for EngineKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}
impl std::hash::Hash for EngineKind {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name().hash(h)
    }
}
impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
impl std::fmt::Debug for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
impl Serialize for EngineKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}
