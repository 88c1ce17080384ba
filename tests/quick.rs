//! The tests that need neither a server nor the machine's devices: the
//! command line, reports and exports, the results file, the docs, the
//! layering, the browser check of the HTML page.
//!
//! One test binary of a few (see Cargo.toml's `[[test]]`): each module was
//! a binary of its own; `scripts/test.sh` still runs each module in a
//! process of its own, so they share nothing at run time.

mod common;

mod cli;
mod docs_links;
mod engine_open;
mod exports;
mod fuzz_corpora;
mod html_browser;
mod layers;
mod lengths;
mod model;
mod output;
mod repeat;
mod results_file;
mod slices;
mod workloads;
