//! Tests of `cli::settings_doc`: the shipped files, the template, flags and keys, help defaults, plan and flag precedence, the recorded config.
use super::*;
use crate::runner::RunConfig;

/// The configurations `ampbench run ARGS…` would run.
fn configs(args: &[&str]) -> Vec<RunConfig> {
    use clap::Parser;
    let cli =
        crate::cli::Cli::try_parse_from(["ampbench", "run"].iter().chain(args)).expect("parses");
    let crate::cli::Cmd::Run(a) = cli.cmd else {
        panic!("not a run")
    };
    a.into_configs().expect("valid")
}

fn manifest(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// plans/template.toml and docs/settings.md's table are what the
/// settings make now.
#[test]
fn shipped_files_are_made_from_the_settings() {
    assert_eq!(
        manifest("plans/template.toml"),
        template(),
        "plans/template.toml is stale: run `ampbench template > plans/template.toml`"
    );
    let doc = manifest("docs/settings.md");
    let table = doc
        .split_once("<!-- settings table: ampbench template --markdown -->\n")
        .and_then(|(_, rest)| rest.split_once("<!-- end of the settings table -->"))
        .map(|(t, _)| t)
        .expect("docs/settings.md has the table's markers");
    assert_eq!(
        table,
        markdown(),
        "docs/settings.md's table is stale: put `ampbench template --markdown` between its markers"
    );
}

/// The template's uncommented values read back as the defaults, and
/// each commented example is a valid plan line that sets its key.
#[test]
fn the_template_reads_back_as_the_defaults() {
    let mut read: Settings = toml::from_str(&template()).expect("the template is a plan");
    // Its `[set.ENGINE]` headers, every option commented, are empty.
    assert!(read.set.values().all(|v| v.is_empty()));
    read.set.clear();
    assert_eq!(toml::Table::try_from(read).unwrap(), defaults());
    for (key, ex) in DERIVED
        .iter()
        .map(|(k, e, _)| (k, e))
        .chain(EXAMPLES.iter().map(|(k, e)| (k, e)))
    {
        let s: Settings = toml::from_str(&format!("{key} = {ex}"))
            .unwrap_or_else(|e| panic!("{key} = {ex}: {e}"));
        let t = toml::Table::try_from(s).unwrap();
        assert_ne!(
            t.get(*key),
            defaults().get(*key),
            "{key} = {ex} changes nothing"
        );
    }
}

/// Every key but `post` has a flag, every setting flag a key, every
/// other flag is one of the run's own switches; a key without a
/// default says what the run works out, and only such a key does.
#[test]
fn keys_and_flags_pair_up() {
    let cmd = run_command();
    for key in keys() {
        let d = defaults();
        let derived = DERIVED.iter().any(|(k, _, _)| k == key);
        if *key == "post" {
            assert!(flag_id(key).is_none());
            continue;
        }
        let id = flag_id(key).unwrap_or_else(|| panic!("{key} has no flag"));
        assert!(
            cmd.get_arguments().any(|a| a.get_id().as_str() == id),
            "{key}: no flag {id}"
        );
        assert_eq!(d.get(*key).is_none(), derived, "{key}: derived or not");
    }
    let own = ["plan", "allow_unsafe_settings", "yes", "host", "verbose"];
    for a in cmd.get_arguments() {
        let id = a.get_id().as_str();
        assert!(
            FLAG_IDS.contains(&id) || own.contains(&id) || id == "help",
            "--{id} is neither a setting nor a run switch"
        );
        assert!(
            !a.get_help()
                .map(|h| h.to_string())
                .unwrap_or_default()
                .contains("[default:"),
            "--{id}'s doc comment writes its default by hand"
        );
    }
    for id in FLAG_IDS {
        let key = match *id {
            "engine" => "engines",
            "param" => "params",
            k => k,
        };
        assert!(keys().contains(&key), "flag {id} has no key");
    }
}

/// `run --help` ends each setting's help with its default.
#[test]
fn help_shows_each_default() {
    let cmd = annotate(run_command());
    for key in keys() {
        let (Some(id), Some(d)) = (flag_id(key), default_of(key)) else {
            continue;
        };
        let a = cmd
            .get_arguments()
            .find(|a| a.get_id().as_str() == id)
            .unwrap();
        if d == "none" || matches!(a.get_action(), clap::ArgAction::SetTrue) {
            continue;
        }
        let h = a.get_help().unwrap().to_string();
        assert!(h.ends_with(&format!("[default: {d}]")), "--{id}: {h}");
    }
    let duration = default_of("duration").unwrap();
    assert_eq!(duration, "3");
    assert_eq!(default_of("engines").unwrap(), "rocksdb,wiredtiger,lmdb");
}

/// The shipped template as a plan runs what no plan runs (with the
/// workload named, so the default benchmark's plan is not taken); a
/// flag beats the plan; lists add to it.
#[test]
fn a_plan_of_defaults_is_no_plan_and_flags_beat_it() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/template.toml");
    let path = path.to_str().unwrap();
    assert_eq!(
        format!("{:?}", configs(&[path])),
        format!("{:?}", configs(&["-w", "pattern"]))
    );
    let d = tempfile::tempdir().unwrap();
    let plan = d.path().join("p.toml");
    std::fs::write(
        &plan,
        "workload = \"pattern\"\nduration = \"7s\"\nthreads = [1, 2]\n\
         [params]\ndocs = 1000\n[set.rocksdb]\nwrite_buffer_size = 1048576\n",
    )
    .unwrap();
    let plan = plan.to_str().unwrap();
    let c = &configs(&[plan])[0];
    assert_eq!((c.duration, c.thread_levels.clone()), (7.0, vec![1, 2]));
    let c = &configs(&[plan, "--duration", "5", "--threads", "8", "-p", "batch=10"])[0];
    assert_eq!((c.duration, c.threads, c.thread_levels.len()), (5.0, 8, 0));
    assert_eq!(
        c.params,
        vec![
            ("docs".into(), "1000".into()),
            ("batch".into(), "10".into())
        ]
    );
    let c = &configs(&[plan, "--set", "rocksdb.max_background_jobs=4"])[0];
    let rocks = c.sets.values().next().expect("rocksdb's options");
    assert_eq!(rocks.pairs.len(), 2, "{:?}", rocks.pairs);
}

