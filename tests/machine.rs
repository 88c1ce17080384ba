//! The tests that change the machine: loop devices and the device model,
//! cgroups, power cuts, corners and sweeps on storage classes, the
//! conformance suite of the embedded engines, the allocator preload.
//!
//! One test binary of a few (see Cargo.toml's `[[test]]`): each module was
//! a binary of its own; `scripts/test.sh` still runs each module in a
//! process of its own, so they share nothing at run time.

mod common;

mod allocator;
mod conformance;
mod corners;
mod devmodel;
mod powercut;
mod storage;
mod sweep;
mod warmup;
