//! The loops' timing: when to sleep and when to spin before a deadline,
//! and the real-time class. A loop sleeps until its next deadline less
//! what a timed wake-up has been overshooting by on this machine, so it
//! wakes at the deadline on average; a deadline nearer than that is spun
//! for, and a reply due within a small slack of now is answered with
//! the ones due (a wake-up saved for a few µs early, [`SLACK_MAX`] at
//! most).

use crate::devmodel::model::Nanos;

/// The overshoot assumed before any wake-up was measured, ns.
const FIRST_GUESS: Nanos = 20_000;
/// The estimate's bounds, ns: never spin for longer than the top.
const LOWEST: Nanos = 2_000;
/// See [`LOWEST`].
const HIGHEST: Nanos = 200_000;
/// The longest spin: a loop in the real-time class never keeps a CPU
/// from other work for longer; a nearer deadline is slept for (and may
/// be answered late when wake-ups overshoot by more), ns.
pub const SPIN_MAX: Nanos = 20_000;
/// The most a reply is answered early to share a wake-up, ns.
pub const SLACK_MAX: Nanos = 5_000;

/// What timed wake-ups have been overshooting by.
#[derive(Debug)]
pub struct Waker {
    /// Mean overshoot (an exponential mean over the last 8 or so).
    mean: Nanos,
}

impl Default for Waker {
    fn default() -> Self {
        Waker { mean: FIRST_GUESS }
    }
}

impl Waker {
    /// How early to wake before a deadline: the mean overshoot (at
    /// least [`LOWEST`]).
    pub fn lead(&self) -> Nanos {
        self.mean.clamp(LOWEST, HIGHEST)
    }

    /// Replies due this soon after now are answered now: half the lead,
    /// [`SLACK_MAX`] at most.
    pub fn slack(&self) -> Nanos {
        (self.lead() / 2).min(SLACK_MAX)
    }

    /// When to block until, for a deadline `due` seen at `now`: `None`
    /// when it is nearer than the overshoot (spin for it).
    pub fn sleep_until(&self, now: Nanos, due: Nanos) -> Option<Nanos> {
        let lead = self.lead();
        let spin = lead.min(SPIN_MAX);
        let left = due.saturating_sub(now);
        // Wake `lead` early, but never sleep less than the longest spin.
        (left > spin).then(|| due - lead.min(left - spin))
    }

    /// A timed sleep meant to end at `target` ended at `now`.
    pub fn woke(&mut self, target: Nanos, now: Nanos) {
        let over = now.saturating_sub(target).min(HIGHEST * 4);
        self.mean = (self.mean * 7 + over) / 8;
    }
}

/// The share of an IO's own modelled latency by which it may be answered
/// early to share a wake-up with a reply answered on time, in 1/1000.
const SHARE_PER_MILLE: Nanos = 30;
/// The most an IO is answered early that way, ns.
const SHARE_MAX: Nanos = 200_000;

/// Whether a reply due at `at` (for an IO that arrived at `arrived`) is
/// answered at `now` together with one that was due: when it is due
/// within 3% of its own latency (200 µs at most). A device at depth
/// completes IOs in bursts too; an IO alone in the queue is never
/// answered early this way.
pub fn joins(now: Nanos, at: Nanos, arrived: Nanos) -> bool {
    let own = at.saturating_sub(arrived);
    at <= now + (own * SHARE_PER_MILLE / 1000).min(SHARE_MAX)
}

/// Spins until `due` on the model's clock.
pub fn spin_until(due: Nanos) {
    while crate::probe::mono_ns() < due {
        std::hint::spin_loop();
    }
}

/// Puts the calling thread in the real-time class, FIFO at priority 10
/// (not passed on to threads it starts), with a timer slack of 1 ns:
/// the device answers on time whatever the engine's threads are doing.
/// Bounded: the loops sleep whenever the next deadline is further than a
/// wake-up costs, and the kernel's real-time throttling holds. What was
/// set, or why not, in words.
pub fn realtime() -> String {
    // SAFETY: PR_SET_TIMERSLACK takes a value; it cannot fail for 1.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let p = libc::sched_param { sched_priority: 10 };
    // SAFETY: a valid sched_param for this thread (0). Reset on fork: the
    // kernel's io-wq workers for the ring, cloned from the loop, do not
    // inherit the class.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &p) } == 0
    {
        "SCHED_FIFO priority 10".into()
    } else {
        format!(
            "normal scheduling: SCHED_FIFO refused ({})",
            std::io::Error::last_os_error()
        )
    }
}

