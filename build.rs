//! Generates Rust bindings for the C engines from Debian's own headers and
//! links Debian's shared libraries. No engine is compiled from source: each
//! engine is a cargo feature (all on by default) whose header and library
//! come from the package `make deps` installs.

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
    let include = env::var("AMPBENCH_INCLUDE_DIR").unwrap_or_else(|_| "/usr/include".into());
    println!("cargo:rerun-if-env-changed=AMPBENCH_INCLUDE_DIR");
    for e in ENGINES {
        let var = format!("CARGO_FEATURE_{}", e.feature.to_uppercase());
        if env::var_os(&var).is_none() {
            continue;
        }
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
        println!("cargo:rustc-link-lib=dylib={}", e.lib);
    }
}

/// Compiles the point-read shim (src/engine/ffi/rocksdb/get.cc): a few
/// calls to RocksDB's public C++ API that reuse one PinnableSlice per
/// session, which the C API cannot. It is compiled against the same
/// Debian headers as the bindings and links the same shared library.
fn reader_shim(include: &str) {
    let src = "src/engine/ffi/rocksdb/get.cc";
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
    cc::Build::new()
        .cpp(true)
        .file(src)
        .include(include)
        .flag("-std=c++17")
        .warnings(true)
        .compile("ampbench_rocksdb_get");
}
