//! What is said of the settings, made from the two places they live: the
//! defaults from [`Settings::default`], what each means from its flag's
//! help (`RunArgs`'s doc comments). From them: the plan template
//! (`ampbench template`, plans/template.toml), the `[default: …]` of
//! `run --help` and the table of docs/settings.md (`ampbench template
//! --markdown`). tests/cli.rs checks the shipped files against them.

use std::fmt::Write as _;

use clap::{Args, Command};

use super::run::RunArgs;
use crate::plan::{Settings, keys};

/// The keys whose default is worked out from other settings (`None` in
/// [`Settings::default`]): an example value for the template, and what
/// the run does without it.
const DERIVED: &[(&str, &str, &str)] = &[
    (
        "steps",
        r#"["load", "ows.1", "pq.n"]"#,
        "every step of the workload, in order",
    ),
    (
        "interval",
        r#""1m""#,
        "10 s, or a sixth of slice when that is shorter",
    ),
    ("slice", r#""1h""#, "no slices"),
    ("warmup_steady", r#""10m""#, "off: the warm-up is --warmup"),
    ("rate", "20000.0", "closed loop"),
    (
        "cache",
        r#""1GB""#,
        "256MB, or a quarter of the memory limit in the io corner",
    ),
    ("dir", r#""/data""#, "the system temp dir"),
    (
        "transport",
        r#""socket""#,
        "as the workload's reference client: tcp, the insert benchmark MariaDB's socket",
    ),
    (
        "storage",
        r#""slow-ssd""#,
        "dedicated, or custom when iops or mbps is given",
    ),
    (
        "device_size",
        r#""8GB""#,
        "half the free space under dir, 1-64 GB",
    ),
    (
        "storage_probe",
        r#""2s""#,
        "1 s a phase on a modelled or capped class, 0.5 s otherwise",
    ),
    ("iops", r#""1000,500""#, "the class's caps"),
    ("mbps", r#""200""#, "the class's caps"),
    ("io_scale", r#""cores=24""#, "the nominal budgets"),
    ("memory", r#""256MB""#, "unlimited"),
    ("preset", r#""era-2015""#, "none: today's settings"),
    (
        "target",
        r#""postgres://bench@10.0.0.5/postgres?sslmode=verify-full""#,
        "none: ampbench starts the servers it runs, on this host",
    ),
    (
        "target_password_file",
        r#""/root/.ampbench-target""#,
        "the URL's password, else AMPBENCH_TARGET_PASSWORD",
    ),
    (
        "server_bin",
        r#""/opt/mariadb-11.4""#,
        "Debian's server binaries",
    ),
    (
        "host_metrics",
        r#""http://10.0.0.5:9100/metrics""#,
        "none: no figure of the server host's own devices and CPU",
    ),
    (
        "client",
        "0",
        "JOB_COMPLETION_INDEX when set (a Kubernetes Indexed Job), else 0",
    ),
    (
        "run_name",
        r#""night-1""#,
        "none: required with clients > 1",
    ),
    (
        "target_db",
        r#""bench""#,
        "a database of ampbench's own (ampbench_…), dropped at the end",
    ),
    (
        "bound",
        r#"["cache", "io"]"#,
        "cache, or io when memory is given",
    ),
];

/// Keys with a section of their own in the template, not a line.
const SECTIONS: &[&str] = &["params", "set", "post"];

/// Examples for keys whose default is empty.
const EXAMPLES: &[(&str, &str)] = &[
    ("device_model", r#"["cache=off"]"#),
    (
        "sweep",
        r#"["rocksdb.compaction_pri=kByCompensatedSize,kMinOverlappingRatio"]"#,
    ),
];

/// The `run` flag of a settings key (its `RunArgs` field's clap id), if
/// it has one.
pub fn flag_id(key: &str) -> Option<&'static str> {
    let id = match key {
        "engines" => "engine",
        "params" => "param",
        k => k,
    };
    FLAG_IDS.iter().copied().find(|f| *f == id)
}

/// Every `RunArgs` field that is a setting, by clap id (the field name).
pub const FLAG_IDS: &[&str] = &[
    "workload",
    "engine",
    "steps",
    "threads",
    "warmup",
    "warmup_steady",
    "duration",
    "interval",
    "slice",
    "rate",
    "arrival",
    "seed",
    "cache",
    "results",
    "dir",
    "keep",
    "settle",
    "transport",
    "target",
    "target_password_file",
    "target_db",
    "target_db_owned",
    "server_bin",
    "host_metrics",
    "clients",
    "client",
    "run_name",
    "barrier_timeout",
    "client_timeout",
    "store_timeout",
    "allocator",
    "replication_log",
    "server_timeout",
    "storage",
    "fs",
    "device_size",
    "storage_probe",
    "iops",
    "mbps",
    "device_model",
    "io_scale",
    "memory",
    "preset",
    "bound",
    "drop_caches",
    "sweep",
    "repeat",
    "reuse",
    "param",
    "set",
];

/// `run`'s flags as clap sees them, without the added defaults.
fn run_command() -> Command {
    RunArgs::augment_args(Command::new("run"))
}

/// The help of a key's flag (its first paragraph), without a default.
fn help(key: &str) -> String {
    let Some(id) = flag_id(key) else {
        return String::new();
    };
    run_command()
        .get_arguments()
        .find(|a| a.get_id().as_str() == id)
        .and_then(|a| a.get_help().map(|h| h.to_string().trim_end().to_string()))
        .unwrap_or_default()
}

/// A key's help with the values its flag takes, when clap knows them:
/// what the template and the docs table say of it.
fn said(key: &str) -> String {
    let h = help(key);
    let values: Vec<String> = flag_id(key)
        .and_then(|id| {
            run_command()
                .get_arguments()
                .find(|a| a.get_id().as_str() == id)
                .map(|a| {
                    a.get_possible_values()
                        .iter()
                        .filter(|v| !v.is_hide_set())
                        .map(|v| v.get_name().to_string())
                        .collect()
                })
        })
        .unwrap_or_default();
    if values.is_empty() {
        h
    } else {
        format!("{h}; one of: {}", values.join(", "))
    }
}

/// The flag as typed (`--server-timeout`, `-p`).
fn flag_shown(key: &str) -> Option<String> {
    let id = flag_id(key)?;
    let cmd = run_command();
    let a = cmd.get_arguments().find(|a| a.get_id().as_str() == id)?;
    match (a.get_long(), a.get_short()) {
        (Some(l), _) => Some(format!("--{l}")),
        (None, Some(s)) => Some(format!("-{s}")),
        _ => None,
    }
}

/// The default of every key that has one, as TOML values.
fn defaults() -> toml::Table {
    // Settings serializes to a table: every field is a TOML value (the
    // enums as their names), so this cannot fail.
    toml::Table::try_from(Settings::default()).unwrap_or_default()
}

/// A default as a person reads it after `[default: `: `3`, `rocksdb,lmdb`.
fn shown(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        toml::Value::Array(a) if a.is_empty() => "none".into(),
        toml::Value::Table(t) if t.is_empty() => "none".into(),
        toml::Value::Boolean(b) => if *b { "on" } else { "off" }.into(),
        toml::Value::Array(a) => a.iter().map(shown).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// What a key is without a plan or flag: its value, or for a derived
/// key what the run works out.
pub fn default_of(key: &str) -> Option<String> {
    if let Some(v) = defaults().get(key) {
        return Some(shown(v));
    }
    DERIVED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, _, when)| when.to_string())
}

/// `run`'s command with each setting's default added to its help, as
/// `[default: …]` at the end of the short and the long help.
pub fn annotate(mut cmd: Command) -> Command {
    for key in keys() {
        let (Some(id), Some(d)) = (flag_id(key), default_of(key)) else {
            continue;
        };
        // A list that starts empty (-p, --set, --sweep) has no default
        // worth a word.
        if d == "none" {
            continue;
        }
        cmd = cmd.mut_arg(id, |a| {
            // A switch is off unless given: nothing to say.
            if matches!(a.get_action(), clap::ArgAction::SetTrue) {
                return a;
            }
            let short = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            let short = short.trim_end();
            let long = a.get_long_help().map(|h| h.to_string());
            let a = a.help(format!("{short} [default: {d}]"));
            match long {
                Some(l) => a.long_help(add_default(&l, &d)),
                None => a,
            }
        });
    }
    cmd
}

/// A long help with the default after its first paragraph.
fn add_default(long: &str, d: &str) -> String {
    match long.split_once("\n\n") {
        Some((first, rest)) => format!("{first} [default: {d}]\n\n{rest}"),
        None => match long.split_once('\n') {
            Some((first, rest)) => format!("{first} [default: {d}]\n{rest}"),
            None => format!("{long} [default: {d}]"),
        },
    }
}

/// Text wrapped to `width` columns, each line after `prefix`.
fn wrapped(text: &str, prefix: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for w in text.split_whitespace() {
        if !line.is_empty() && prefix.len() + line.len() + 1 + w.len() > width {
            let _ = writeln!(out, "{prefix}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{prefix}{line}");
    }
    out
}

/// A TOML key, quoted unless it is a bare key.
fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

/// The commented plan template (`ampbench template`, shipped as
/// `plans/template.toml`): every key with its flag's help and its
/// default, every workload's parameters, every engine's default settings.
pub fn template() -> String {
    use crate::engine::EngineKind;
    use crate::workload::WorkloadKind;
    let defaults = defaults();
    let mut o = String::from(
        "# ampbench plan file: `ampbench run plans/template.toml`.\n\
         # Every key is optional; the values below are the defaults (a commented\n\
         # key's default is worked out as its comment says). A flag given on the\n\
         # command line overrides the plan. Unknown keys are an error.\n\
         # Made by `ampbench template` from the settings' defaults, the flags'\n\
         # help, the engine registry and the workloads.\n",
    );
    for key in keys().iter().filter(|k| !SECTIONS.contains(k)) {
        o.push('\n');
        let flag = flag_shown(key)
            .map(|f| format!(" ({f})"))
            .unwrap_or_default();
        o.push_str(&wrapped(&format!("{}{flag}", said(key)), "# ", 78));
        match defaults.get(*key) {
            Some(v) => {
                if let (Some((_, ex)), true) = (
                    EXAMPLES.iter().find(|(k, _)| k == key),
                    v.as_array().is_some_and(|a| a.is_empty()),
                ) {
                    let _ = writeln!(o, "# e.g. {key} = {ex}");
                }
                let _ = writeln!(o, "{key} = {v}");
            }
            None => {
                if let Some((_, ex, when)) = DERIVED.iter().find(|(k, _, _)| k == key) {
                    let _ = writeln!(o, "# default: {when}");
                    let _ = writeln!(o, "# {key} = {ex}");
                }
            }
        }
    }
    o.push_str(
        "\n# Workload parameters (-p KEY=VALUE), each workload's with its default;\n\
         # only the chosen workload's keys are allowed.\n[params]\n",
    );
    for w in WorkloadKind::ALL {
        let _ = writeln!(o, "# {}:", w.name());
        for p in w.params() {
            let _ = writeln!(
                o,
                "{:<47} # {}",
                format!("#   {} = {:?}", toml_key(p.key), p.default),
                p.help
            );
        }
    }
    o.push_str(
        "\n# Engine options (--set ENGINE.KEY=VALUE), passed through to the engine;\n\
         # the commented values are the defaults with cache = \"256MB\".\n",
    );
    for e in EngineKind::all() {
        let _ = writeln!(o, "\n[set.{}]", toml_key(e.name()));
        let defaults = e.default_settings(256 << 20);
        if defaults.is_empty() {
            o.push_str("# (takes no options)\n");
        }
        for (k, v) in defaults {
            let _ = writeln!(o, "# {} = {v:?}", toml_key(&k));
        }
    }
    o.push_str(POST);
    o
}

/// The template's `[post]` block: a seed plan's post, which has no flag.
const POST: &str = "\n# A seed plan's post (plans/seeds/ has one per seed post): the post's\n\
# published figures, where each of ours comes from, and the comparisons\n\
# the post draws; the report prints them side by side with a verdict.\n\
# `-p scale=X` multiplies the parameters named in scale_params.\n\
# [post]\n\
# file = \"003_00017efa7efe7952.txt\"\n\
# title = \"MyRocks: use less IO on writes to have more IO for reads\"\n\
# setup = \"what the post ran, and what runs here\"\n\
# scale_params = [\"maxid1\"]\n\
# [[post.figure]]\n\
# id = \"disk.ratio\"\n\
# table = \"Transactions per second\"\n\
# row = \"Disk array\"\n\
# column = \"MyRocks/InnoDB\"\n\
# value = 5.3                                 # absent: the post shows it only in a graph\n\
# ours = { engine = \"mariadb-myrocks\", step = \"request@disk-array\", figure = \"ops_per_sec\", over = { engine = \"mariadb-innodb\", step = \"request@disk-array\", figure = \"ops_per_sec\" } }\n\
# (ours also takes slice = N: the step's Nth --slice; step = \"all\": the engine's\n\
#  whole run added up, for cf_total_mb, cf_ingest_mb, cf_write_amp, cf.NAME.write_amp;\n\
#  one step's too, and its extras such as lsm_levels)\n\
# [[post.regime]]                             # the post's regime: a claim naming it is judged only inside its bounds\n\
# id = \"db.innodb\"\n\
# text = \"InnoDB's database over the memory limit\"\n\
# post = 32.0\n\
# ours = { engine = \"mariadb-innodb\", step = \"request@disk-array\", figure = \"db_bytes\" }\n\
# per_memory = true                           # over the run's memory limit (also: times = { … }, scale = X)\n\
# min = 4.0                                   # and/or max\n\
# [[post.claim]]\n\
# text = \"MyRocks/InnoDB rises as storage slows\"\n\
# kind = \"rises\"                             # rises | falls | less | more (factor x the second) | least | most (the first against every other) | below | above (factor)\n\
# figures = [\"fast.ratio\", \"slow.ratio\", \"disk.ratio\"]\n\
# regime = [\"db.innodb\"]                     # absent: judged in any regime\n";

/// The table of docs/settings.md (`ampbench template --markdown`): every
/// key, its flag, its default and its flag's help.
pub fn markdown() -> String {
    let mut o = String::from("| key | flag | default | meaning |\n|---|---|---|---|\n");
    for key in keys() {
        let flag = flag_shown(key).map_or("-".to_string(), |f| format!("`{f}`"));
        let default = default_of(key).unwrap_or_else(|| "-".into());
        let meaning = match *key {
            "post" => "the seed post a seed plan reproduces (plans/seeds/; no flag)".to_string(),
            k => said(k),
        };
        let _ = writeln!(
            o,
            "| `{key}` | {flag} | {} | {} |",
            default.replace('|', "\\|"),
            meaning.replace('|', "\\|").replace('\n', " ")
        );
    }
    o
}

#[cfg(test)]
#[path = "settings_doc_tests.rs"]
mod tests;
