//! Generates Rust bindings for the C engines from Debian's own headers and
//! links Debian's shared libraries. No engine is compiled from source: each
//! engine is a cargo feature (all on by default) whose header and library
//! come from the package `make deps` installs.
//!
//! Your own build of an engine instead: `ROCKSDB_LIB_DIR` and
//! `ROCKSDB_INCLUDE_DIR` (the convention of the Rust RocksDB crates), and
//! `WIREDTIGER_`, `LMDB_`, `LEVELDB_` likewise. The library directory is
//! searched first at link time and put in the binary's run path, so the
//! run loads that library; the engine's version line names the file
//! loaded. The RocksDB read shim is compiled only for the handle layout
//! it was checked against (7.8); with other headers point reads go
//! through the C API, and the run says so.

use std::env;
use std::path::PathBuf;

/// One C engine: cargo feature, header, library, and what to bind.
struct CEngine {
    feature: &'static str,
    header: &'static str,
    lib: &'static str,
    functions: &'static str,
    types: &'static str,
    vars: &'static str,
}

const ENGINES: &[CEngine] = &[
    CEngine {
        feature: "rocksdb",
        header: "rocksdb/c.h",
        lib: "rocksdb",
        functions: "rocksdb_.*",
        types: "rocksdb_.*",
        vars: "rocksdb_.*",
    },
    CEngine {
        feature: "wiredtiger",
        header: "wiredtiger.h",
        lib: "wiredtiger",
        functions: "wiredtiger_.*",
        types: "WT_.*|__wt_.*",
        vars: "WT_.*|WIREDTIGER_.*",
    },
    CEngine {
        feature: "lmdb",
        header: "lmdb.h",
        lib: "lmdb",
        functions: "mdb_.*",
        types: "MDB_.*",
        vars: "MDB_.*",
    },
    CEngine {
        feature: "leveldb",
        header: "leveldb/c.h",
        lib: "leveldb",
        functions: "leveldb_.*",
        types: "leveldb_.*",
        vars: "leveldb_.*",
    },
];

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let system = env::var("AMPBENCH_INCLUDE_DIR").unwrap_or_else(|_| "/usr/include".into());
    println!("cargo:rerun-if-env-changed=AMPBENCH_INCLUDE_DIR");
    println!("cargo:rustc-check-cfg=cfg(rocksdb_shim)");
    // The run path of an own build's libraries, for the binary: a link
    // argument given here reaches only this crate's own tests, so the
    // directories go to ampbench's build script as `DEP_AMPBENCH_ENGINES_RPATH`
    // (the `links` key of Cargo.toml), which passes them to its linker.
    let mut rpath: Vec<String> = Vec::new();
    for e in ENGINES {
        let upper = e.feature.to_uppercase();
        let lib_var = format!("{upper}_LIB_DIR");
        let inc_var = format!("{upper}_INCLUDE_DIR");
        println!("cargo:rerun-if-env-changed={lib_var}");
        println!("cargo:rerun-if-env-changed={inc_var}");
        let lib_dir = env::var(&lib_var).unwrap_or_default();
        println!("cargo:rustc-env=AMPBENCH_{lib_var}={lib_dir}");
        if env::var_os(format!("CARGO_FEATURE_{upper}")).is_none() {
            continue;
        }
        let include = env::var(&inc_var).unwrap_or_else(|_| system.clone());
        let header = format!("{include}/{}", e.header);
        println!("cargo:rerun-if-changed={header}");
        if !std::path::Path::new(&header).exists() {
            panic!(
                "engine '{}': header {header} is missing; run `make deps` \
                 (or build with --no-default-features --features ...)",
                e.feature
            );
        }
        let bindings = bindgen::Builder::default()
            .header(&header)
            .clang_arg(format!("-I{include}"))
            .allowlist_function(e.functions)
            .allowlist_type(e.types)
            .allowlist_var(e.vars)
            .layout_tests(false)
            .generate_comments(false)
            .generate()
            .unwrap_or_else(|err| panic!("bindgen failed on {header}: {err}"));
        bindings
            .write_to_file(out.join(format!("{}_sys.rs", e.feature)))
            .unwrap_or_else(|err| panic!("cannot write bindings for {header}: {err}"));
        if e.feature == "rocksdb" {
            reader_shim(&include);
        }
        if !lib_dir.is_empty() {
            // Absolute: a relative run path would be resolved against the
            // directory ampbench is started from.
            let lib_dir = std::fs::canonicalize(&lib_dir)
                .unwrap_or_else(|e| panic!("{lib_var}={lib_dir}: {e}"))
                .display()
                .to_string();
            println!("cargo:rustc-link-search=native={lib_dir}");
            println!("cargo:rustc-link-arg=-Wl,-rpath,{lib_dir}");
            rpath.push(lib_dir);
        }
        println!("cargo:rustc-link-lib=dylib={}", e.lib);
    }
    println!("cargo:rpath={}", rpath.join(":"));
}

/// Compiles the point-read shim (crates/engine/src/ffi/rocksdb/get.cc): a few
/// calls to RocksDB's public C++ API that reuse one PinnableSlice per
/// session, which the C API cannot. It is compiled against the same
/// headers as the bindings and links the same shared library, and only
/// for the release whose C API handle layout it reads (7.8): with other
/// headers it is left out (cfg `rocksdb_shim` unset) and point reads go
/// through the C API.
fn reader_shim(include: &str) {
    let src = "src/ffi/rocksdb/get.cc";
    println!("cargo:rerun-if-changed={src}");
    // The headers' release, for the run-time check that the library
    // loaded is the same (ffi::rocksdb::reader::check_library).
    let header = std::path::Path::new(include).join("rocksdb/version.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let text = std::fs::read_to_string(&header).unwrap_or_default();
    let part = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("#define ROCKSDB_{name} ")))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| "?".into())
    };
    println!(
        "cargo:rustc-env=AMPBENCH_ROCKSDB_HEADERS={}.{}.{}",
        part("MAJOR"),
        part("MINOR"),
        part("PATCH")
    );
    if (part("MAJOR").as_str(), part("MINOR").as_str()) != ("7", "8") {
        println!(
            "cargo:warning=RocksDB headers {}.{}: the read shim reads 7.8's handle layout and is left out; point reads go through the C API",
            part("MAJOR"),
            part("MINOR")
        );
        return;
    }
    println!("cargo:rustc-cfg=rocksdb_shim");
    cc::Build::new()
        .cpp(true)
        .file(src)
        .include(include)
        .flag("-std=c++17")
        .warnings(true)
        .compile("ampbench_rocksdb_get");
}
