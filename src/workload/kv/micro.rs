//! db_bench-style steps with db_bench's defaults, so the same data set can be
//! measured by Debian's db_bench and by ampbench side by side
//! (`bench/vs-db_bench.sh`).
//!
//! Keys are db_bench's: the key number as 8 big-endian bytes, padded with
//! `'0'` to `key_size` (16). Values are `value_size` (100) bytes, half
//! random (fresh per value) and half filler (compression ratio 0.5).
//!
//! | step | work |
//! |---|---|
//! | `fillseq` | `num` puts in key order, no sync, 1 thread |
//! | `fillrandom` | `num` puts of keys drawn uniformly with replacement (so ~63% of the key space exists after it, as in db_bench), 1 thread |
//! | `overwrite` | puts of random keys for `--duration`, `--threads` threads |
//! | `readrandom` | gets of random keys; `found_pct` reports the share found |
//! | `readwhilewriting` | readers plus one writer limited to `writer_bytes_per_sec` |
//! | `seekrandom` | seek to a random key, then `seek_nexts` (20) nexts |

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, bail};

use super::data::{Live, ValueGen};
use super::store::{DocStore, docs_store};
use crate::driver::{Background, Done, StepSpec, Worker, WorkerFactory};
use crate::engine::{Durability, EngineRef};
use crate::rng::{Rng, derive_seed};
use crate::workload::{ParamDef, Params, Planned, StepCtx, Workload};

/// The steps, in order.
pub const STEPS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readwhilewriting",
    "seekrandom",
];

/// Parameters and defaults (db_bench's, but `num`).
pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        key: "num",
        default: "200000",
        help: "number of keys (db_bench --num)",
    },
    ParamDef {
        key: "key_size",
        default: "16",
        help: "key bytes (db_bench --key_size, >= 8)",
    },
    ParamDef {
        key: "value_size",
        default: "100",
        help: "value bytes (db_bench --value_size)",
    },
    ParamDef {
        key: "compression_ratio",
        default: "0.5",
        help: "compressed/raw size of values (db_bench --compression_ratio)",
    },
    ParamDef {
        key: "seek_nexts",
        default: "20",
        help: "nexts after each seek in seekrandom",
    },
    ParamDef {
        key: "writer_bytes_per_sec",
        default: "2097152",
        help: "readwhilewriting writer's limit, bytes/s of key+value",
    },
    ParamDef {
        key: "sync",
        default: "false",
        help: "sync every write (db_bench --sync)",
    },
];

/// The micro workload's state for one engine.
pub struct Micro {
    num: u64,
    key_size: usize,
    values: ValueGen,
    seek_nexts: usize,
    writer_bps: f64,
    sync: Durability,
    live: Live,
    reads: AtomicU64,
    found: AtomicU64,
}

impl Micro {
    /// Reads parameters.
    pub fn new(p: &Params) -> Result<Micro> {
        let num = p.u64("num")?;
        let key_size = p.u64("key_size")? as usize;
        if num == 0 || key_size < 8 {
            bail!(crate::UsageError(
                "parameters 'num' >= 1 and 'key_size' >= 8 are required".into()
            ));
        }
        let ratio = p.f64("compression_ratio")?;
        Ok(Micro {
            num,
            key_size,
            values: ValueGen {
                median: p.f64("value_size")?,
                sd: 0.0,
                compressibility: (1.0 - ratio.clamp(0.0, 1.0)) * 100.0,
            },
            seek_nexts: p.u64("seek_nexts")? as usize,
            writer_bps: p.f64("writer_bytes_per_sec")?,
            sync: Durability::from_sync(p.bool("sync")?),
            live: Live::fixed(num, key_size as u64 + p.f64("value_size")?.max(1.0) as u64),
            reads: AtomicU64::new(0),
            found: AtomicU64::new(0),
        })
    }

    /// db_bench's key for number `k`.
    pub fn key(&self, k: u64, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&k.to_be_bytes());
        out.resize(self.key_size, b'0');
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Seq { next: u64, end: u64 },
    RandomFill { left: u64 },
    Write,
    Read,
    Seek,
}

struct MicroWorker<'a> {
    wl: &'a Micro,
    store: Box<dyn DocStore + 'a>,
    rng: Rng,
    mode: Mode,
    key: Vec<u8>,
    value: Vec<u8>,
    /// Gets done and found, kept here and added to the workload's totals
    /// when the worker is dropped (no shared counter touched per get).
    reads: u64,
    found: u64,
}

impl Drop for MicroWorker<'_> {
    fn drop(&mut self) {
        self.wl.reads.fetch_add(self.reads, Ordering::Relaxed);
        self.wl.found.fetch_add(self.found, Ordering::Relaxed);
    }
}

