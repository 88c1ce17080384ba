//! The fuzz targets' corpora (fuzz/corpus/TARGET/), replayed as ordinary
//! tests: every input gives a value or a one-line error, none panics.
//! `bench/fuzz.sh` grows the corpora with cargo-fuzz; what it adds is
//! replayed here from then on.

#[test]
fn every_corpus_input_gives_a_value_or_one_line() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut seen = 0;
    for (name, target) in ampbench::fuzz::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{name}: an empty corpus");
        for f in files {
            let data = std::fs::read(&f).unwrap();
            let out = std::panic::catch_unwind(|| target(&data))
                .unwrap_or_else(|_| panic!("{name} panicked on {}", f.display()));
            if let Some(e) = out {
                assert!(
                    !e.trim().is_empty(),
                    "{name} {}: an empty error",
                    f.display()
                );
                assert!(
                    !e.trim().contains('\n'),
                    "{name} {}: not one line: {e}",
                    f.display()
                );
            }
            seen += 1;
        }
    }
    assert!(seen >= 6);
}

/// The seeds say what they should: the shipped plans and the sample
/// inputs are accepted, the bad ones refused with their reason.
#[test]
fn seeds_are_accepted_or_refused_for_their_reason() {
    use ampbench::fuzz::*;
    let corpus = |t: &str, f: &str| {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fuzz/corpus")
                .join(t)
                .join(f),
        )
        .unwrap()
    };
    assert_eq!(plan(&corpus("plan", "ycsb-embedded.toml")), None);
    assert_eq!(sets(&corpus("sets", "rocksdb")), None);
    assert!(
        sets(&corpus("sets", "postgres"))
            .unwrap()
            .contains("listen_addresses")
    );
    assert_eq!(params(&corpus("params", "linkbench")), None);
    assert_eq!(units(&corpus("units", "all")), None);
    assert_eq!(distribution(&corpus("distribution", "small")), None);
    assert!(
        distribution(&corpus("distribution", "falling"))
            .unwrap()
            .contains("does not follow")
    );
    assert_eq!(results(&corpus("results", "lmdb-run")), None);
    assert!(results(&corpus("results", "truncated")).is_some());
    assert!(plan(b"engines = 3").unwrap().contains("plan file"));
}
