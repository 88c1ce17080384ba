//! `ampbench model STRUCTURE [--KEY VALUE…]`: predicted amplification with
//! every term shown (see `crate::ampmodel`).

use std::io::Write;

use anyhow::Result;
use clap::Args;

use crate::ampmodel::{Inputs, Structure, predict, render};

/// Arguments of `ampbench model`; each input defaults to the seed's
/// example value for the structure.
#[derive(Args, Debug)]
pub struct ModelArgs {
    /// lsm-leveled, lsm-tiered, btree, cow-btree or log-structured.
    #[arg(value_parser = |s: &str| Structure::parse(s).map_err(|e| e.0))]
    structure: Structure,
    /// Logical bytes per row [default: 128].
    #[arg(long)]
    row: Option<f64>,
    /// Page or data block bytes [default: 4096].
    #[arg(long)]
    page: Option<f64>,
    /// B-Tree leaf fill factor, (0, 1] [default: 0.667].
    #[arg(long)]
    fill: Option<f64>,
    /// Rows changed in a page before it is written back [default: 1].
    #[arg(long)]
    changes: Option<f64>,
    /// Per-row metadata bytes (InnoDB: about 20) [default: 0].
    #[arg(long)]
    meta: Option<f64>,
    /// LSM levels including L0 (L0-L4 = 5) [default: 5].
    #[arg(long)]
    levels: Option<u32>,
    /// Database size (e.g. 1TB), with --memtable: sets --levels to
    /// 1 + ceil(log_fanout(db / memtable)).
    #[arg(long, value_parser = crate::units::parse_size)]
    db_size: Option<u64>,
    /// Memtable size (e.g. 64MB), with --db-size.
    #[arg(long, value_parser = crate::units::parse_size)]
    memtable: Option<u64>,
    /// Size ratio between adjacent levels or runs per tier [default: 10].
    #[arg(long)]
    fanout: Option<f64>,
    /// Measured write-amp per level below L1 [default: 7, the seed's].
    #[arg(long)]
    per_level: Option<f64>,
    /// Compression ratio, logical / stored [default: 1].
    #[arg(long)]
    compression: Option<f64>,
    /// The largest level's share of the data [default: 0.9 leveled, 0.5 tiered].
    #[arg(long)]
    max_share: Option<f64>,
    /// Compaction threshold t of a log-structured store [default: 0.25].
    #[arg(long)]
    threshold: Option<f64>,
    /// Rows a short range query returns [default: 10].
    #[arg(long)]
    range_rows: Option<f64>,
}

impl ModelArgs {
    /// The inputs: the seed's for the structure, with the given ones over them.
    pub fn inputs(&self) -> Result<Inputs, crate::UsageError> {
        let mut i = Inputs::seed(self.structure);
        let set = |v: Option<f64>, f: &mut f64| {
            if let Some(v) = v {
                *f = v;
            }
        };
        set(self.row, &mut i.row);
        set(self.page, &mut i.page);
        set(self.fill, &mut i.fill);
        set(self.changes, &mut i.changes);
        set(self.meta, &mut i.meta);
        set(self.fanout, &mut i.fanout);
        set(self.per_level, &mut i.per_level);
        set(self.compression, &mut i.compression);
        set(self.max_share, &mut i.max_share);
        set(self.threshold, &mut i.threshold);
        set(self.range_rows, &mut i.range_rows);
        if let Some(l) = self.levels {
            i.levels = l;
        }
        match (self.db_size, self.memtable) {
            (Some(db), Some(m)) if self.levels.is_none() => {
                if m == 0 || db < m {
                    return Err(crate::UsageError(format!(
                        "model: --db-size {db} must be at least --memtable {m} (bytes)"
                    )));
                }
                let steps = ((db as f64 / m as f64).ln() / i.fanout.ln())
                    .ceil()
                    .max(1.0);
                i.levels = 1 + steps as u32;
            }
            (Some(_), Some(_)) => {
                return Err(crate::UsageError(
                    "model: give --levels or --db-size with --memtable, not both".into(),
                ));
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(crate::UsageError(
                    "model: --db-size and --memtable go together".into(),
                ));
            }
            (None, None) => {}
        }
        Ok(i)
    }

    /// Prints the prediction.
    pub fn run(&self, out: &mut dyn Write) -> Result<()> {
        let i = self.inputs()?;
        let p = predict(self.structure, &i)?;
        write!(out, "{}", render(&p))?;
        Ok(())
    }
}
