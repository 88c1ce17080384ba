//! FUSE over io_uring (Linux 6.14, `/sys/module/fuse/parameters/
//! enable_uring`): a loop per CPU queue, pinned to its CPU, with a ring
//! of its own. Each of the queue's [`QUEUE_DEPTH`] entries is a header
//! and a payload buffer the kernel fills with a request; the entry comes
//! back as a completion, the host file's IO for it goes through the same
//! ring, the reply waits in a heap until its due time, and committing it
//! (`FUSE_IO_URING_CMD_COMMIT_AND_FETCH`) re-arms the entry for the next
//! request. One `io_uring_enter` sends every commit due and waits for
//! the next request, host IO or deadline. The kernel sends a request to
//! the queue of the CPU it was made on, so the loop device's worker and
//! the loop serving it share a CPU.
//!
//! The layouts are `linux/fuse.h`'s: `struct fuse_uring_req_header`
//! (the in/out header, the operation's first argument, then
//! `struct fuse_uring_ent_in_out`) and `struct fuse_uring_cmd_req` in
//! the submission's command bytes.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::{Context, Result, bail};
use io_uring::{IoUring, cqueue, opcode, squeue, types};

use super::proto::{self, Agreed, InHeader, Meta, OUT_HEADER, Shape, op};
use super::raw::{
    COMMIT_AND_FETCH, REGISTER, cmd_req, nowait, possible_cpus, rings, rw_at, with_len,
};
use super::timer::{self, Waker, joins, pin, spin_until};
use super::{MAX_IO, Nanos, Op, QUEUE_DEPTH, Shared, now};

/// Where the operation's first argument starts in the header.
const OP_IN: usize = 128;
/// Where `struct fuse_uring_ent_in_out` starts in the header.
const ENT: usize = 256;
/// `sizeof(struct fuse_uring_req_header)`.
const HEADER: usize = ENT + 32;
/// The payload buffer: the kernel's `max_payload_sz` (the largest write).
const PAYLOAD: usize = MAX_IO as usize;
/// A completion's kind, in the top bits of its user data.
const HOST: u64 = 1 << 32;

/// Starts the loops over the CPU queues and registers their entries;
/// the number of queues and of loops. An error (registration refused, io_uring unavailable) leaves
/// the kernel sending requests over `/dev/fuse`, which the control loop
/// serves.
pub fn start(s: &Arc<Shared>, shape: &Shape, fd: &Arc<OwnedFd>) -> Result<(usize, usize)> {
    let queues = possible_cpus();
    let loops = rings(queues);
    let (tx, rx) = std::sync::mpsc::channel();
    for l in 0..loops {
        let (s, shape, fd, tx) = (s.clone(), shape.clone(), fd.clone(), tx.clone());
        let mine: Vec<usize> = (l..queues).step_by(loops).collect();
        std::thread::Builder::new()
            .name(format!("uring-{l}"))
            .spawn(move || {
                let mut registered = Some(tx);
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    Queue::new(s, shape, fd.as_raw_fd(), &mine)
                        .and_then(|mut queue| queue.run(&mut registered))
                }));
                match (registered, r) {
                    // Not registered yet: the start says why.
                    (Some(tx), Ok(r)) => {
                        let _ = tx.send(r.map(|_| ()));
                    }
                    (Some(tx), Err(_)) => {
                        let _ = tx.send(Err(anyhow::anyhow!("a ring's loop panicked")));
                    }
                    (None, Ok(Ok(()))) => {}
                    // A loop that dies with its entries registered would
                    // leave its CPU's requests with nobody to take them
                    // (the loop device hung): the whole server goes, its
                    // /dev/fuse closes, and every IO fails instead.
                    (None, r) => {
                        if let Ok(Err(e)) = r {
                            eprintln!("ampbench device-model: a ring's loop failed: {e:#}");
                        }
                        std::process::abort();
                    }
                }
            })
            .context("cannot start a ring's loop")?;
    }
    drop(tx);
    let (mut ok, mut failed) = (0, None);
    for _ in 0..loops {
        match rx.recv_timeout(std::time::Duration::from_secs(10)) {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => failed = Some(e),
            Err(_) => failed = Some(anyhow::anyhow!("a ring's loop did not register")),
        }
    }
    match failed {
        None => Ok((queues, loops)),
        // Nothing registered: the kernel keeps to /dev/fuse.
        Some(e) if ok == 0 => Err(e),
        // Some queues have entries and others none: not a state to serve
        // from.
        Some(e) => bail!("{ok} of {loops} ring loops registered: {e:#}"),
    }
}

