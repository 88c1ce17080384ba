//! ampbench: a benchmark workbench for database storage engines.
//!
//! The pipeline (docs/design.md): a Plan of Steps per (workload, engine);
//! the driver runs each Step's threads against a workload Store mapped onto
//! an engine; the meter and probes sample what happened; metrics turn
//! samples into figures; results persist them as the run goes; reports read
//! only the results file.
//!
//! Each stage below the binary is a crate of its own (crates/, listed in
//! docs/design.md), re-exported here under its module name, so
//! `ampbench::report` is the ampbench-report crate. This crate holds what
//! runs them: the plan, the runner, the crash check and the command line.

#![warn(missing_docs)]

pub use ampbench_address as address;
pub use ampbench_ampmodel as ampmodel;
pub use ampbench_core::{
    UsageError, bound, check, identity, named, names, postspec, record, rng, share, signals,
    sqlval, structure, sys, testing, units,
};
pub use ampbench_driver as driver;
pub use ampbench_engine as engine;
pub use ampbench_metrics as metrics;
pub use ampbench_probe as probe;
pub use ampbench_report as report;
pub use ampbench_results as results;
pub use ampbench_setup as setup;
pub use ampbench_workload as workload;

pub mod cli;
pub mod crashcheck;
pub mod fuzz;
pub mod plan;
pub mod runner;
