//! Reports read only the results file: seed-style text tables (with ratio
//! tables when engines or runs are compared), JSON with every figure under
//! stable names, CSV, and a self-contained HTML page with charts.

pub mod charts;
pub mod compare;
pub mod concurrency;
pub mod export;
pub mod html;
pub mod html_charts;
pub mod json;
pub mod model;
pub mod repeat;
pub mod slices;
pub mod steps;
pub mod sweep;
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
    /// A self-contained HTML page with charts.
    Html,
    /// Markdown tables, to paste into an issue or a post.
    Markdown,
    /// HdrHistogram interval log of every step's response times.
    Hlog,
}

/// Renders a run; text adds ratios to `base` (an engine of the run, see
/// [`compare::base_engine`]) when there are several engines.
/// Text, HTML and Markdown show repetitions (`--repeat`) as means with
/// intervals; JSON, CSV and the interval log keep every repetition's
/// step. The interval log reads the stored histograms from `results`.
pub fn render(
    run: &RunView,
    f: Format,
    base: Option<&str>,
    results: &crate::results::Results,
) -> anyhow::Result<String> {
    Ok(match f {
        Format::Text => text::render(&repeat::collapse(run), base),
        Format::Json => json::render(run),
        Format::Csv => json::csv(run),
        Format::Html => html::render(&repeat::collapse(run), base),
        Format::Markdown => export::markdown(run, base),
        Format::Hlog => export::hlog(results, run)?,
    })
}
