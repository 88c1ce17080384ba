//! Reports read only the results file: seed-style text tables (with ratio
//! tables when engines or runs are compared), JSON with every figure under
//! stable names, CSV, and a self-contained HTML page with charts.

#![warn(missing_docs)]

// The crates below, under the module names the code has always used:
// `crate::metrics` is the ampbench-metrics crate (Cargo.toml lists them).
use ampbench_core::{UsageError, bound, check, names, postspec, record, units};
use ampbench_metrics as metrics;
use ampbench_results as results;

pub mod charts;
pub mod clients;
pub mod compare;
pub mod concurrency;
pub mod html_charts;
pub mod parts;
pub mod post;
pub mod ratio;
pub mod repeat;
pub mod slices;
pub mod steps;
pub mod sweep;
pub mod table;
pub mod theory;

use crate::results::RunView;

/// One report format: `--format NAME`, a line on what it is, and how it
/// renders a run. Each lives in its own module; [`FORMATS`] lists them.
pub trait Exporter: Sync {
    /// Its `--format` value.
    fn name(&self) -> &'static str;
    /// What it is, one line (`--help`).
    fn about(&self) -> &'static str;
    /// The run in this format.
    fn render(&self, run: &RunView, on: &Inputs<'_>) -> anyhow::Result<String>;
}

/// What an exporter may read besides the run.
pub struct Inputs<'a> {
    /// The engine ratio tables divide by (an engine of the run, see
    /// [`compare::base_engine`]) when there are several engines.
    pub base: Option<&'a str>,
    /// The results file or store (the interval log reads its stored
    /// histograms).
    pub results: &'a crate::results::Results,
}

/// An output format: one of [`FORMATS`].
#[derive(Clone, Copy)]
pub struct Format(&'static dyn Exporter);

/// Declares each format's module and lists its exporter in [`FORMATS`].
macro_rules! formats {
    ($($module:ident :: $exporter:ident),+ $(,)?) => {
        $(pub mod $module;)+

        /// Every format, in `--help`'s order.
        pub const FORMATS: &[Format] = &[$(Format(&$module::$exporter)),+];
    };
}

// The registry: a format is its module (with a type implementing
// `Exporter`) and one line here.
formats! {
    text::Text,
    summary::Summary,
    json::Json,
    csv::Csv,
    html::Html,
    markdown::Markdown,
    hlog::Hlog,
}

impl Format {
    /// The full text report (`run -v` prints it).
    pub const TEXT: Format = Format(&text::Text);
    /// The short text report `run` prints.
    pub const SUMMARY: Format = Format(&summary::Summary);
    /// Every figure, as JSON.
    pub const JSON: Format = Format(&json::Json);

    /// Its `--format` value.
    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name() == other.name()
    }
}

impl clap::ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Format] {
        FORMATS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name()).help(self.0.about()))
    }
}

/// Renders a run in format `f`; see [`Inputs`] for `base` and `results`.
/// Text, HTML and Markdown show repetitions (`--repeat`) as means with
/// intervals; JSON, CSV and the interval log keep every repetition's
/// step.
pub fn render(
    run: &RunView,
    f: Format,
    base: Option<&str>,
    results: &crate::results::Results,
) -> anyhow::Result<String> {
    f.0.render(run, &Inputs { base, results })
}

/// `text` with, for a seed plan's run, the post's table beside this
/// machine's after it (fenced as code in Markdown).
fn with_post(run: &RunView, mut text: String, fenced: bool) -> String {
    if let Some(s) = post::of_run(run).map(|s| post::render(&s, &repeat::collapse(run))) {
        if fenced {
            text.push_str("\n```\n");
            text.push_str(&s);
            text.push_str("```\n");
        } else {
            text.push('\n');
            text.push_str(&s);
        }
    }
    text
}
