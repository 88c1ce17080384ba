//! YCSB's core workloads A–F after a load, over the document store.
//!
//! A record is `fieldcount` (10) fields of `fieldlength` (100) random bytes,
//! stored as one value; the key is `user` followed by a hash of the record
//! number. Over a KV store an update of one field is a read, a change of
//! that field and a write of the record (as YCSB's RocksDB binding does).
//!
//! | step | mix | key choice |
//! |---|---|---|
//! | `load` | insert every record | in order |
//! | `a` | 50% read, 50% update | zipfian |
//! | `b` | 95% read, 5% update | zipfian |
//! | `c` | 100% read | zipfian |
//! | `d` | 95% read, 5% insert | latest |
//! | `e` | 95% scan (length uniform 1–`maxscanlength`), 5% insert | zipfian |
//! | `f` | 50% read, 50% read-modify-write | zipfian |
//!
//! `requestdistribution` overrides zipfian (not D's latest). Inserts in D
//! and E add new records up to twice `recordcount`; past that they update.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, bail};

use super::data::Live;
use super::docs_store;
use super::store::DocStore;
use crate::dist::{Distribution, KeyChooser, scramble};
use crate::driver::{Done, Worker};
use crate::engine::{Durability, EngineRef};
use crate::rng::{Rng, derive_seed};
use crate::{ParamDef, Params, Planned, StepCtx, StepKind, TypedWorkload};

crate::named! {
    /// YCSB's steps, in run order: the load, then the core workloads.
    pub enum YcsbStep: "ycsb step" {
        /// Insert every record.
        Load = "load",
        /// 50% read, 50% update.
        A = "a",
        /// 95% read, 5% update.
        B = "b",
        /// 100% read.
        C = "c",
        /// 95% read, 5% insert, latest.
        D = "d",
        /// 95% scan, 5% insert.
        E = "e",
        /// 50% read, 50% read-modify-write.
        F = "f",
    }
}

impl StepKind for YcsbStep {
    fn loads(self) -> bool {
        self == YcsbStep::Load
    }
    fn needs_data(self) -> bool {
        self != YcsbStep::Load
    }
    fn concurrent(self) -> bool {
        self != YcsbStep::Load
    }
}

/// Parameters and defaults (YCSB's names).
pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        key: "recordcount",
        default: "100000",
        help: "records loaded",
    },
    ParamDef {
        key: "fieldcount",
        default: "10",
        help: "fields per record",
    },
    ParamDef {
        key: "fieldlength",
        default: "100",
        help: "bytes per field",
    },
    ParamDef {
        key: "requestdistribution",
        default: "zipfian",
        help: "zipfian, uniform or latest (D always uses latest)",
    },
    ParamDef {
        key: "zipf_theta",
        default: "0.99",
        help: "zipfian exponent",
    },
    ParamDef {
        key: "maxscanlength",
        default: "100",
        help: "longest scan in E",
    },
];

crate::named! {
    /// YCSB's operation kinds.
    pub enum YcsbOp: "ycsb operation" {
        /// Read a record.
        Read = "read",
        /// Update one field (read, change, write).
        Update = "update",
        /// Insert a new record.
        Insert = "insert",
        /// Scan up to `maxscanlength` records.
        Scan = "scan",
        /// Read a record, then update one field of it.
        ReadModifyWrite = "read_modify_write",
    }
}

/// A workload's mix: probability per kind, in [`YcsbOp`] order; `None`
/// for the load.
pub fn mix(step: YcsbStep) -> Option<[f64; 5]> {
    Some(match step {
        YcsbStep::Load => return None,
        YcsbStep::A => [0.5, 0.5, 0.0, 0.0, 0.0],
        YcsbStep::B => [0.95, 0.05, 0.0, 0.0, 0.0],
        YcsbStep::C => [1.0, 0.0, 0.0, 0.0, 0.0],
        YcsbStep::D => [0.95, 0.0, 0.05, 0.0, 0.0],
        YcsbStep::E => [0.0, 0.0, 0.05, 0.95, 0.0],
        YcsbStep::F => [0.5, 0.0, 0.0, 0.0, 0.5],
    })
}

/// Draws an operation kind from a mix.
pub fn choose(m: &[f64; 5], r: &mut Rng) -> YcsbOp {
    let u = r.f64();
    let mut acc = 0.0;
    for (op, p) in YcsbOp::ALL.iter().zip(m) {
        acc += p;
        if u < acc {
            return *op;
        }
    }
    m.iter()
        .rposition(|p| *p > 0.0)
        .map_or(YcsbOp::Read, |i| YcsbOp::ALL[i])
}

