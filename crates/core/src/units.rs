//! Units at the bottom of the pipeline: sizes (`256MB`) and durations
//! (`90s`, `30m`, `6h`) as people write them, parsed and shown the same
//! way by the flags, plans, reports and the crash check.

/// The longest any time setting may be: a year (a step is timed in
/// nanoseconds, and nothing ampbench runs is longer).
pub const MAX_SECS: f64 = 366.0 * 86400.0;
/// Parses a size: a number with an optional unit B, KB, MB, GB, TB (powers
/// of 1024; `K`, `M`, `G`, `KiB`… accepted too).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 256MB)"))?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        _ => return Err(format!("'{s}': unknown size unit '{unit}'")),
    };
    Ok((n * mult as f64) as u64)
}

/// Formats bytes as the largest whole unit (`256MB`), for engine configs.
pub fn format_size(bytes: u64) -> String {
    for (unit, m) in [("GB", 1u64 << 30), ("MB", 1 << 20), ("KB", 1 << 10)] {
        if bytes >= m && bytes % m == 0 {
            return format!("{}{unit}", bytes / m);
        }
    }
    format!("{bytes}B")
}

/// Parses a duration: seconds (`90`, `1.5`) or a number with a unit
/// (`500ms`, `90s`, `30m`, `6h`); the error names the value.
pub fn parse_secs(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * scale)
        .filter(|v| v.is_finite())
        .ok_or_else(|| {
            format!("'{s}': expected seconds or a number with ms, s, m or h (90s, 30m, 6h)")
        })
}

/// A duration as a person writes it: `90s`, `30m`, `6h`, `1.5h`.
pub fn show_secs(v: f64) -> String {
    let trim = |x: f64| {
        let t = format!("{x:.2}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if v >= 3600.0 && (v / 3600.0 * 100.0).fract() == 0.0 {
        format!("{}h", trim(v / 3600.0))
    } else if v >= 60.0 && (v / 60.0 * 100.0).fract() == 0.0 {
        format!("{}m", trim(v / 60.0))
    } else {
        format!("{}s", trim(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256MB").unwrap(), 256 << 20);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1.5KB").unwrap(), 1536);
        assert!(parse_size("12XB").is_err());
        assert!(parse_size("MB").is_err());
        assert_eq!(format_size(256 << 20), "256MB");
        assert_eq!(format_size(1 << 30), "1GB");
        assert_eq!(format_size(1000), "1000B");
    }

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_secs("90"), Ok(90.0));
        assert_eq!(parse_secs("1.5"), Ok(1.5));
        assert_eq!(parse_secs("500ms"), Ok(0.5));
        assert_eq!(parse_secs("90s"), Ok(90.0));
        assert_eq!(parse_secs("30m"), Ok(1800.0));
        assert_eq!(parse_secs("6h"), Ok(21600.0));
        assert!(parse_secs("6d").unwrap_err().contains("'6d'"));
        assert!(parse_secs("h").is_err());
    }

    #[test]
    fn durations_show_with_their_unit() {
        assert_eq!(show_secs(3600.0), "1h");
        assert_eq!(show_secs(5400.0), "1.5h");
        assert_eq!(show_secs(60.0), "1m");
        assert_eq!(show_secs(90.0), "1.5m");
        assert_eq!(show_secs(45.0), "45s");
        assert_eq!(show_secs(0.5), "0.5s");
    }
}