/// One entry: the kernel keeps the buffers' addresses from registration
/// on, so they are boxed and never move.
struct Ent {
    /// The CPU queue it is registered on.
    qid: u16,
    hdr: Box<[u8; HEADER]>,
    payload: Vec<u8>,
    iov: Box<[libc::iovec; 2]>,
    /// The request it holds, its reply's body length and errno.
    unique: u64,
    commit_id: u64,
    body: usize,
    err: i32,
    /// When it arrived and when it is due, and the power epoch it began
    /// in.
    arrived: Nanos,
    at: Nanos,
    epoch: u64,
    /// Its operation and host IO length.
    opcode: u32,
    len: usize,
    /// Its host IO has not completed yet.
    host: bool,
    /// Its time came while its host IO was still going.
    overdue: bool,
    /// Answered at its time, never early (a flush; any IO while power
    /// cuts are played).
    strict: bool,
    /// What its host IO done in the loop returned.
    inline: i32,
}

struct Queue {
    s: Arc<Shared>,
    shape: Shape,
    fuse: RawFd,
    file: RawFd,
    ring: IoUring<squeue::Entry128, cqueue::Entry>,
    ents: Vec<Ent>,
    heap: BinaryHeap<Reverse<(Nanos, usize)>>,
    out: Vec<u8>,
    /// Completions taken while registering, for the loop.
    backlog: Vec<(u64, i32)>,
}

/// A write's reply body (`struct fuse_write_out`): the size written.
fn write_out(e: &mut Ent) {
    e.payload[..8].fill(0);
    e.payload[..4].copy_from_slice(&(e.len as u32).to_ne_bytes());
}

impl Queue {
    fn new(s: Arc<Shared>, shape: Shape, fuse: RawFd, queues: &[usize]) -> Result<Queue> {
        // Pinned only when asked (AMPBENCH_DEVICE_PIN=1): this kernel
        // does not preempt kernel code (PREEMPT_NONE), so a loop pinned
        // to a CPU busy in a system call waits for it, even in the
        // real-time class; unpinned, it runs on whichever CPU is free.
        if let [q] = queues
            && std::env::var("AMPBENCH_DEVICE_PIN").is_ok_and(|v| v == "1")
        {
            pin(*q);
        }
        timer::realtime();
        let size = (QUEUE_DEPTH * 4 * queues.len()).next_power_of_two() as u32;
        // Task work (the kernel filling an entry) runs when the loop
        // enters the ring, not by interrupting it.
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(size)
            .or_else(|_| IoUring::builder().setup_coop_taskrun().build(size))
            .or_else(|_| IoUring::builder().build(size))
            .context("cannot make an io_uring")?;
        let ents = queues
            .iter()
            .flat_map(|q| std::iter::repeat_n(*q as u16, QUEUE_DEPTH))
            .map(|qid| {
                let mut hdr = Box::new([0u8; HEADER]);
                // Zeroed on demand: pages are touched as IOs need them.
                let mut payload = vec![0u8; PAYLOAD];
                let iov = Box::new([
                    libc::iovec {
                        iov_base: hdr.as_mut_ptr().cast(),
                        iov_len: HEADER,
                    },
                    libc::iovec {
                        iov_base: payload.as_mut_ptr().cast(),
                        iov_len: PAYLOAD,
                    },
                ]);
                Ent {
                    qid,
                    hdr,
                    payload,
                    iov,
                    unique: 0,
                    commit_id: 0,
                    body: 0,
                    err: 0,
                    arrived: 0,
                    at: 0,
                    epoch: 0,
                    opcode: 0,
                    len: 0,
                    host: false,
                    overdue: false,
                    strict: false,
                    inline: 0,
                }
            })
            .collect();
        let file = s.file.as_raw_fd();
        Ok(Queue {
            s,
            shape,
            fuse,
            file,
            ring,
            ents,
            heap: BinaryHeap::with_capacity(QUEUE_DEPTH * queues.len()),
            out: vec![0u8; proto::MIN_READ_BUFFER],
            backlog: Vec::new(),
        })
    }

