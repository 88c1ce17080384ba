#![no_main]
//! Fuzz target: `ampbench::fuzz::mywire_results` must never panic.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ampbench::fuzz::mywire_results(data);
});
