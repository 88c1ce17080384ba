//! The floor under a client's cost: one TCP round trip on 127.0.0.1 with
//! a statement-sized request and a row-sized reply, between a client thread
//! and an echo thread, measured as the client thread's CPU (user and
//! system, `getrusage(RUSAGE_THREAD)`) per round trip. A SQL client that
//! sends k statements per request cannot cost less than k of these.

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

/// Measures `rounds` round trips (after 1000 unmeasured ones).
pub fn measure(rounds: u64) -> Result<RoundTrip> {
    let l = TcpListener::bind("127.0.0.1:0").context("loopback: bind")?;
    let addr = l.local_addr()?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
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

/// One measurement per process (20,000 round trips, about a second).
pub fn floor() -> Result<RoundTrip, String> {
    static FLOOR: OnceLock<Result<RoundTrip, String>> = OnceLock::new();
    FLOOR
        .get_or_init(|| measure(20_000).map_err(|e| format!("{e:#}")))
        .clone()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_round_trip_costs_the_client_some_cpu() {
        let r = super::measure(2000).unwrap();
        assert_eq!(r.rounds, 2000);
        // Two system calls at least: some CPU, and less than the wall time
        // (the client waits for the echo).
        assert!(r.cpu_us() > 0.0, "{r:?}");
        assert!(r.wall_us > 0.0 && r.cpu_us() <= r.wall_us * 1.5, "{r:?}");
    }
}
