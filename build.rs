//! Puts an own build's engine libraries in the binary's run path. The
//! engines are bound and linked by the ampbench-engine crate's build
//! script (crates/engine/build.rs); a link argument there reaches only
//! that crate's tests, so it hands the directories on as
//! `DEP_AMPBENCH_ENGINES_RPATH` and this script gives them to the linker
//! of the binary and of the integration tests.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dirs = std::env::var("DEP_AMPBENCH_ENGINES_RPATH").unwrap_or_default();
    for d in dirs.split(':').filter(|d| !d.is_empty()) {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
    }
}
