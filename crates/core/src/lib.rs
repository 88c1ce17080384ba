//! The vocabulary every crate of ampbench may use: named enums, the typed
//! step record, units, the random seed, signals, SQL values, test skips
//! and the system calls the rest share (docs/design.md).

#![warn(missing_docs)]

pub mod bound;
pub mod check;
pub mod identity;
pub mod names;
pub mod postspec;
pub mod record;
pub mod rng;
pub mod share;
pub mod signals;
pub mod sqlval;
pub mod structure;
pub mod sys;
pub mod testing;
pub mod units;

/// What [`named!`] expands to names serde through here, so a crate that
/// declares a named enum needs no serde of its own.
#[doc(hidden)]
pub use serde;

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
