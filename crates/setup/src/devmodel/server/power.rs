//! The server's power thread: carries out the run's power cuts and
//! power-ons (see `crashcheck --power-cut` and `medium.rs`).

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use super::{Model, Shared, now};

impl Shared {
    /// Carries out the run's power requests until the process ends: an
    /// odd request cuts the power (the writes a volatile cache still
    /// holds are dropped, every IO fails), an even one brings it back
    /// (an empty cache, the same parameters).
    pub(super) fn power_loop(&self) {
        let c = self.counters.get();
        loop {
            std::thread::sleep(Duration::from_millis(1));
            let req = c.power_req.load(SeqCst);
            if req == c.power_done.load(SeqCst) {
                continue;
            }
            let mut m = self.model.lock().unwrap_or_else(|e| e.into_inner());
            if req % 2 == 1 {
                self.off.store(true, SeqCst);
                self.epoch.fetch_add(1, SeqCst);
                m.settle(now());
                if let Some(sh) = &self.shadow {
                    let mut sh = sh.lock().unwrap_or_else(|e| e.into_inner());
                    sh.refresh(&mut m, &self.file, self.size);
                    match sh.cut(&m, &self.file, self.size) {
                        Ok(n) => {
                            c.power_dropped.fetch_add(n, SeqCst);
                        }
                        Err(_) => {
                            c.errors.fetch_add(1, SeqCst);
                        }
                    }
                }
            } else {
                let mut fresh = Model::new(
                    *m.params(),
                    crate::rng::derive_seed(self.seed, &[u64::MAX, req]),
                );
                (fresh.medium_reads, fresh.medium_writes) = (m.medium_reads, m.medium_writes);
                fresh.dirty_byte_ns = m.dirty_byte_ns;
                if self.shadow.is_some() {
                    fresh.track_refresh();
                }
                *m = fresh;
                if let Some(sh) = &self.shadow {
                    sh.lock().unwrap_or_else(|e| e.into_inner()).clear();
                }
                self.off.store(false, SeqCst);
            }
            c.power_done.store(req, SeqCst);
        }
    }
}