/// A run's configuration as the runner records it reads back as the
/// reports' typed `RecordedConfig`: every field the reports read is a
/// field `RunConfig` records, under that name, with that value.
#[test]
fn the_recorded_config_reads_back_typed() {
    use crate::results::RecordedConfig;
    let cfgs = configs(&[
        "-w",
        "pattern",
        "--bound",
        "cache,io",
        "--memory",
        "256MB",
        "--slice",
        "2",
        "--duration",
        "6",
        "--storage",
        "slow-ssd",
        "--sweep",
        "rocksdb.compaction_pri=kByCompensatedSize,kMinOverlappingRatio",
        "-e",
        "rocksdb",
        "--yes",
    ]);
    let io = cfgs.last().unwrap();
    let mut recorded = serde_json::to_value(io).unwrap();
    // What the runner adds as it records the run (runner::begin).
    recorded["storage_effective"] = serde_json::json!({"class_effective": "native"});
    let r = RecordedConfig::of(&recorded);
    assert_eq!(r.bound, Some(crate::bound::Bound::Io));
    assert_eq!(r.memory, Some(256 << 20));
    assert_eq!(r.cache_bytes, Some(64 << 20));
    assert_eq!(r.slice, Some(2.0));
    assert_eq!(r.sweep.len(), 1);
    assert_eq!(r.storage.class.as_deref(), Some("slow-ssd"));
    assert_eq!(r.class(), Some("native"));
    // Every typed field is a key of the record, not a default read
    // from a name RunConfig no longer has.
    let fields = serde_json::to_value(RecordedConfig::default()).unwrap();
    for key in fields.as_object().unwrap().keys() {
        // RunConfig leaves out a run's post and its scale when it has
        // none: a seed plan's are checked below.
        assert!(
            recorded.get(key).is_some() || key.starts_with("post"),
            "RecordedConfig::{key} is not recorded by RunConfig"
        );
    }
    let cached = RecordedConfig::of(&serde_json::to_value(&cfgs[0]).unwrap());
    assert_eq!(
        (cached.bound, cached.memory),
        (Some(crate::bound::Bound::Cache), None)
    );
    let seed =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/seeds/000-btree-vs-lsm.toml");
    let seeded = &configs(&[seed.to_str().unwrap()])[0];
    let r = RecordedConfig::of(&serde_json::to_value(seeded).unwrap());
    assert_eq!(r.post, seeded.post);
    assert!(r.post.is_some());
    assert_eq!(r.post_scale, seeded.post_scale);
}

