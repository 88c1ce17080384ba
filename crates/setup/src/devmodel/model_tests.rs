//! The model on a simulated clock: every figure below is the arithmetic
//! of the parameters, checked against what the model does.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::*;

/// About ten 7,200 rpm disks without a cache: 8 ms per random IO.
fn disks(cache: Option<WriteCache>) -> Params {
    Params {
        units: 10,
        stripe: 256 << 10,
        read: Service {
            mean_us: 8000.0,
            sigma: 0.4,
        },
        write: Service {
            mean_us: 9000.0,
            sigma: 0.4,
        },
        seq_us: 50.0,
        unit_mbps: 150.0,
        iops: 1000.0,
        mbps: 500.0,
        flush_us: 100.0,
        cache,
        path_us: 0.0,
        queueing: 0.0,
        spare: 0.0,
        preconditioned: false,
    }
}

fn cache(bytes: u64, battery: bool) -> WriteCache {
    WriteCache {
        bytes,
        destage_iops: 500.0,
        destage_mbps: 400.0,
        battery,
        hit_us: 20.0,
        delay_us: 0.0,
    }
}

const SEC: Nanos = 1_000_000_000;

/// `clients` closed-loop clients, each issuing its next IO when its last
/// completes, for `secs` simulated seconds; `op(client, rng)` picks
/// each IO. Returns completions per client and the mean latency (ns).
fn closed_loop(
    m: &mut Model,
    clients: usize,
    secs: u64,
    mut op: impl FnMut(usize, &mut Rng) -> (Op, u64, u64),
) -> (Vec<u64>, f64) {
    let mut rng = Rng::new(7);
    let mut q: BinaryHeap<Reverse<(Nanos, usize)>> =
        (0..clients).map(|c| Reverse((0, c))).collect();
    let mut done = vec![0u64; clients];
    let (mut lat, mut n) = (0u128, 0u64);
    while let Some(Reverse((t, c))) = q.pop() {
        if t >= secs * SEC {
            continue;
        }
        let (o, off, len) = op(c, &mut rng);
        let d = m.submit(t, o, off, len);
        assert!(d.at >= t);
        if d.at <= secs * SEC {
            done[c] += 1;
            lat += (d.at - t) as u128;
            n += 1;
        }
        q.push(Reverse((d.at, c)));
    }
    (done, lat as f64 / n.max(1) as f64)
}

fn random_4k(rng: &mut Rng) -> u64 {
    rng.below(1 << 20) * 4096 // a 4 GiB device
}

#[test]
fn at_queue_depth_one_the_mean_latency_is_the_service_time() {
    let mut m = Model::new(disks(None), 1);
    let (done, mean) = closed_loop(&mut m, 1, 200, |_, r| (Op::Read, random_4k(r), 4096));
    // 8 ms positioning + 4096 B at 150 MB/s (27.3 µs).
    let want = 8e6 + 4096.0 / 150e6 * 1e9;
    assert!(
        (mean / want - 1.0).abs() < 0.02,
        "mean {mean} ns, want {want}"
    );
    let per_sec = done[0] as f64 / 200.0;
    assert!((per_sec - 1e9 / want).abs() < 3.0, "{per_sec}/s");
}

#[test]
fn at_depth_the_throughput_is_the_budget() {
    // Units at 2 ms could give far more than the 1,000/s budget.
    let mut p = disks(None);
    p.read.mean_us = 2000.0;
    let mut m = Model::new(p, 2);
    let (done, _) = closed_loop(&mut m, 32, 60, |_, r| (Op::Read, random_4k(r), 4096));
    let per_sec = done.iter().sum::<u64>() as f64 / 60.0;
    assert!((per_sec / 1000.0 - 1.0).abs() < 0.02, "{per_sec}/s");
    // Without the budget the units decide. 32 clients on 10 units, each
    // IO on a random one: a balanced closed network, whose throughput is
    // N/(N+M-1) x M/S = 32/41 x 10/8.03 ms = 972/s with exponential
    // service; a lognormal of σ 0.4 varies less, so a little more.
    let mut p = disks(None);
    p.iops = 1e6;
    let mut m = Model::new(p, 2);
    let (done, _) = closed_loop(&mut m, 32, 60, |_, r| (Op::Read, random_4k(r), 4096));
    let per_sec = done.iter().sum::<u64>() as f64 / 60.0;
    assert!(per_sec > 972.0 && per_sec < 1150.0, "{per_sec}/s");
}

