#![no_main]
//! Fuzz target: `ampbench::fuzz::args` must never panic.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ampbench::fuzz::args(data);
});
