#![no_main]
//! Fuzz target: `ampbench::fuzz::distribution` must never panic.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ampbench::fuzz::distribution(data);
});
