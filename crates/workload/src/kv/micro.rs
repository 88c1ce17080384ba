//! db_bench-style steps with db_bench's defaults, so the same data set can be
//! measured by Debian's db_bench and by ampbench side by side
//! (`bench/vs-db_bench.sh`).
//!
//! Keys are db_bench's: the key number as 8 big-endian bytes, padded with
//! `'0'` to `key_size` (16). Values are db_bench's too: `value_size` (100)
//! bytes taken in turn from a 1 MiB buffer of 100-byte pieces, each half
//! random bytes repeated (compression ratio 0.5); see [`ValuePool`].
//!
//! | step | work |
//! |---|---|
//! | `fillseq` | `num` puts in key order, no sync, 1 thread |
//! | `fillrandom` | `num` puts of keys drawn uniformly with replacement (so ~63% of the key space exists after it, as in db_bench), 1 thread |
//! | `overwrite` | puts of random keys for `--duration`, `--threads` threads |
//! | `readrandom` | gets of random keys; `found_pct` reports the share found |
//! | `readwhilewriting` | readers plus one writer limited to `writer_bytes_per_sec` |
//! | `seekrandom` | seek to a random key, then `seek_nexts` (20) nexts |
//!
//! The read steps run for `--duration`, or, with `-p reads=N` (db_bench
//! `--reads`), exactly N operations per thread with no warm-up.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, bail};

use super::data::{Live, ValuePool};
use super::docs_store;
use super::store::DocStore;
use crate::driver::{Background, Done, StepSpec, Worker, WorkerFactory};
use crate::engine::{Durability, EngineRef};
use crate::rng::{Rng, derive_seed};
use crate::{ParamDef, Params, Planned, StepCtx, StepKind, TypedWorkload};

crate::named! {
    /// The micro workload's steps, in run order (db_bench's names).
    pub enum MicroStep: "micro step" {
        /// `num` puts in key order, one thread.
        Fillseq = "fillseq",
        /// `num` puts of keys drawn with replacement, one thread.
        Fillrandom = "fillrandom",
        /// Puts of random keys for `--duration`.
        Overwrite = "overwrite",
        /// Gets of random keys.
        Readrandom = "readrandom",
        /// Gets, plus one rate-limited writer.
        Readwhilewriting = "readwhilewriting",
        /// A seek then `seek_nexts` nexts.
        Seekrandom = "seekrandom",
    }
}

impl StepKind for MicroStep {
    fn loads(self) -> bool {
        matches!(self, MicroStep::Fillseq | MicroStep::Fillrandom)
    }
    fn needs_data(self) -> bool {
        matches!(
            self,
            MicroStep::Readrandom | MicroStep::Readwhilewriting | MicroStep::Seekrandom
        )
    }
    fn concurrent(self) -> bool {
        matches!(
            self,
            MicroStep::Overwrite
                | MicroStep::Readrandom
                | MicroStep::Readwhilewriting
                | MicroStep::Seekrandom
        )
    }
}

crate::named! {
    /// The micro workload's operation kinds.
    pub enum MicroOp: "micro operation" {
        /// One put.
        Put = "put",
        /// One get.
        Get = "get",
        /// One seek and its nexts.
        Seek = "seek",
    }
}

/// Every operation kind's name, in [`MicroOp`] order.
fn op_names() -> Vec<String> {
    MicroOp::names().into_iter().map(String::from).collect()
}

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
        key: "reads",
        default: "0",
        help: "gets (or seeks) per thread in readrandom, readwhilewriting and seekrandom, then stop; 0 = for --duration (db_bench --reads)",
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
    value_size: usize,
    values: ValuePool,
    seek_nexts: usize,
    reads_per_thread: u64,
    writer_bps: f64,
    sync: Durability,
    live: Live,
    reads: AtomicU64,
    found: AtomicU64,
    /// Retries after conflicts on a SQL engine, per operation.
    retries: super::sql::Retries,
}

impl Micro {
    /// Reads parameters.
    pub fn new(p: &Params) -> Result<Micro> {
        let num = p.u64("num")?;
        Live::check_room("num", num, 1)?;
        let key_size = p.u64("key_size")? as usize;
        if num == 0 || key_size < 8 {
            bail!(crate::UsageError(
                "parameters 'num' >= 1 and 'key_size' >= 8 are required".into()
            ));
        }
        let ratio = p.f64("compression_ratio")?;
        let value_size = p.u64("value_size")? as usize;
        Ok(Micro {
            retries: Default::default(),
            num,
            key_size,
            value_size,
            values: ValuePool::new(value_size, ratio),
            seek_nexts: p.u64("seek_nexts")? as usize,
            reads_per_thread: p.u64("reads")?,
            writer_bps: p.f64("writer_bytes_per_sec")?,
            sync: Durability::from_sync(p.bool("sync")?),
            live: Live::fixed(num, (key_size + value_size) as u64),
            reads: AtomicU64::new(0),
            found: AtomicU64::new(0),
        })
    }

