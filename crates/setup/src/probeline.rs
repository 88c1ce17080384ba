//! The class probe's line on the storage output: the probe's figures,
//! the model's CPU per IO and its QD1 error, and the warning when the
//! path to the model is too slow for it to be faithful.

use super::storage::Device;
use super::{devmodel, ioprobe};

/// A QD1 random 4 KiB read's time in the model: a positioning time and
/// a transfer, or the budget's gap between two IOs when that is longer,
/// µs.
fn qd1_read_us(p: &devmodel::Params) -> f64 {
    (p.read.mean_us + 4096.0 / p.unit_mbps)
        .max(1e6 / p.iops)
        .max(4096.0 / p.mbps)
}

/// Why the model cannot be faithful when the path alone takes more than
/// half a QD1 read of the model: the path's threads (the loop device's
/// worker, the caller) are in the normal class, and on a busy machine
/// their wait for a CPU is more than the device's own time.
pub(super) fn path_warning(p: &devmodel::Params, path_us: f64) -> Option<String> {
    let want = qd1_read_us(p);
    (!p.is_transparent() && path_us > want / 2.0).then(|| format!(
        "the path alone takes {path_us:.0} µs, more than half the model's {want:.0} µs per QD1 read: this machine is too busy for the model to be faithful (the path's threads wait for CPU), so latencies are the path's, not the class's"
    ))
}

/// The class probe on the device as it is throttled now: a line for the
/// console and the value recorded (the figures, or why not measured).
pub(super) fn probe(dev: &Device, secs: f64, full: bool) -> (String, serde_json::Value) {
    let model = dev.model.as_ref();
    let before = model.map(|m| (m.counters.snapshot(), m.cpu_secs()));
    match ioprobe::measure(
        &dev.mount,
        &dev.name(),
        secs,
        full,
        model.map(|m| &m.counters),
    ) {
        Ok(m) => {
            let mut line = m.show();
            let mut value = serde_json::to_value(m).unwrap_or_default();
            if let (Some(model), Some((b, cpu0))) = (model, before) {
                let d = model.counters.snapshot().since(&b);
                let cpu = cpu0.zip(model.cpu_secs()).map(|(a, b)| b - a);
                if let (Some(cpu), true) = (cpu, d.ios() > 0) {
                    let us = cpu * 1e6 / d.ios() as f64;
                    line.push_str(&format!(
                        "; the model's CPU {us:.1} µs per IO over {} IOs",
                        d.ios()
                    ));
                    value["model_cpu_us_per_io"] = us.into();
                    // The floor a loop that sleeps once per IO cannot go
                    // under here (issue 48).
                    if let Some(w) = devmodel::server::sleep_cost_us(1000) {
                        line.push_str(&format!(" (one timed sleep costs {w:.1} µs of CPU here)"));
                        value["sleep_cpu_us"] = w.into();
                    }
                }
                value["model_counters"] = serde_json::to_value(&d).unwrap_or_default();
                let p = &model.params;
                if !p.is_transparent() {
                    // QD1 random reads: the model means a positioning time
                    // and a 4 KiB transfer, or the budget's gap between
                    // two IOs when that is longer; the path's time is
                    // taken off.
                    let want = qd1_read_us(p);
                    let got = m.read_qd1.mean_us;
                    let err = got / want - 1.0;
                    line.push_str(&format!(
                        "; QD1 reads took {got:.0} µs against the model's {want:.0} µs ({:+.1}%)",
                        err * 100.0
                    ));
                    value["model_qd1_want_us"] = want.into();
                    value["model_qd1_error"] = err.into();
                }
            }
            (line, value)
        }
        Err(e) => (
            format!("not measured: {e:#}"),
            format!("not measured: {e:#}").into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageClass;

    #[test]
    fn a_path_longer_than_half_a_qd1_read_is_named() {
        let p = StorageClass::SlowSsd.model().expect("slow-ssd is modelled");
        // 250 µs positioning + 4 KiB at the unit's rate: 270 µs or so.
        let want = qd1_read_us(&p);
        assert!((260.0..=280.0).contains(&want), "{want}");
        assert_eq!(path_warning(&p, 50.0), None);
        let w = path_warning(&p, 4934.0).expect("a warning");
        assert!(w.contains("4934 µs") && w.contains("too busy"), "{w}");
        assert_eq!(path_warning(&devmodel::Params::transparent(), 4934.0), None);
    }
}