/// Seed 003's preset gives InnoDB 5/8 of the limit and MyRocks buffered
/// reads over the IO-bound profile, and `--set` still wins over it.
#[test]
fn a_preset_goes_between_the_profile_and_set() {
    let plan = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("plans/seeds/003-myrocks-vs-innodb-storage.toml");
    let p = plan.to_str().unwrap();
    let get = |s: &[(String, String)], k: &str| {
        s.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let innodb = crate::engine::EngineKind::parse("mariadb-innodb").unwrap();
    let myrocks = crate::engine::EngineKind::parse("mariadb-myrocks").unwrap();
    let cfg = &configs(&[p])[0];
    assert_eq!(cfg.preset.as_deref(), Some("era-2015"));
    let i = cfg.engine_settings(innodb);
    assert_eq!(get(&i, "innodb_buffer_pool_size"), "320M");
    assert_eq!(get(&i, "innodb_flush_method"), "O_DIRECT");
    let m = cfg.engine_settings(myrocks);
    assert_eq!(get(&m, "rocksdb_use_direct_reads"), "OFF");
    assert_eq!(
        get(&m, "rocksdb_use_direct_io_for_flush_and_compaction"),
        "ON"
    );
    let cfg = &configs(&[p, "--set", "mariadb-innodb.innodb_buffer_pool_size=400M"])[0];
    assert_eq!(
        get(&cfg.engine_settings(innodb), "innodb_buffer_pool_size"),
        "400M"
    );
    // Without the preset, today's profile: direct reads.
    let cfg = &configs(&["-e", "mariadb-myrocks", "--memory", "512MB", "--yes"])[0];
    assert_eq!(
        get(&cfg.engine_settings(myrocks), "rocksdb_use_direct_reads"),
        "ON"
    );
}

/// A device cache given as a share of memory is a share of the limit
/// `--bound io` works out from the data when no `--memory` is given (it
/// was the machine's memory), and of `--memory` when it is.
#[test]
fn a_cache_share_is_of_the_corners_memory() {
    use crate::setup::storage::StorageClass;
    let bytes = |c: &RunConfig| {
        c.storage
            .model_of(StorageClass::DiskArray)
            .unwrap()
            .unwrap()
            .cache
            .unwrap()
            .bytes
    };
    let args = [
        "-w",
        "ycsb",
        "-p",
        "recordcount=400000",
        "--bound",
        "io",
        "--storage",
        "disk-array",
        "--device-model",
        "cache_share=0.5",
    ];
    let c = &configs(&args)[0];
    let m = c.memory.unwrap();
    assert!(c.memory_from_data.is_some());
    assert_eq!(c.storage.memory, m);
    assert_eq!(bytes(c), m / 2);
    let mut given = args.to_vec();
    given.extend(["--memory", "256MB"]);
    let c = &configs(&given)[0];
    assert_eq!(bytes(c), 128 << 20);
}