    /// db_bench's key for number `k`.
    pub fn key(&self, k: u64, out: &mut Vec<u8>) {
        // The padding is written once: later keys of the same size only
        // replace the number.
        if out.len() != self.key_size {
            out.clear();
            out.resize(self.key_size, b'0');
        }
        out[..8].copy_from_slice(&k.to_be_bytes());
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Seq {
        next: u64,
        end: u64,
    },
    RandomFill {
        left: u64,
    },
    Write,
    /// Gets; `left` counts down (`u64::MAX`: until the step's time is up).
    Read {
        left: u64,
    },
    /// Seeks, counted down as reads.
    Seek {
        left: u64,
    },
}

struct MicroWorker<'a> {
    wl: &'a Micro,
    store: Box<dyn DocStore + 'a>,
    rng: Rng,
    mode: Mode,
    key: Vec<u8>,
    /// Where this worker's next value starts in the pool.
    value_pos: usize,
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
        let value = wl.values.next(&mut self.value_pos, wl.value_size);
        self.store.write(&self.key, value, wl.sync)?;
        let b = (self.key.len() + value.len()) as u64;
        wl.live.set(k, b);
        Ok(Done {
            kind: MicroOp::Put.index(),
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
            Mode::Read { left } => {
                if *left == 0 {
                    return Ok(None);
                }
                *left = left.saturating_sub(u64::from(*left != u64::MAX));
                let k = self.rng.below(wl.num);
                wl.key(k, &mut self.key);
                let hit = self.store.read(&self.key)?.is_some();
                self.reads += 1;
                self.found += u64::from(hit);
                Ok(Some(Done {
                    kind: MicroOp::Get.index(),
                    ops: 1,
                    written: 0,
                }))
            }
            Mode::Seek { left } => {
                if *left == 0 {
                    return Ok(None);
                }
                *left = left.saturating_sub(u64::from(*left != u64::MAX));
                let k = self.rng.below(wl.num);
                wl.key(k, &mut self.key);
                self.store.scan(&self.key, wl.seek_nexts + 1)?;
                Ok(Some(Done {
                    kind: MicroOp::Seek.index(),
                    ops: 1,
                    written: 0,
                }))
            }
        }
    }
}

impl TypedWorkload for Micro {
    type Step = MicroStep;

    fn tables(&self) -> Vec<String> {
        vec!["docs".into()]
    }

    fn plan<'a>(
        &'a self,
        step: MicroStep,
        engine: EngineRef<'a>,
        ctx: &StepCtx,
    ) -> Result<Planned<'a>> {
        use MicroStep as S;
        // With `reads` set, a read step is counted like a fill: no warm-up,
        // closed loop, done when every thread has done its reads.
        let counted = self.reads_per_thread > 0;
        let left = if counted {
            self.reads_per_thread
        } else {
            u64::MAX
        };
        let (mode, threads, fill) = match step {
            S::Fillseq => (Mode::Seq { next: 0, end: 0 }, 1, true),
            S::Fillrandom => {
                // Each client puts its share of the random keys.
                let (a, b) = ctx.share.mine(self.num);
                (Mode::RandomFill { left: b - a }, 1, true)
            }
            S::Overwrite => (Mode::Write, ctx.threads, false),
            S::Readrandom | S::Readwhilewriting => (Mode::Read { left }, ctx.threads, counted),
            S::Seekrandom => (Mode::Seek { left }, ctx.threads, counted),
        };
        let writer = step == S::Readwhilewriting;
        let per_put = (self.key_size + self.value_size).max(1) as f64;
        let spec = StepSpec {
            background: writer.then(|| Background {
                per_sec: self.writer_bps / per_put,
                catch_up: true,
                op_names: op_names(),
            }),
            ..ctx.spec(threads, op_names(), fill)
        };
        let seed = ctx.seed;
        let num = self.num;
        let share = ctx.share;
        let make = move |i: usize, mode: Mode, salt: u64| -> Result<MicroWorker<'a>> {
            let mode = match mode {
                Mode::Seq { .. } => {
                    let (next, end) = share.mine(num);
                    Mode::Seq { next, end }
                }
                m => m,
            };
            Ok(MicroWorker {
                wl: self,
                store: docs_store(engine, "docs", &self.retries)?,
                rng: Rng::new(derive_seed(seed, &[salt, i as u64])),
                mode,
                key: Vec::new(),
                value_pos: 0,
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

    fn live_rows(&self) -> Option<u64> {
        Some(self.live.count())
    }

    fn discard(&self, step: MicroStep) {
        // The retries too: `finish` takes them with the figures.
        let _ = self.retries.notes(self.figures(step));
    }

    fn finish(&self, step: MicroStep, _engine: EngineRef<'_>) -> Result<crate::StepNotes> {
        Ok(self.retries.notes(self.figures(step)))
    }

    fn figures(&self, _step: MicroStep) -> Vec<(String, f64)> {
        let r = self.reads.swap(0, Ordering::Relaxed);
        let f = self.found.swap(0, Ordering::Relaxed);
        if r == 0 {
            return Vec::new();
        }
        vec![("found_pct".into(), 100.0 * f as f64 / r as f64)]
    }
}