/// The YCSB workload's state for one engine.
pub struct Ycsb {
    records: u64,
    fields: usize,
    field_len: usize,
    dist: Distribution,
    theta: f64,
    max_scan: u64,
    /// Records readers may choose from: every insert below it has completed
    /// (YCSB's acknowledged counter), so a read never looks for a record
    /// still being inserted.
    count: AtomicU64,
    /// The next record number an insert takes.
    next: AtomicU64,
    /// The run's clients (`--clients`): records inserted after the load
    /// are interleaved between them, `client` of `clients`.
    share: std::sync::Mutex<crate::Share>,
    /// Inserts completed out of order, above `count`.
    pending: std::sync::Mutex<std::collections::BTreeSet<u64>>,
    live: Live,
    misses: AtomicU64,
    /// Retries after conflicts on a SQL engine, per operation.
    retries: super::sql::Retries,
}

impl Ycsb {
    /// Reads parameters.
    pub fn new(p: &Params) -> Result<Ycsb> {
        let records = p.u64("recordcount")?;
        Live::check_room("recordcount", records, 8)?;
        if records == 0 {
            bail!(crate::UsageError(
                "parameter 'recordcount' must be at least 1".into()
            ));
        }
        Ok(Ycsb {
            retries: Default::default(),
            records,
            fields: p.u64("fieldcount")?.max(1) as usize,
            field_len: p.u64("fieldlength")?.max(1) as usize,
            dist: p.one_of("requestdistribution", Distribution::ALL, Distribution::name)?,
            theta: p.f64("zipf_theta")?,
            max_scan: p.u64("maxscanlength")?.max(1),
            count: AtomicU64::new(0),
            next: AtomicU64::new(0),
            share: Default::default(),
            pending: Default::default(),
            live: Live::new(records * 2),
            misses: AtomicU64::new(0),
        })
    }

    /// The number of a record an insert adds: the next, or with several
    /// clients the next of this client's, interleaved with the others'
    /// above `recordcount`. With several clients, reads choose among the
    /// loaded records only (YCSB's clients do not know each other's
    /// inserts either; a client's own are not contiguous).
    fn new_record(&self) -> u64 {
        let j = self.next.fetch_add(1, Ordering::Relaxed);
        let s = *self.share.lock().unwrap_or_else(|p| p.into_inner());
        if s.clients <= 1 || j < self.records {
            return j;
        }
        self.records + (j - self.records) * s.clients as u64 + s.client as u64
    }

    /// Record `i` is written: advance the readable count past every
    /// contiguous completed insert. Inserts are 5% of D and E, so this
    /// lock is off the hot path.
    fn acknowledge(&self, i: u64) {
        if let Ok(mut p) = self.pending.lock() {
            p.insert(i);
            let mut c = self.count.load(Ordering::Relaxed);
            while p.remove(&c) {
                c += 1;
            }
            self.count.store(c, Ordering::Relaxed);
        }
    }

    fn key(i: u64, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(b"user");
        out.extend_from_slice(scramble(i).to_string().as_bytes());
    }
}

struct YcsbWorker<'a> {
    wl: &'a Ycsb,
    store: Box<dyn DocStore + 'a>,
    rng: Rng,
    mix: Option<[f64; 5]>,
    chooser: KeyChooser,
    load: (u64, u64),
    key: Vec<u8>,
    value: Vec<u8>,
}

impl YcsbWorker<'_> {
    fn write_record(&mut self, i: u64) -> Result<u64> {
        let wl = self.wl;
        Ycsb::key(i, &mut self.key);
        self.value.resize(wl.fields * wl.field_len, 0);
        self.rng.fill(&mut self.value);
        self.store
            .write(&self.key, &self.value, Durability::NoSync)?;
        let b = (self.key.len() + self.value.len()) as u64;
        wl.live.set(i, b);
        Ok(b)
    }

    fn update_field(&mut self, i: u64) -> Result<u64> {
        let wl = self.wl;
        Ycsb::key(i, &mut self.key);
        let mut v = match self.store.read_value(&self.key)? {
            Some(v) => v,
            None => {
                wl.misses.fetch_add(1, Ordering::Relaxed);
                vec![0u8; wl.fields * wl.field_len]
            }
        };
        let f = self.rng.below(wl.fields as u64) as usize * wl.field_len;
        let end = (f + wl.field_len).min(v.len());
        if f < end {
            self.rng.fill(&mut v[f..end]);
        }
        self.store.write(&self.key, &v, Durability::NoSync)?;
        let b = (self.key.len() + v.len()) as u64;
        wl.live.set(i, b);
        Ok(b)
    }
}

