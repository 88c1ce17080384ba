#![no_main]
//! Fuzz target: `ampbench::fuzz::plan` must never panic.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ampbench::fuzz::plan(data);
});
