//! MyRocks column-family options by their own name: `--set
//! mariadb-myrocks.compaction_pri=…` or `--sweep` of one goes into
//! `rocksdb_default_cf_options`, which MariaDB applies to every column
//! family.

/// RocksDB column-family options MyRocks takes by their own name
/// (`--set mariadb-myrocks.compaction_pri=…`, `--sweep`), routed into
/// `rocksdb_default_cf_options`.
pub const CF_OPTIONS: &[&str] = &[
    "compaction_pri",
    "compaction_style",
    "compression",
    "bottommost_compression",
    "level_compaction_dynamic_level_bytes",
    "write_buffer_size",
    "max_write_buffer_number",
    "min_write_buffer_number_to_merge",
    "target_file_size_base",
    "target_file_size_multiplier",
    "max_bytes_for_level_base",
    "max_bytes_for_level_multiplier",
    "num_levels",
    "level0_file_num_compaction_trigger",
    "level0_slowdown_writes_trigger",
    "level0_stop_writes_trigger",
    "optimize_filters_for_hits",
    "soft_pending_compaction_bytes_limit",
    "hard_pending_compaction_bytes_limit",
    "periodic_compaction_seconds",
    "ttl",
    "disable_auto_compactions",
];

/// Moves [`CF_OPTIONS`] keys into `rocksdb_default_cf_options`, after
/// what it already holds.
pub fn route(settings: &mut Vec<(String, String)>) {
    let mut cf: Vec<String> = Vec::new();
    settings.retain(|(k, v)| {
        if CF_OPTIONS.contains(&k.as_str()) {
            cf.push(format!("{k}={v}"));
            false
        } else {
            true
        }
    });
    if cf.is_empty() {
        return;
    }
    match settings
        .iter_mut()
        .find(|(k, _)| k == "rocksdb_default_cf_options")
    {
        Some(e) => e.1 = format!("{};{}", e.1.trim_end_matches(';'), cf.join(";")),
        None => settings.push(("rocksdb_default_cf_options".into(), cf.join(";"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_family_options_go_to_default_cf_options() {
        let mut s = vec![
            (
                "rocksdb_default_cf_options".to_string(),
                "write_buffer_size=8m;".to_string(),
            ),
            (
                "compaction_pri".to_string(),
                "kMinOverlappingRatio".to_string(),
            ),
            ("max_connections".to_string(), "500".to_string()),
        ];
        route(&mut s);
        assert_eq!(
            s,
            vec![
                (
                    "rocksdb_default_cf_options".to_string(),
                    "write_buffer_size=8m;compaction_pri=kMinOverlappingRatio".to_string()
                ),
                ("max_connections".to_string(), "500".to_string()),
            ]
        );
        let mut t = vec![("ttl".to_string(), "0".to_string())];
        route(&mut t);
        assert_eq!(
            t,
            vec![(
                "rocksdb_default_cf_options".to_string(),
                "ttl=0".to_string()
            )]
        );
    }
}