    fn push(&mut self, e: squeue::Entry128) -> Result<()> {
        // SAFETY: every submission's buffers live in `self.ents`, which
        // stay put until the ring is gone.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.ring.submit()?;
        }
        Ok(())
    }

    /// Registers every entry; an error the kernel gives at once is
    /// returned.
    fn register(&mut self) -> Result<()> {
        for i in 0..self.ents.len() {
            let sqe = opcode::UringCmd80::new(types::Fd(self.fuse), REGISTER)
                .cmd(cmd_req(0, self.ents[i].qid))
                .addr(Some(self.ents[i].iov.as_ptr() as u64))
                .build()
                .user_data(i as u64);
            self.push(with_len(sqe, 2))?;
        }
        self.ring.submit()?;
        // A refusal comes at once; a request may already have come into
        // an entry too (kept for the loop).
        let done: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        if let Some((_, r)) = done.iter().find(|(_, r)| *r < 0) {
            bail!(
                "the kernel refused a ring entry: {}",
                std::io::Error::from_raw_os_error(-r)
            );
        }
        self.backlog = done;
        Ok(())
    }

    /// Commits entry `i`'s reply (`err` a negative errno or 0, the body
    /// in its payload) and asks for its next request.
    fn commit(&mut self, i: usize, err: i32) -> Result<()> {
        let e = &mut self.ents[i];
        let body = if err == 0 { e.body } else { 0 };
        proto::out_header(&mut e.hdr[..OUT_HEADER], OUT_HEADER + body, err, e.unique);
        e.hdr[ENT + 16..ENT + 20].copy_from_slice(&(body as u32).to_ne_bytes());
        let sqe = opcode::UringCmd80::new(types::Fd(self.fuse), COMMIT_AND_FETCH)
            .cmd(cmd_req(e.commit_id, e.qid))
            .build()
            .user_data(i as u64);
        self.push(sqe)
    }

    /// Answers entry `i` at its time (an error if the power was cut or
    /// its host IO failed).
    fn answer(&mut self, i: usize) -> Result<()> {
        let e = &mut self.ents[i];
        let r = if e.err != 0 {
            Err(e.err)
        } else {
            self.s.answer(e.at, e.epoch)
        };
        match r {
            Ok(()) => self.commit(i, 0),
            Err(errno) => self.commit(i, -errno),
        }
    }

    /// A request arrived in entry `i` at `t`.
    // Long: one match arm per FUSE request kind on the io_uring path, on the
    // measured path of every IO.
    fn request(&mut self, i: usize, t: Nanos) -> Result<()> {
        let e = &mut self.ents[i];
        let h = InHeader::parse(&e.hdr[..proto::IN_HEADER]);
        e.unique = h.unique;
        e.arrived = t;
        e.strict = h.opcode == op::FSYNC || self.s.shadow.is_some();
        e.commit_id = proto::u64_at(&e.hdr[..], ENT + 8);
        e.err = 0;
        e.overdue = false;
        let payload_sz = (proto::u32_at(&e.hdr[..], ENT + 16) as usize).min(PAYLOAD);
        let arg = &e.hdr[OP_IN..ENT];
        let held = match h.opcode {
            op::READ => {
                let (off, size) = proto::rw_args(arg);
                let len = (size as usize)
                    .min(PAYLOAD)
                    .min(self.s.size.saturating_sub(off) as usize);
                self.s
                    .serve(Op::Read, off, len as u64, t, |_| Ok(()))
                    .map(|(at, epoch)| {
                        // From the host's page cache at once; through the
                        // ring (off the loop) when it would block.
                        let sqe = match nowait(self.file, false, &mut e.payload[..len], off) {
                            Some(r) => {
                                e.inline = r;
                                None
                            }
                            None => Some(
                                opcode::Read::new(
                                    types::Fd(self.file),
                                    e.payload.as_mut_ptr(),
                                    len as u32,
                                )
                                .offset(off)
                                .build()
                                .user_data(HOST | i as u64),
                            ),
                        };
                        (at, epoch, len, sqe)
                    })
            }
            op::WRITE => {
                let (off, size) = proto::rw_args(arg);
                let len = (size as usize).min(payload_sz);
                if self.s.shadow.is_some() {
                    // The medium kept: done now, under the model's lock.
                    self.s
                        .write_now(off, &e.payload[..len], t)
                        .map(|(at, epoch)| {
                            e.inline = len as i32;
                            (at, epoch, len, None)
                        })
                } else if off.saturating_add(len as u64) > self.s.size {
                    Err(libc::ENOSPC)
                } else {
                    self.s
                        .serve(Op::Write, off, len as u64, t, |_| Ok(()))
                        .map(|(at, epoch)| {
                            // Into the host's page cache at once: ext4 takes no
                            // RWF_NOWAIT buffered write, and the ring's worker
                            // would cost two context switches per write.
                            e.inline = match rw_at(self.file, &e.payload[..len], off) {
                                Ok(n) => n as i32,
                                Err(e) => -e,
                            };
                            let sqe: Option<squeue::Entry> = None;
                            (at, epoch, len, sqe)
                        })
                }
            }
            op::FSYNC => self
                .s
                .serve(Op::Flush, 0, 0, t, |_| Ok(()))
                .map(|(at, epoch)| (at, epoch, 0, None)),
            op::FALLOCATE => {
                let (off, len, mode) = proto::fallocate_args(arg);
                let r = self.s.fallocate(off, len, mode as i32);
                e.body = 0;
                return self.commit(i, r.err().map_or(0, |e| -e));
            }
            _ => {
                let mut agreed = Agreed::default();
                // A lookup's name comes in the payload (its first
                // argument is empty, `fuse_set_zero_arg0`).
                let arg = if h.opcode == op::LOOKUP {
                    &e.payload[..payload_sz]
                } else {
                    arg
                };
                let m = proto::meta(&self.shape, &h, arg, &mut self.out, &mut agreed);
                let (n, err) = match m {
                    Meta::Reply(n) => (n, proto::u32_at(&self.out, 4) as i32),
                    // Forgets and interrupts come over /dev/fuse, not here.
                    Meta::None => (OUT_HEADER, -libc::ENOSYS),
                    Meta::Destroy => (OUT_HEADER, 0),
                };
                let body = n - OUT_HEADER;
                e.payload[..body].copy_from_slice(&self.out[OUT_HEADER..n]);
                e.body = body;
                return self.commit(i, err);
            }
        };
        match held {
            Ok((at, epoch, len, sqe)) => {
                (e.at, e.epoch, e.len, e.opcode) = (at, epoch, len, h.opcode);
                e.host = sqe.is_some();
                e.body = match h.opcode {
                    op::READ => len,
                    // fuse_write_out: made once the payload is written out.
                    op::WRITE => 8,
                    _ => 0,
                };
                let inline = std::mem::take(&mut e.inline);
                self.heap.push(Reverse((at, i)));
                match sqe {
                    Some(sqe) => self.push(sqe.into())?,
                    // Done in the loop (or under the model's lock): as if
                    // the ring had completed it.
                    None => self.host_done(i, inline)?,
                }
                Ok(())
            }
            Err(errno) => {
                e.body = 0;
                self.commit(i, -errno)
            }
        }
    }

    /// The host IO of entry `i` completed with `res`.
    fn host_done(&mut self, i: usize, res: i32) -> Result<()> {
        let e = &mut self.ents[i];
        e.host = false;
        if res < 0 || (res as usize) < e.len {
            self.s.counters.get().errors.fetch_add(1, Relaxed);
            e.err = if res < 0 { -res } else { libc::EIO };
        }
        if e.opcode == op::WRITE {
            write_out(e);
        }
        if e.overdue {
            return self.answer(i);
        }
        Ok(())
    }

    /// Serves until the filesystem is unmounted. `registered` is told
    /// once the entries are registered (or why not).
    // Long: the io_uring server's loop, on the measured path of every IO: the
    // ring, the timers and the entries are shared by every branch.
    fn run(&mut self, registered: &mut Option<std::sync::mpsc::Sender<Result<()>>>) -> Result<()> {
        self.register()?;
        if let Some(tx) = registered.take() {
            let _ = tx.send(Ok(()));
        }
        let mut waker = Waker::default();
        let mut done: Vec<(u64, i32)> = Vec::with_capacity(QUEUE_DEPTH * 4);
        let mut gone = 0;
        loop {
            done.clear();
            done.append(&mut self.backlog);
            done.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
            let t = now();
            for &(ud, res) in &done {
                let i = (ud & 0xffff_ffff) as usize;
                if ud & HOST != 0 {
                    self.host_done(i, res)?;
                } else if res < 0 {
                    // The connection is ending (unmounted): the entry is
                    // the kernel's no more.
                    gone += 1;
                    if gone == self.ents.len() {
                        return Ok(());
                    }
                } else {
                    self.request(i, t)?;
                }
            }
            // Every reply due.
            let t = now();
            let mut first = true;
            while let Some(&Reverse((at, i))) = self.heap.peek() {
                // The first reply of a wake-up on time; the next ones if
                // near enough (see `timer::joins`).
                // Flushes, and every IO while power cuts are played, only
                // at their time: an early answer would promise what the
                // medium does not hold yet.
                let early = !self.ents[i].strict
                    && (at <= t + waker.slack() || (!first && joins(t, at, self.ents[i].arrived)));
                if at > t && !early {
                    break;
                }
                first = false;
                self.heap.pop();
                if self.ents[i].host {
                    self.ents[i].overdue = true;
                } else {
                    self.answer(i)?;
                }
            }
            // Send the commits; wait for a completion or a little before
            // the next deadline.
            let next = self.heap.peek().map(|r| r.0.0);
            let r = match next.map(|due| (due, waker.sleep_until(t, due))) {
                None => self.enter(1, None),
                Some((due, None)) => {
                    match self.enter(0, None) {
                        Err(e) if !matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => {
                            bail!("io_uring_enter: {e}")
                        }
                        _ => {}
                    }
                    let strict = self.heap.peek().is_some_and(|r| self.ents[r.0.1].strict);
                    spin_until(if strict {
                        due
                    } else {
                        due.saturating_sub(waker.slack())
                    });
                    continue;
                }
                Some((_, Some(target))) => {
                    let d = target.saturating_sub(t);
                    let ts = types::Timespec::new()
                        .sec(d / 1_000_000_000)
                        .nsec((d % 1_000_000_000) as u32);
                    match self.enter(1, Some(&ts)) {
                        Err(e) if e.raw_os_error() == Some(libc::ETIME) => {
                            waker.woke(target, now());
                            Ok(())
                        }
                        r => r,
                    }
                }
            };
            match r {
                Ok(()) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => {}
                Err(e) => bail!("io_uring_enter: {e}"),
            }
        }
    }

    /// Submits what is queued and, with `want`, waits for that many
    /// completions (or the timeout); always runs the ring's task work.
    fn enter(&mut self, want: usize, ts: Option<&types::Timespec>) -> std::io::Result<()> {
        let n = self.ring.submission().len() as u32;
        let sub = self.ring.submitter();
        match ts {
            Some(ts) => {
                let args = types::SubmitArgs::new().timespec(ts);
                sub.submit_with_args(want, &args).map(|_| ())
            }
            None if want > 0 => sub.submit_and_wait(want).map(|_| ()),
            None => {
                // SAFETY: no argument is passed; GETEVENTS with nothing
                // to wait for runs deferred task work and returns.
                unsafe {
                    sub.enter::<libc::sigset_t>(n, 0, 1 /* IORING_ENTER_GETEVENTS */, None)
                }
                .map(|_| ())
            }
        }
    }
}