impl MicroWorker<'_> {
    fn put(&mut self, k: u64) -> Result<Done> {
        let wl = self.wl;
        wl.key(k, &mut self.key);
        wl.values.fill(&mut self.rng, &mut self.value);
        self.store.write(&self.key, &self.value, wl.sync)?;
        let b = (self.key.len() + self.value.len()) as u64;
        wl.live.set(k, b);
        Ok(Done {
            kind: 0,
            ops: 1,
            written: b,
        })
    }
}

impl Worker for MicroWorker<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        let wl = self.wl;
        match &mut self.mode {
            Mode::Seq { next, end } => {
                if *next >= *end {
                    return Ok(None);
                }
                let k = *next;
                *next += 1;
                self.put(k).map(Some)
            }
            Mode::RandomFill { left } => {
                if *left == 0 {
                    return Ok(None);
                }
                *left -= 1;
                let k = self.rng.below(wl.num);
                self.put(k).map(Some)
            }
            Mode::Write => {
                let k = self.rng.below(wl.num);
                self.put(k).map(Some)
            }
            Mode::Read => {
                let k = self.rng.below(wl.num);
                wl.key(k, &mut self.key);
                let hit = self.store.read(&self.key)?.is_some();
                self.reads += 1;
                self.found += u64::from(hit);
                Ok(Some(Done {
                    kind: 0,
                    ops: 1,
                    written: 0,
                }))
            }
            Mode::Seek => {
                let k = self.rng.below(wl.num);
                wl.key(k, &mut self.key);
                self.store.scan(&self.key, wl.seek_nexts + 1)?;
                Ok(Some(Done {
                    kind: 0,
                    ops: 1,
                    written: 0,
                }))
            }
        }
    }
}

impl Workload for Micro {
    fn tables(&self) -> Vec<String> {
        vec!["docs".into()]
    }

    fn plan<'a>(&'a self, step: &str, engine: EngineRef<'a>, ctx: &StepCtx) -> Result<Planned<'a>> {
        let (mode, op, threads, fill) = match step {
            "fillseq" => (Mode::Seq { next: 0, end: 0 }, "put", 1, true),
            "fillrandom" => (Mode::RandomFill { left: self.num }, "put", 1, true),
            "overwrite" => (Mode::Write, "put", ctx.threads, false),
            "readrandom" | "readwhilewriting" => (Mode::Read, "get", ctx.threads, false),
            "seekrandom" => (Mode::Seek, "seek", ctx.threads, false),
            _ => bail!(crate::UsageError(format!(
                "unknown step '{step}' for workload micro (steps: {})",
                STEPS.join(", ")
            ))),
        };
        let writer = step == "readwhilewriting";
        let per_put = (self.key_size as f64 + self.values.median).max(1.0);
        let spec = StepSpec {
            background: writer.then(|| Background {
                per_sec: self.writer_bps / per_put,
                op_names: vec!["put".into()],
            }),
            ..ctx.spec(threads, vec![op.to_string()], fill)
        };
        let seed = ctx.seed;
        let num = self.num;
        let make = move |i: usize, mode: Mode, salt: u64| -> Result<MicroWorker<'a>> {
            let mode = match mode {
                Mode::Seq { .. } => Mode::Seq { next: 0, end: num },
                m => m,
            };
            Ok(MicroWorker {
                wl: self,
                store: docs_store(engine, "docs")?,
                rng: Rng::new(derive_seed(seed, &[salt, i as u64])),
                mode,
                key: Vec::new(),
                value: Vec::new(),
                reads: 0,
                found: 0,
            })
        };
        let fg = Box::new(move |i: usize| -> Result<Box<dyn Worker + 'a>> {
            Ok(Box::new(make(i, mode, 0)?))
        });
        let bg: Option<Box<WorkerFactory<'a>>> = if writer {
            Some(Box::new(move |i: usize| -> Result<Box<dyn Worker + 'a>> {
                Ok(Box::new(make(i, Mode::Write, 1)?))
            }))
        } else {
            None
        };
        Ok(Planned { spec, fg, bg })
    }

    fn live_bytes(&self) -> u64 {
        self.live.total()
    }

    fn extras(&self, _step: &str) -> Vec<(String, f64)> {
        let r = self.reads.swap(0, Ordering::Relaxed);
        let f = self.found.swap(0, Ordering::Relaxed);
        if r == 0 {
            return Vec::new();
        }
        vec![("found_pct".into(), 100.0 * f as f64 / r as f64)]
    }
}