#[test]
fn reads_and_writes_share_the_budget() {
    let mut m = Model::new(disks(None), 3);
    let (done, _) = closed_loop(&mut m, 32, 60, |c, r| {
        let op = if c % 2 == 0 { Op::Read } else { Op::Write };
        (op, random_4k(r), 4096)
    });
    let reads: u64 = done.iter().step_by(2).sum();
    let writes: u64 = done.iter().skip(1).step_by(2).sum();
    let total = (reads + writes) as f64 / 60.0;
    assert!((total / 1000.0 - 1.0).abs() < 0.02, "{total}/s");
    assert!(reads > writes / 2 && writes > reads / 2, "{reads} {writes}");
    // Every IO counted done went to the medium.
    assert!(m.medium_reads >= reads && m.medium_writes >= writes);
}

#[test]
fn write_back_takes_capacity_from_reads() {
    // 16 readers; 16 writers on distinct blocks through a battery-backed
    // cache that fills early: writes then run at the destage rate (500/s),
    // and what the destage takes from the 1,000/s budget reads lose.
    let mut m = Model::new(disks(Some(cache(8 << 20, true))), 4);
    let mut next = 0u64;
    let (done, _) = closed_loop(&mut m, 32, 120, |c, r| {
        if c % 2 == 0 {
            (Op::Read, random_4k(r), 4096)
        } else {
            next += 1;
            (Op::Write, (1 << 32) + next * 4096 * 7, 4096)
        }
    });
    let reads = done.iter().step_by(2).sum::<u64>() as f64 / 120.0;
    let writes = done.iter().skip(1).step_by(2).sum::<u64>() as f64 / 120.0;
    // The first 2,048 writes land in the cache at once: 17/s over 120 s.
    assert!(
        (writes - 500.0 - 2048.0 / 120.0).abs() < 15.0,
        "writes {writes}/s"
    );
    assert!((reads - 500.0).abs() < 25.0, "reads {reads}/s");
}

#[test]
fn the_cache_absorbs_a_burst_up_to_its_size_then_runs_at_the_destage_rate() {
    let size = 4 << 20; // 1,024 blocks
    let mut m = Model::new(disks(Some(cache(size, true))), 5);
    let mut t = 0;
    let mut lat = Vec::new();
    for i in 0..3000u64 {
        let d = m.submit(t, Op::Write, i * 4096 * 3, 4096);
        lat.push(d.at - t);
        t = d.at;
    }
    // The first 1,024 writes take the cache's 20 µs each...
    assert!(
        lat[..1024].iter().all(|&l| l == 20_000),
        "{:?}",
        &lat[1020..1030]
    );
    // ...then each waits for one destage: 2 ms at 500/s.
    let after: f64 = lat[1100..].iter().sum::<u64>() as f64 / lat[1100..].len() as f64;
    assert!((after / 2e6 - 1.0).abs() < 0.01, "{after} ns");
    // Rewriting a dirty block is absorbed, and a read of it is a hit.
    let d = m.submit(t, Op::Write, 2999 * 4096 * 3, 4096);
    assert_eq!((d.at - t, d.cached), (20_000, true));
    let d = m.submit(t, Op::Read, 2999 * 4096 * 3, 4096);
    assert_eq!((d.at - t, d.cached), (20_000, true));
}

#[test]
fn a_flush_waits_for_the_medium_only_with_a_volatile_cache() {
    for battery in [true, false] {
        let mut m = Model::new(disks(Some(cache(64 << 20, battery))), 6);
        for i in 0..100u64 {
            m.submit(0, Op::Write, i * 4096 * 5, 4096);
        }
        let d = m.submit(0, Op::Flush, 0, 0);
        if battery {
            assert_eq!(d.at, 20_000);
            assert_eq!(m.volatile_writes().count(), 0);
        } else {
            // 100 destages at 2 ms, then the medium's 100 µs flush.
            assert_eq!(d.at, 100 * 2_000_000 + 100_000);
            assert_eq!(m.volatile_writes().count(), 100);
        }
        // After 100 destages' time every write has reached the medium.
        m.submit(d.at.max(SEC), Op::Read, 1 << 33, 4096);
        assert_eq!(m.volatile_writes().count(), 0);
        assert_eq!(m.dirty_bytes(), 0);
        assert_eq!(m.medium_writes, 100);
    }
}

