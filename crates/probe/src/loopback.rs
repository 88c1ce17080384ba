//! The floor under a client's cost: one TCP round trip on 127.0.0.1 with
//! a statement-sized request and a row-sized reply, between a client thread
//! and an echo thread, measured as the client thread's CPU (user and
//! system, `getrusage(RUSAGE_THREAD)`) per round trip. A SQL client that
//! sends k statements per request cannot cost less than k of these.
//!
//! Where the two ends run decides the cost, so both placements are
//! measured, each thread pinned: on one CPU (the blocked end is woken on
//! the CPU it sleeps on: the least a round trip costs) and on two (each
//! reply wakes a thread on another CPU; on a virtual machine that wake-up
//! is an inter-processor interrupt through the hypervisor, and on this
//! project's 2-core VM it cost about ten times as much). A server under
//! load answers from whichever CPU is free, so a real client pays
//! between the two.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Context, Result};

/// What one loopback round trip cost the client thread.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct RoundTrip {
    /// Round trips measured.
    pub rounds: u64,
    /// Wall time per round trip, µs.
    pub wall_us: f64,
    /// Client user CPU per round trip, µs.
    pub user_us: f64,
    /// Client system CPU per round trip, µs.
    pub sys_us: f64,
}

impl RoundTrip {
    /// Client CPU per round trip, µs.
    pub fn cpu_us(&self) -> f64 {
        self.user_us + self.sys_us
    }
}

/// Bytes of each request and reply: a small prepared-statement execute and
/// a one-row result.
pub const REQUEST: usize = 64;
/// Reply bytes.
pub const REPLY: usize = 128;

fn thread_cpu_us() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    (us(ru.ru_utime), us(ru.ru_stime))
}

/// Where the two ends of the measured round trips run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Both threads pinned to one CPU.
    SameCpu,
    /// The client pinned to one CPU, the echo to another.
    OtherCpu,
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the zeroed set we pass, of its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let n = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_getaffinity(0, n, &mut set) } != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Pins the calling thread to one CPU.
fn pin(cpu: usize) -> std::io::Result<()> {
    // SAFETY: a zeroed set with one bit set, passed with its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Measures `rounds` round trips (after 1000 unmeasured ones) with the
/// two ends placed as asked; an error when the process may use only one
/// CPU and `OtherCpu` is asked for. The measuring threads are its own,
/// so the caller's affinity is left as it was.
pub fn measure(rounds: u64, placement: Placement) -> Result<RoundTrip> {
    let cpus = allowed_cpus();
    let (client_cpu, echo_cpu) = match (placement, cpus.as_slice()) {
        (Placement::SameCpu, [a, ..]) => (*a, *a),
        (Placement::OtherCpu, [a, b, ..]) => (*a, *b),
        _ => anyhow::bail!(
            "loopback: {} CPU(s) allowed to this process, {placement:?} needs {}",
            cpus.len(),
            if placement == Placement::SameCpu {
                1
            } else {
                2
            }
        ),
    };
    std::thread::scope(|sc| {
        sc.spawn(|| measure_pinned(rounds, client_cpu, echo_cpu))
            .join()
            .map_err(|_| anyhow::anyhow!("loopback: the measuring thread panicked"))?
    })
}

fn measure_pinned(rounds: u64, client_cpu: usize, echo_cpu: usize) -> Result<RoundTrip> {
    pin(client_cpu).context("loopback: pinning the client thread")?;
    let l = TcpListener::bind("127.0.0.1:0").context("loopback: bind")?;
    let addr = l.local_addr()?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        pin(echo_cpu)?;
        let (mut s, _) = l.accept()?;
        s.set_nodelay(true)?;
        let (mut q, r) = ([0u8; REQUEST], [7u8; REPLY]);
        loop {
            if s.read_exact(&mut q).is_err() {
                return Ok(()); // the client closed
            }
            s.write_all(&r)?;
        }
    });
    let mut c = TcpStream::connect(addr).context("loopback: connect")?;
    c.set_nodelay(true)?;
    let (q, mut r) = ([1u8; REQUEST], [0u8; REPLY]);
    let mut trip = |c: &mut TcpStream| -> Result<()> {
        c.write_all(&q)?;
        c.read_exact(&mut r)?;
        Ok(())
    };
    for _ in 0..1000 {
        trip(&mut c)?;
    }
    let (u0, s0) = thread_cpu_us();
    let t0 = Instant::now();
    for _ in 0..rounds {
        trip(&mut c)?;
    }
    let wall = t0.elapsed().as_secs_f64() * 1e6;
    let (u1, s1) = thread_cpu_us();
    drop(c);
    let _ = echo.join();
    let n = rounds.max(1) as f64;
    Ok(RoundTrip {
        rounds,
        wall_us: wall / n,
        user_us: (u1 - u0) / n,
        sys_us: (s1 - s0) / n,
    })
}

/// Both placements' round trips.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Floor {
    /// Both ends on one CPU: the least a round trip costs.
    pub same_cpu: RoundTrip,
    /// The ends on two CPUs; None on a process limited to one CPU.
    pub other_cpu: Option<RoundTrip>,
}

/// Measures both placements, `rounds` round trips each.
pub fn measure_both(rounds: u64) -> Result<Floor> {
    Ok(Floor {
        same_cpu: measure(rounds, Placement::SameCpu)?,
        other_cpu: if allowed_cpus().len() > 1 {
            Some(measure(rounds, Placement::OtherCpu)?)
        } else {
            None
        },
    })
}

/// One measurement per process (20,000 round trips per placement, a
/// second or two).
pub fn floor() -> Result<Floor, String> {
    static FLOOR: OnceLock<Result<Floor, String>> = OnceLock::new();
    FLOOR
        .get_or_init(|| measure_both(20_000).map_err(|e| format!("{e:#}")))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_costs_the_client_some_cpu() {
        let f = measure_both(2000).unwrap();
        for r in std::iter::once(f.same_cpu).chain(f.other_cpu) {
            assert_eq!(r.rounds, 2000);
            // Two system calls at least: some CPU, and less than the wall
            // time (the client waits for the echo).
            assert!(r.cpu_us() > 0.0, "{r:?}");
            assert!(r.wall_us > 0.0 && r.cpu_us() <= r.wall_us * 1.5, "{r:?}");
        }
        // This thread's affinity is left alone.
        assert_eq!(allowed_cpus().len() > 1, f.other_cpu.is_some());
    }
}
