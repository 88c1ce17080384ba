//! An LSM tree's shape at a step's end, from the engine's compaction
//! statistics (`compaction.size_bytes.L<n>.<family>`): how many levels
//! below L0 its largest column family has, the fanout between its last
//! two levels, and the share of the family's bytes in its last level. A
//! seed plan states the post's shape in these figures (its regime) and a
//! verdict on compaction is judged only when the run reaches it: the
//! order in which files are picked matters when a row is rewritten once
//! per level over several levels, not in a tree one level below L1.

/// The largest column family's tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The column family (`default` for a single-family store).
    pub family: String,
    /// Levels below L0 that hold data.
    pub levels: u32,
    /// The last level's bytes over the level's above it (None with one
    /// level below L0).
    pub fanout: Option<f64>,
    /// The last level's share of the family's bytes, L0 included.
    pub last_share: f64,
    /// The family's bytes in every level.
    pub bytes: f64,
}

/// The shape of the largest column family in `stats` (the engine's
/// cumulative statistics at a step's end); None when the engine reports
/// no level sizes.
pub fn lsm_shape(stats: &[(String, f64)]) -> Option<Shape> {
    // family → (level, bytes)
    let mut fams: Vec<(&str, Vec<(u32, f64)>)> = Vec::new();
    for (k, v) in stats {
        let Some(rest) = k.strip_prefix("compaction.size_bytes.L") else {
            continue;
        };
        let Some((lvl, fam)) = rest.split_once('.') else {
            continue;
        };
        let Ok(lvl) = lvl.parse::<u32>() else {
            continue;
        };
        if *v <= 0.0 || fam == "__system__" {
            continue;
        }
        match fams.iter_mut().find(|(f, _)| *f == fam) {
            Some((_, l)) => l.push((lvl, *v)),
            None => fams.push((fam, vec![(lvl, *v)])),
        }
    }
    let total = |l: &[(u32, f64)]| l.iter().map(|x| x.1).sum::<f64>();
    let (fam, mut lv) = fams
        .into_iter()
        .max_by(|a, b| total(&a.1).total_cmp(&total(&b.1)))?;
    lv.sort_by_key(|x| x.0);
    let bytes = total(&lv);
    let below: Vec<f64> = lv.iter().filter(|x| x.0 > 0).map(|x| x.1).collect();
    let last = below.last().copied().unwrap_or(0.0);
    let above: f64 = below.iter().rev().skip(1).sum();
    Some(Shape {
        family: fam.to_string(),
        levels: below.len() as u32,
        fanout: (above > 0.0).then(|| last / above),
        last_share: if bytes > 0.0 { last / bytes } else { 0.0 },
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mb(k: &str, v: f64) -> (String, f64) {
        (k.to_string(), v * 1048576.0)
    }

    #[test]
    fn the_largest_family_gives_the_shape() {
        let stats = vec![
            mb("compaction.size_bytes.L0.link_pk", 4.0),
            mb("compaction.size_bytes.L4.link_pk", 4.0),
            mb("compaction.size_bytes.L5.link_pk", 36.0),
            mb("compaction.size_bytes.L6.link_pk", 356.0),
            mb("compaction.size_bytes.Sum.link_pk", 400.0),
            mb("compaction.size_bytes.L0.node_pk", 2.0),
            mb("compaction.size_bytes.L1.node_pk", 30.0),
            mb("compaction.size_bytes.L6.__system__", 900.0),
            mb("compaction.write_gb.L6.link_pk", 900.0),
        ];
        let s = lsm_shape(&stats).unwrap();
        assert_eq!(s.family, "link_pk");
        assert_eq!(s.levels, 3);
        // 356 / (4 + 36) and 356 / 400.
        assert!((s.fanout.unwrap() - 8.9).abs() < 1e-9);
        assert!((s.last_share - 0.89).abs() < 1e-9);
        assert!((s.bytes - 400.0 * 1048576.0).abs() < 1e-3);
    }

    #[test]
    fn one_level_has_no_fanout_and_none_without_sizes() {
        let s = lsm_shape(&[
            mb("compaction.size_bytes.L0.default", 1.0),
            mb("compaction.size_bytes.L1.default", 3.0),
        ])
        .unwrap();
        assert_eq!((s.levels, s.fanout), (1, None));
        assert!((s.last_share - 0.75).abs() < 1e-9);
        assert_eq!(lsm_shape(&[mb("cf.flush_bytes.default", 1.0)]), None);
    }
}