#[test]
fn sequential_io_skips_the_positioning() {
    let mut m = Model::new(disks(None), 8);
    let mut t = 0;
    for i in 0..1000u64 {
        t = m.submit(t, Op::Read, i * 65536, 65536).at;
    }
    // Each disk's chunks follow on on that disk: only the first IO on
    // each of the 10 disks positions (8 ms); every IO pays 50 µs and
    // 64 KiB at 150 MB/s (436.9 µs).
    let floor = 1000.0 * (50_000.0 + 65536.0 / 150e6 * 1e9);
    let t = t as f64;
    assert!(
        t > floor && t < floor + 10.0 * 8e6 * 2.0,
        "{t} ns, floor {floor}"
    );
}

#[test]
fn sequential_write_back_costs_bandwidth_not_iops() {
    // A log: 4 KiB appends, 4,000/s for 10 s, into the battery-backed
    // cache. Destaged in order they cost bandwidth only, so a reader at
    // QD1 beside them keeps the disks' 8 ms (as a charged IOPS token each
    // they would have pushed the budget 4 s ahead every second).
    let mut m = Model::new(disks(Some(cache(64 << 20, true))), 9);
    let mut rng = Rng::new(1);
    let (mut t_read, mut lat, mut n) = (0u64, 0u64, 0u64);
    for i in 0..40_000u64 {
        let t = i * 250_000; // every 250 µs
        m.submit(t, Op::Write, (1 << 34) + i * 4096, 4096);
        while t_read <= t {
            let d = m.submit(t_read, Op::Read, random_4k(&mut rng), 4096);
            lat += d.at - t_read;
            n += 1;
            t_read = d.at;
        }
    }
    let mean = lat as f64 / n as f64;
    assert!(mean < 8.03e6 * 1.1, "reads took {mean} ns beside the log");
}

#[test]
fn the_path_is_taken_off_but_the_device_keeps_its_own_latency() {
    let mut p = disks(None);
    p.read.sigma = 0.0;
    p.path_us = 100.0;
    let mut m = Model::new(p, 10);
    let d = m.submit(0, Op::Read, 1 << 20, 4096);
    let own = 8_000_000 + (4096.0 / 150e6 * 1e9) as u64;
    assert!(d.own.abs_diff(own) <= 1, "{d:?}");
    assert_eq!(d.at, d.own - 100_000);
}

#[test]
fn a_delayed_write_stays_in_the_cache_until_its_delay_or_a_flush() {
    let mut c = cache(64 << 20, false);
    c.delay_us = 100_000.0;
    let ms = 1_000_000;
    // Unflushed: still in the cache at 50 ms (2 ms at the cache's own
    // pace), gone at 101 ms.
    let mut m = Model::new(disks(Some(c)), 8);
    m.submit(0, Op::Write, 0, 4096);
    m.settle(50 * ms);
    assert!(m.is_dirty(0));
    m.settle(101 * ms);
    assert!(!m.is_dirty(0));
    // Flushed at 1 ms: the flush waits for the cache's own pace (2 ms),
    // not the delay, and the write is on the medium when it returns.
    let mut m = Model::new(disks(Some(c)), 8);
    m.submit(0, Op::Write, 0, 4096);
    let d = m.submit(ms, Op::Flush, 0, 0);
    assert_eq!(d.at, 2 * ms + 100_000);
    m.settle(d.at);
    assert!(!m.is_dirty(0));
}

/// Every write of `offsets` (4 KiB each) at time 0 into a cache big
/// enough for all: when the last one reaches the medium.
fn destaged_by(p: Params, offsets: &[u64]) -> Nanos {
    let mut m = Model::new(p, 11);
    for &o in offsets {
        m.submit(0, Op::Write, o, 4096);
    }
    let mut t = 0;
    while m.dirty_bytes() > 0 {
        t += SEC / 100;
        m.settle(t);
        assert!(t < 3600 * SEC, "never destaged");
    }
    t
}

