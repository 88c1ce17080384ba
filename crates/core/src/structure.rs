//! What ampbench knows of an engine besides its code: how it stores
//! data (`EngineStructure`), what the amplification model needs of it
//! besides (`ModelKnobs`), and the counters it reports (`EngineStats`).

/// What the write-amp and space-amp model needs of an engine besides
/// its structure; each engine's registry entry holds its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelKnobs {
    /// The setting that holds its page (or block) size; "" for none.
    pub page_key: &'static str,
    /// Its page size when that setting is not set, in bytes.
    pub page_default: f64,
    /// Bytes a row carries besides its key and value (InnoDB: transaction
    /// id, roll pointer and record header; PostgreSQL: tuple header and
    /// line pointer).
    pub row_meta: f64,
    /// True for a B-Tree that compresses its pages: a ratio the model
    /// does not measure, and says so.
    pub compresses_pages: bool,
}

impl ModelKnobs {
    /// 4 KB pages under no setting, nothing per row, no compression.
    pub const PLAIN: ModelKnobs = ModelKnobs {
        page_key: "",
        page_default: 4096.0,
        row_meta: 0.0,
        compresses_pages: false,
    };
}

/// How an engine stores data: what the model predicts for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineStructure {
    /// A log-structured merge tree with leveled compaction.
    LeveledLsm,
    /// A B-Tree updated in place (pages written back after changes).
    UpdateInPlaceBTree,
    /// A copy-on-write B-Tree (a changed page is written to a new place).
    CopyOnWriteBTree,
    /// Stores nothing.
    None,
}

impl EngineStructure {
    /// How it is shown.
    pub fn name(self) -> &'static str {
        match self {
            EngineStructure::LeveledLsm => "leveled LSM",
            EngineStructure::UpdateInPlaceBTree => "update-in-place B-Tree",
            EngineStructure::CopyOnWriteBTree => "copy-on-write B-Tree",
            EngineStructure::None => "none",
        }
    }
}

/// An engine's own counters, as it reports them.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct EngineStats {
    /// Numeric counters, by the engine's own names (e.g. RocksDB tickers,
    /// WiredTiger statistics descriptions) or ours where parsed from text
    /// (`compaction.w_amp.L1.default`).
    pub values: Vec<(String, f64)>,
    /// Text reports (e.g. RocksDB `rocksdb.stats`).
    pub texts: Vec<(String, String)>,
}