/// What one timed sleep costs in CPU on this machine, µs: the floor of a
/// loop that sleeps once per IO (the wake-up, the timer's arming and the
/// switches, which a virtual machine may charge several µs each for).
/// Measured on a thread of its own in the loops' class, over `n` sleeps
/// of 50 µs (about `n` × 0.1 ms); `None` when the thread's CPU clock
/// cannot be read.
pub fn sleep_cost_us(n: u32) -> Option<f64> {
    let measure = move || {
        realtime();
        let cpu = || {
            let mut t = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: a valid timespec to write into.
            let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
            (r == 0).then(|| t.tv_sec as f64 * 1e6 + t.tv_nsec as f64 / 1e3)
        };
        let nap = libc::timespec {
            tv_sec: 0,
            tv_nsec: 50_000,
        };
        let start = cpu()?;
        for _ in 0..n {
            // SAFETY: a valid relative timespec; no remainder wanted.
            unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &nap, std::ptr::null_mut()) };
        }
        Some((cpu()? - start) / f64::from(n.max(1)))
    };
    std::thread::spawn(measure).join().ok().flatten()
}

/// Pins the calling thread to `cpu`; false if it cannot be.
pub fn pin(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays in it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_only_when_the_deadline_is_further_than_a_wake_up() {
        let mut w = Waker::default();
        assert_eq!(w.lead(), 20_000);
        assert_eq!(w.slack(), SLACK_MAX);
        assert_eq!(w.sleep_until(0, 20_000), None);
        assert_eq!(w.sleep_until(0, 100_000), Some(80_000));
        // Wake-ups that overshoot by 4 µs bring the lead down to 4 µs.
        for _ in 0..200 {
            w.woke(0, 4_000);
        }
        assert!((3_900..=4_100).contains(&w.lead()), "{}", w.lead());
        assert!((1_900..=2_100).contains(&w.slack()), "{}", w.slack());
        // Never below the floor, never above the ceiling.
        for _ in 0..200 {
            w.woke(0, 0);
        }
        assert_eq!(w.lead(), LOWEST);
        for _ in 0..200 {
            w.woke(0, 10_000_000);
        }
        assert_eq!(w.lead(), HIGHEST);
    }

    #[test]
    fn never_spins_longer_than_spin_max() {
        let mut w = Waker::default();
        // Wake-ups overshooting by 100 µs: a deadline 50 µs away is slept
        // for (until 20 µs before it), not spun for.
        for _ in 0..200 {
            w.woke(0, 100_000);
        }
        assert_eq!(w.sleep_until(0, 50_000), Some(20_000));
        assert_eq!(w.sleep_until(0, 15_000), None);
        let t = w.sleep_until(0, 500_000).unwrap();
        assert!((399_000..=401_000).contains(&t), "{t}");
    }

    #[test]
    fn a_reply_joins_a_wake_up_within_three_percent_of_its_latency() {
        // 3 ms of latency: 90 µs early at most.
        assert!(joins(3_000_000, 3_090_000, 90_000));
        assert!(!joins(3_000_000, 3_091_000, 91_000));
        // 20 ms: capped at 200 µs.
        assert!(joins(20_000_000, 20_200_000, 200_000));
        assert!(!joins(20_000_000, 20_201_000, 201_000));
    }

    #[test]
    fn a_sleep_costs_some_cpu_but_less_than_its_length() {
        let us = sleep_cost_us(200).expect("the thread's CPU clock");
        // Waking costs something; it cannot cost more than the 50 µs
        // slept plus the overshoot's spinning-free wait (nothing spins).
        assert!(us > 0.0 && us < 50.0, "{us}");
    }
}