#[test]
fn merged_destage_is_cheaper_than_arrival_order() {
    // 1,000 writes: 100 runs of 10 adjacent blocks, written in an order
    // that never follows the write before (block i of every run, then
    // block i+1 ...). Each run destages as one merged IO: about 100
    // random IOs at 500/s plus 4 MB at 400 MB/s, 0.2 s + 0.01 s. Spread
    // over distinct places, the same 1,000 writes take 1,000 random IOs
    // at 500/s: 2 s.
    let run = |r: u64| r * (1 << 24);
    let merged: Vec<u64> = (0..10)
        .flat_map(|i| (0..100).map(move |r| run(r) + i * 4096))
        .collect();
    let scattered: Vec<u64> = (0..1000).map(|i| i * (1 << 22)).collect();
    let p = disks(Some(cache(64 << 20, true)));
    let (a, b) = (destaged_by(p, &merged), destaged_by(p, &scattered));
    assert!(a <= SEC / 2, "merged: {a} ns");
    assert!(
        (19 * SEC / 10..=21 * SEC / 10).contains(&b),
        "scattered: {b} ns"
    );
    // A log written between other writes still streams: 500 log blocks
    // interleaved with 500 scattered pages destage in about 1 s (the
    // pages), not 2 s.
    let interleaved: Vec<u64> = (0..500)
        .flat_map(|i| [(1 << 40) + i * 4096, i * (1 << 22)])
        .collect();
    let c = destaged_by(p, &interleaved);
    assert!(c <= 11 * SEC / 10, "log between pages: {c} ns");
}

#[test]
fn a_controller_sorting_its_cache_destages_faster_when_more_waits() {
    // 1,000 scattered writes on 10 units, the budget no limit: each
    // write's destage is timed by the random writes already waiting when
    // it arrived (queueing 0.5, a disk choosing among 32 at most: 1 / 1.5
    // = 0.67 of the time once 32 or more wait per unit, 320 here).
    let scattered: Vec<u64> = (0..1000).map(|i| i * (1 << 22)).collect();
    let mut p = disks(Some(cache(64 << 20, true)));
    p.iops = 1e6;
    let fifo = destaged_by(p, &scattered);
    p.queueing = 0.5;
    let sorted = destaged_by(p, &scattered);
    let ratio = sorted as f64 / fifo as f64;
    // The first writes of the burst found fewer waiting, so the mean gain
    // is smaller than the full one: between 0.67 and 0.80 of the
    // arrival-order time.
    assert!((0.66..0.8).contains(&ratio), "{sorted} / {fifo} = {ratio}");
}

#[test]
fn a_disk_serves_more_at_depth() {
    // One spindle, no budget to speak of: QD1 is the positioning time;
    // at QD32 it serves 1.5x as many with queueing 0.5, the same without.
    let mut p = disks(None);
    p.units = 1;
    p.iops = 1e6;
    let rate = |p: Params, qd: usize| {
        let mut m = Model::new(p, 5);
        let (done, _) = closed_loop(&mut m, qd, 60, |_, r| (Op::Read, random_4k(r), 4096));
        done.iter().sum::<u64>() as f64 / 60.0
    };
    let plain = rate(p, 32) / rate(p, 1);
    assert!((plain - 1.0).abs() < 0.05, "no queueing: {plain}");
    p.queueing = 0.5;
    let gain = rate(p, 32) / rate(p, 1);
    assert!((gain - 1.5).abs() < 0.08, "queueing: {gain}");
    let mid = rate(p, 4) / rate(p, 1);
    assert!(mid > 1.1 && mid < gain, "QD4: {mid}");
}

#[test]
fn steady_state_ssd_writes_cost_more_than_fresh_ones() {
    // Four flash channels at 400 µs per program, a 10k IOPS budget, no
    // cache: random writes at depth are budget-bound on a fresh drive
    // (10,000/s) and cost garbage collection's 2.5 writes at steady state
    // with 28% spare (4,000/s).
    let mut p = disks(None);
    (p.units, p.stripe, p.iops, p.mbps) = (4, 64 << 10, 10_000.0, 400.0);
    p.write = Service {
        mean_us: 100.0,
        sigma: 0.3,
    };
    p.spare = 0.28;
    let rate = |p: Params| {
        let mut m = Model::new(p, 6);
        let (done, _) = closed_loop(&mut m, 32, 20, |_, r| (Op::Write, random_4k(r), 4096));
        done.iter().sum::<u64>() as f64 / 20.0
    };
    let fresh = rate(p);
    p.preconditioned = true;
    let steady = rate(p);
    let amp = crate::devmodel::physics::write_amp(0.28);
    assert!((amp - 2.5).abs() < 0.1, "{amp}");
    assert!((fresh / 10_000.0 - 1.0).abs() < 0.03, "fresh {fresh}/s");
    assert!(
        (steady / (10_000.0 / amp) - 1.0).abs() < 0.03,
        "steady {steady}/s"
    );
    // Sequential writes pay no garbage collection: the same rate fresh
    // and at steady state.
    let seq = |p: Params| {
        let mut m = Model::new(p, 6);
        let mut next = 0;
        let (done, _) = closed_loop(&mut m, 1, 5, move |_, _| {
            next += 65536;
            (Op::Write, next, 65536)
        });
        done[0]
    };
    let mut fresh_p = p;
    fresh_p.preconditioned = false;
    // (the first IO at each unit positions, and pays it.)
    let (a, b) = (seq(p), seq(fresh_p));
    assert!(a.abs_diff(b) <= 4 && a > 1000, "steady {a}, fresh {b}");
}

