//! Reports read only the results file: seed-style text tables (with ratio
//! tables when engines or runs are compared), JSON with every figure under
//! stable names, CSV, and a self-contained HTML page with charts.

#![warn(missing_docs)]

// The crates below, under the module names the code has always used:
// `crate::probe` is the ampbench-probe crate (Cargo.toml lists them).
use ampbench_core::{UsageError, names, record, seedspec, units};
use ampbench_metrics as metrics;
use ampbench_results as results;

pub mod charts;
pub mod clients;
pub mod compare;
pub mod concurrency;
pub mod export;
pub mod html;
pub mod html_charts;
pub mod json;
pub mod model;
pub mod parts;
pub mod ratio;
pub mod repeat;
pub mod seed;
pub mod slices;
pub mod steps;
pub mod summary;
pub mod sweep;
pub mod table;
pub mod text;

use crate::results::RunView;

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Text tables in the seeds' shape.
    Text,
    /// The short text report `run` prints: one figure per step and
    /// engine in each table.
    Summary,
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
    // A seed plan's run: the post's table beside this machine's.
    let seed = || seed::of_run(run).map(|s| seed::render(&s, &repeat::collapse(run)));
    Ok(match f {
        Format::Text => {
            let mut t = text::render(&repeat::collapse(run), base);
            if let Some(s) = seed() {
                t.push('\n');
                t.push_str(&s);
            }
            t
        }
        Format::Summary => {
            let mut t = summary::render(&repeat::collapse(run), base);
            if let Some(s) = seed() {
                t.push('\n');
                t.push_str(&s);
            }
            t
        }
        Format::Json => json::render(run),
        Format::Csv => json::csv(run),
        Format::Html => html::render(&repeat::collapse(run), base),
        Format::Markdown => {
            let mut t = export::markdown(run, base);
            if let Some(s) = seed() {
                t.push_str("\n```\n");
                t.push_str(&s);
                t.push_str("```\n");
            }
            t
        }
        Format::Hlog => export::hlog(results, run)?,
    })
}
