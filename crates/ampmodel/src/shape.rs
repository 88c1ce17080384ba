//! An LSM tree's shape at a step's end, per column family, from the
//! engine's compaction statistics (`compaction.size_bytes.L<n>.<family>`):
//! how many levels below L0 hold data, whether an empty level lies
//! between them (a bulk load writes straight into the last level, so
//! its rows were never rewritten on the way down), the fanout between
//! the last two levels and the last level's share of the family's bytes.
//! A seed plan states the post's shape in these figures (its regime) and
//! a verdict on compaction is judged only when the run reaches it: the
//! order in which files are picked matters when a row is rewritten once
//! per level over several levels, not in a tree one level below L1.

/// One column family's tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The column family (`default` for a single-family store).
    pub family: String,
    /// Levels below L0 that hold data.
    pub levels: u32,
    /// Empty levels between the first and the last below L0 that hold
    /// data (0 in a tree compaction built).
    pub gaps: u32,
    /// The last level's bytes over the bytes of the level above it that
    /// holds data (None with one level below L0).
    pub fanout: Option<f64>,
    /// The last level's share of the family's bytes, L0 included.
    pub last_share: f64,
    /// The family's bytes in every level.
    pub bytes: f64,
    /// Each level holding data, L0 included, with its bytes.
    pub sizes: Vec<(u32, f64)>,
}

impl Shape {
    /// One line for a step's notes: the family, its levels with their
    /// sizes, the fanout and the last level's share.
    pub fn line(&self) -> String {
        let sizes: Vec<String> = self
            .sizes
            .iter()
            .map(|(l, b)| format!("L{l} {:.1}MB", b / 1048576.0))
            .collect();
        format!(
            "lsm shape at the step's end: {}, {} level{} below L0{} ({}), fanout {}, {:.0}% in the last level",
            self.family,
            self.levels,
            if self.levels == 1 { "" } else { "s" },
            match self.gaps {
                0 => String::new(),
                g => format!(" with {g} empty between them (a bulk load's)"),
            },
            sizes.join(", "),
            self.fanout.map_or("-".into(), |f| format!("{f:.1}")),
            self.last_share * 100.0
        )
    }
}

/// The shape of every column family in `stats` (the engine's cumulative
/// statistics at a step's end) that holds data, by name; empty when the
/// engine reports no level sizes.
pub fn lsm_shapes(stats: &[(String, f64)]) -> Vec<Shape> {
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
            Some((_, l)) => match l.iter_mut().find(|x| x.0 == lvl) {
                // A later snapshot of the same level replaces it.
                Some(x) => x.1 = *v,
                None => l.push((lvl, *v)),
            },
            None => fams.push((fam, vec![(lvl, *v)])),
        }
    }
    fams.sort_by(|a, b| a.0.cmp(b.0));
    fams.into_iter()
        .map(|(fam, mut lv)| {
            lv.sort_by_key(|x| x.0);
            let bytes: f64 = lv.iter().map(|x| x.1).sum();
            let below: Vec<(u32, f64)> = lv.iter().copied().filter(|x| x.0 > 0).collect();
            let last = below.last().map_or(0.0, |x| x.1);
            let gaps = match (below.first(), below.last()) {
                (Some(a), Some(b)) => b.0 - a.0 + 1 - below.len() as u32,
                _ => 0,
            };
            let above = below.len().checked_sub(2).map(|i| below[i].1);
            Shape {
                family: fam.to_string(),
                levels: below.len() as u32,
                gaps,
                fanout: above.filter(|a| *a > 0.0).map(|a| last / a),
                last_share: if bytes > 0.0 { last / bytes } else { 0.0 },
                bytes,
                sizes: lv,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mb(k: &str, v: f64) -> (String, f64) {
        (k.to_string(), v * 1048576.0)
    }

    #[test]
    fn each_family_has_its_shape() {
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
        let s = lsm_shapes(&stats);
        assert_eq!(s.len(), 2);
        let l = &s[0];
        assert_eq!((l.family.as_str(), l.levels, l.gaps), ("link_pk", 3, 0));
        // 356 / 36 and 356 / 400.
        assert!((l.fanout.unwrap() - 356.0 / 36.0).abs() < 1e-9);
        assert!((l.last_share - 0.89).abs() < 1e-9);
        assert!((l.bytes - 400.0 * 1048576.0).abs() < 1e-3);
        assert_eq!(
            l.line(),
            "lsm shape at the step's end: link_pk, 3 levels below L0 (L0 4.0MB, L4 4.0MB, L5 36.0MB, L6 356.0MB), fanout 9.9, 89% in the last level"
        );
        let n = &s[1];
        assert_eq!(
            (n.family.as_str(), n.levels, n.fanout),
            ("node_pk", 1, None)
        );
        assert!((n.last_share - 30.0 / 32.0).abs() < 1e-9);
    }

    #[test]
    fn a_bulk_loaded_last_level_is_a_gap_not_depth() {
        // MyRocks' index build writes the index's family into L6; the
        // requests' writes then fill L1 and L2 above it.
        let s = lsm_shapes(&[
            mb("compaction.size_bytes.L1.rev:id1_type", 3.3),
            mb("compaction.size_bytes.L2.rev:id1_type", 5.9),
            mb("compaction.size_bytes.L6.rev:id1_type", 79.8),
        ]);
        assert_eq!((s[0].levels, s[0].gaps), (3, 3));
        assert!(
            s[0].line().contains("with 3 empty between them"),
            "{}",
            s[0].line()
        );
        assert!(lsm_shapes(&[mb("cf.flush_bytes.default", 1.0)]).is_empty());
    }
}
