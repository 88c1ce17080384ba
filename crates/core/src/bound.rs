//! The corner a run measures: cached or IO-bound.

/// Cached or IO-bound (`--bound`, a plan's `bound`): the corner a run
/// measures.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// No memory limit: the data fits in memory.
    Cache,
    /// A memory limit well below the data.
    Io,
}

impl Bound {
    /// Its name as recorded and written: `cache`, `io`.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Cache => "cache",
            Bound::Io => "io",
        }
    }

    /// As the text reports say it: `cached`, `IO-bound`.
    pub fn in_words(self) -> &'static str {
        match self {
            Bound::Cache => "cached",
            Bound::Io => "IO-bound",
        }
    }
}