impl Worker for YcsbWorker<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        let wl = self.wl;
        let Some(m) = self.mix else {
            if self.load.0 >= self.load.1 {
                return Ok(None);
            }
            let i = self.load.0;
            self.load.0 += 1;
            let b = self.write_record(i)?;
            return Ok(Some(Done {
                kind: YcsbOp::Insert.index(),
                ops: 1,
                written: b,
            }));
        };
        let op = choose(&m, &mut self.rng);
        let count = wl.count.load(Ordering::Relaxed);
        let written = match op {
            YcsbOp::Read => {
                let i = self.chooser.pick(&mut self.rng, count);
                Ycsb::key(i, &mut self.key);
                if self.store.read(&self.key)?.is_none() {
                    wl.misses.fetch_add(1, Ordering::Relaxed);
                }
                0
            }
            YcsbOp::Update => {
                let i = self.chooser.pick(&mut self.rng, count);
                self.update_field(i)?
            }
            YcsbOp::Insert => {
                let i = wl.new_record();
                if i < wl.live.capacity() {
                    let b = self.write_record(i)?;
                    wl.acknowledge(i);
                    b
                } else {
                    let j = self.rng.below(count);
                    self.update_field(j)?
                }
            }
            YcsbOp::Scan => {
                let i = self.chooser.pick(&mut self.rng, count);
                Ycsb::key(i, &mut self.key);
                let len = self.rng.range_inclusive(1, wl.max_scan) as usize;
                self.store.scan(&self.key, len)?;
                0
            }
            YcsbOp::ReadModifyWrite => {
                let i = self.chooser.pick(&mut self.rng, count);
                self.update_field(i)?
            }
        };
        Ok(Some(Done {
            kind: op.index(),
            ops: 1,
            written,
        }))
    }
}

impl TypedWorkload for Ycsb {
    type Step = YcsbStep;

    fn tables(&self) -> Vec<String> {
        vec!["usertable".into()]
    }

    fn plan<'a>(
        &'a self,
        step: YcsbStep,
        engine: EngineRef<'a>,
        ctx: &StepCtx,
    ) -> Result<Planned<'a>> {
        let is_load = step.loads();
        let m = mix(step);
        if is_load {
            self.count.store(0, Ordering::Relaxed);
            self.next.store(0, Ordering::Relaxed);
        } else if self.count.load(Ordering::Relaxed) == 0 {
            bail!("ycsb step '{step}' needs the records loaded first: include the 'load' step");
        }
        let threads = ctx.threads;
        let spec = ctx.spec(
            threads,
            YcsbOp::names().into_iter().map(String::from).collect(),
            is_load,
        );
        let dist = if step == YcsbStep::D {
            Distribution::Latest
        } else {
            self.dist
        };
        let chooser = KeyChooser::new(dist, self.records, self.theta);
        let seed = ctx.seed;
        let records = self.records;
        let share = ctx.share;
        *self.share.lock().unwrap_or_else(|p| p.into_inner()) = share;
        let fg = Box::new(move |i: usize| -> Result<Box<dyn Worker + 'a>> {
            let load = share.part(records, threads, i);
            Ok(Box::new(YcsbWorker {
                wl: self,
                store: docs_store(engine, "usertable", &self.retries)?,
                rng: Rng::new(derive_seed(seed, &[0, i as u64])),
                mix: m,
                chooser: chooser.clone(),
                load,
                key: Vec::new(),
                value: Vec::new(),
            }))
        });
        Ok(Planned { spec, fg, bg: None })
    }

    fn live_bytes(&self) -> u64 {
        self.live.total()
    }

    fn live_rows(&self) -> Option<u64> {
        Some(self.live.count())
    }

    fn discard(&self, step: YcsbStep) {
        // The retries too: `finish` takes them with the figures.
        let _ = self.retries.notes(self.figures(step));
    }

    fn finish(&self, step: YcsbStep, _engine: EngineRef<'_>) -> Result<crate::StepNotes> {
        Ok(self.retries.notes(self.figures(step)))
    }

    fn figures(&self, step: YcsbStep) -> Vec<(String, f64)> {
        if step == YcsbStep::Load {
            self.count.store(self.records, Ordering::Relaxed);
            self.next.store(self.records, Ordering::Relaxed);
        }
        // Reads of records that should exist: reported only when they miss.
        let m = self.misses.swap(0, Ordering::Relaxed);
        if m == 0 {
            Vec::new()
        } else {
            vec![("misses".into(), m as f64)]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_match_their_definition_within_a_point() {
        for step in &YcsbStep::ALL[1..] {
            let m = mix(*step).unwrap();
            let mut r = Rng::new(11);
            let mut counts = [0u32; 5];
            let n = 100_000;
            for _ in 0..n {
                counts[choose(&m, &mut r).index()] += 1;
            }
            for k in 0..5 {
                let got = 100.0 * counts[k] as f64 / n as f64;
                assert!(
                    (got - 100.0 * m[k]).abs() < 1.0,
                    "{step} {}: {got:.2}% vs {}%",
                    YcsbOp::ALL[k],
                    100.0 * m[k]
                );
            }
        }
    }
}
