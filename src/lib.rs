//! ampbench: a benchmark workbench for database storage engines.
//!
//! The pipeline (docs/design.md): a Plan of Steps per (workload, engine);
//! the driver runs each Step's threads against a workload Store mapped onto
//! an engine; the meter and probes sample what happened; metrics turn
//! samples into figures; results persist them as the run goes; reports read
//! only the results file.

#![warn(missing_docs)]

pub mod address;
pub mod cli;
pub mod crashcheck;
pub mod driver;
pub mod engine;
pub mod fuzz;
pub mod metrics;
pub mod model;
pub mod names;
pub mod plan;
pub mod probe;
pub mod record;
pub mod report;
pub mod results;
pub mod rng;
pub mod runner;
pub mod seedspec;
pub mod setup;
pub mod signals;
pub mod sys;
pub mod testing;
pub mod units;
pub mod workload;

/// Bad input from the user (a flag, key, path or value): exit code 2, one
/// line naming what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}