#[test]
fn the_cache_counts_what_it_absorbed_served_and_held() {
    let mut m = Model::new(disks(Some(cache(64 << 20, true))), 8);
    let d = m.submit(0, Op::Write, 0, 8192);
    assert!(d.cached && !d.absorbed && !d.cache_read);
    // The same blocks again: absorbed; a read of them: served.
    let d = m.submit(1000, Op::Write, 4096, 4096);
    assert!(d.absorbed);
    let d = m.submit(2000, Op::Read, 0, 8192);
    assert!(d.cache_read && !d.absorbed);
    // A read past them goes to the medium.
    assert!(!m.submit(3000, Op::Read, 0, 12288).cache_read);
    // 8 KiB dirty from 0 to 3 µs (destaging takes 2 ms): 8192 x 3000.
    assert_eq!(m.dirty_byte_ns, 8192 * 3000);
}

#[test]
fn garbage_collection_spares_reads_and_sequential_writes_at_depth() {
    // The drive of the steady-state test, preconditioned: random reads
    // at QD32 keep the 10,000/s budget, and 64 KiB sequential writes at
    // QD32 (one stream, 32 in flight) keep their rate, as on a fresh
    // drive.
    let mut p = disks(None);
    (p.units, p.stripe, p.iops, p.mbps) = (4, 64 << 10, 10_000.0, 400.0);
    p.read = Service {
        mean_us: 100.0,
        sigma: 0.3,
    };
    (p.spare, p.preconditioned) = (0.28, true);
    let mut m = Model::new(p, 9);
    let (done, _) = closed_loop(&mut m, 32, 10, |_, r| (Op::Read, random_4k(r), 4096));
    let reads = done.iter().sum::<u64>() as f64 / 10.0;
    assert!((reads / 10_000.0 - 1.0).abs() < 0.03, "{reads}/s");
    let seq_mbps = |p: Params| {
        let mut m = Model::new(p, 9);
        let mut next = 0u64;
        let (done, _) = closed_loop(&mut m, 32, 10, move |_, _| {
            // One stream, 32 of its writes in flight.
            next += 65536;
            (Op::Write, next, 65536)
        });
        done.iter().sum::<u64>() as f64 * 65536.0 / 10.0 / 1e6
    };
    let steady = seq_mbps(p);
    p.preconditioned = false;
    let fresh = seq_mbps(p);
    assert!(
        (steady / fresh - 1.0).abs() < 0.02,
        "steady {steady} fresh {fresh} MB/s"
    );
}

#[test]
fn a_merged_write_is_no_write_io_of_its_own() {
    // Ten adjacent 4 KiB writes, in an order where none follows the one
    // before: the first is a random IO, the nine others join it.
    let mut m = Model::new(disks(Some(cache(64 << 20, true))), 10);
    for i in [0u64, 2, 4, 6, 8, 1, 3, 5, 7, 9] {
        m.submit(0, Op::Write, (1 << 30) + i * 4096, 4096);
    }
    // Five writes with a free block between them are each random.
    for i in [0u64, 2, 4, 6, 8] {
        m.submit(0, Op::Write, (2 << 30) + i * 4096, 4096);
    }
    m.settle(100 * SEC);
    assert_eq!(m.dirty_bytes(), 0);
    // 0, 2 .. 8 of the first run: 0 random, 2 joins nothing (1 is free),
    // so 2, 4, 6, 8 are random too; 1, 3, 5, 7, 9 join: 5 + 5 IOs.
    assert_eq!(m.medium_writes, 10);
}
