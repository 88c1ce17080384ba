//! Reports read only the results file: seed-style text tables, JSON with
//! every figure under stable names, and CSV.

pub mod json;
pub mod text;

use crate::results::RunView;

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Text tables in the seeds' shape.
    Text,
    /// Every figure, stable names.
    Json,
    /// One row per (engine, step).
    Csv,
}

/// Renders a run.
pub fn render(run: &RunView, f: Format) -> String {
    match f {
        Format::Text => text::render(run),
        Format::Json => json::render(run),
        Format::Csv => json::csv(run),
    }
}
