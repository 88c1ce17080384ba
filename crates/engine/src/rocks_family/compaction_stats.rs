//! RocksDB's per-level "Compaction Stats" table, as printed by the
//! `rocksdb.cfstats` property and by MyRocks' `SHOW ENGINE ROCKSDB STATUS`.

/// Parses the per-level "Compaction Stats" table of `rocksdb.cfstats`:
/// returns (level, column, value) for the columns `w_amp`, `write_gb`,
/// `read_gb` and `size_bytes`, levels `L0`…`Ln` and `Sum`.
pub fn parse(text: &str) -> Vec<(String, &'static str, f64)> {
    let mut out = Vec::new();
    let mut header: Option<Vec<&str>> = None;
    for line in text.lines() {
        let toks: Vec<&str> = line.split_whitespace().collect();
        if toks.first() == Some(&"Level") && toks.contains(&"W-Amp") {
            header = Some(toks);
            continue;
        }
        let Some(h) = &header else { continue };
        let Some(first) = toks.first() else {
            header = None;
            continue;
        };
        let is_level =
            (first.starts_with('L') && first[1..].parse::<u32>().is_ok()) || *first == "Sum";
        if !is_level {
            if first.starts_with("Int") || first.starts_with("**") {
                header = None;
            }
            continue;
        }
        // The Size column prints as two tokens ("12.5 MB"): shift later columns.
        let size_idx = h.iter().position(|c| *c == "Size").unwrap_or(2);
        let shift = usize::from(
            toks.get(size_idx + 1)
                .is_some_and(|u| matches!(*u, "B" | "KB" | "MB" | "GB" | "TB")),
        );
        if shift == 1 {
            let unit = match toks[size_idx + 1] {
                // RocksDB's human sizes are binary (BytesToHumanString).
                "KB" => 1024.0,
                "MB" => 1048576.0,
                "GB" => 1073741824.0,
                "TB" => 1099511627776.0,
                _ => 1.0,
            };
            if let Ok(v) = toks[size_idx].parse::<f64>() {
                out.push((first.to_string(), "size_bytes", v * unit));
            }
        }
        for (col, name) in [
            ("W-Amp", "w_amp"),
            ("Write(GB)", "write_gb"),
            ("Read(GB)", "read_gb"),
        ] {
            if let Some(ci) = h.iter().position(|c| *c == col) {
                let ti = if ci > size_idx { ci + shift } else { ci };
                if let Some(v) = toks.get(ti).and_then(|t| t.parse::<f64>().ok()) {
                    out.push((first.to_string(), name, v));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFSTATS: &str = "
** Compaction Stats [default] **
Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s) Wr(MB/s) Comp(sec) CompMergeCPU(sec) Comp(cnt) Avg(sec) KeyIn KeyDrop Rblob(GB) Wblob(GB)
------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------
  L0      2/0   30.39 MB   0.5      0.0     0.0      0.0       0.1      0.1       0.0   1.0      0.0     87.5      1.04              0.93         4    0.260       0      0       0.0       0.0
  L6      4/0   72.92 MB   0.0      0.2     0.1      0.1       0.2      0.1       0.0   2.3     99.1     94.1      1.74              1.60         1    1.740   2000K    45K       0.0       0.0
 Sum      6/0   103.31 MB   0.0      0.2     0.1      0.1       0.3      0.2       0.0   3.1     61.9     91.5      2.78              2.53         5    0.556   2000K    45K       0.0       0.0
 Int      0/0    0.00 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0   0.0      0.0      0.0      0.00              0.00         0    0.000       0      0       0.0       0.0
";

    #[test]
    fn parses_w_amp_per_level() {
        let v = parse(CFSTATS);
        let get = |l: &str, c: &str| v.iter().find(|(a, b, _)| a == l && *b == c).map(|x| x.2);
        assert_eq!(get("L0", "w_amp"), Some(1.0));
        assert_eq!(get("L6", "w_amp"), Some(2.3));
        assert_eq!(get("Sum", "w_amp"), Some(3.1));
        assert_eq!(get("Sum", "write_gb"), Some(0.3));
        assert_eq!(get("L6", "read_gb"), Some(0.2));
        assert_eq!(get("Int", "w_amp"), None);
        assert_eq!(get("L6", "size_bytes"), Some(72.92 * 1048576.0));
        assert_eq!(get("L0", "size_bytes"), Some(30.39 * 1048576.0));
    }
}
