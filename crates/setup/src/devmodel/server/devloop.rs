//! One event loop over a non-blocking `/dev/fuse`: it takes every request
//! waiting (while it has room for one more IO in flight), does the host
//! file's IO at once, holds each reply in a heap until its due time,
//! answers every reply due, and waits in `ppoll` for the next request or
//! a little before the next deadline (then spins the rest, see
//! [`super::timer`]). The server's loop without io_uring (`fuse-dev`),
//! and the control loop beside the rings (`uring`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use anyhow::{Result, bail};

use super::proto::{self, Agreed, InHeader, Meta, OUT_HEADER, RW_IN, Shape, op};
use super::timer::{self, Waker, joins, spin_until};
use super::{MAX_IO, Nanos, Op, QUEUE_DEPTH, Shared, now};

/// A request buffer's size: the largest write with its headers.
const BUF: usize = MAX_IO as usize + proto::IN_HEADER + RW_IN + 4096;

/// An IO held until it is due: its buffer holds the reply.
struct Slot {
    buf: Vec<u8>,
    unique: u64,
    /// The reply's length (its header included).
    reply: usize,
    /// Answered at its time, never early (a flush; any IO while power
    /// cuts are played).
    strict: bool,
    arrived: Nanos,
    at: Nanos,
    epoch: u64,
}

/// The loop over `/dev/fuse`.
pub struct Loop {
    s: Arc<Shared>,
    shape: Shape,
    fd: Arc<OwnedFd>,
    /// Set at FUSE_INIT: what the kernel and the server agreed.
    pub agreed: Arc<Mutex<Option<Agreed>>>,
}

/// What a `read` or `write` on `/dev/fuse` came to.
enum Io {
    Done(usize),
    /// Nothing waiting (or the request is gone).
    Again,
    /// The filesystem was unmounted.
    Gone,
}

fn io_result(r: isize) -> Result<Io> {
    if r >= 0 {
        return Ok(Io::Done(r as usize));
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        // ENOENT: the request was interrupted or aborted meanwhile.
        Some(libc::EAGAIN | libc::EINTR | libc::ENOENT) => Ok(Io::Again),
        Some(libc::ENODEV) => Ok(Io::Gone),
        _ => bail!("/dev/fuse: {e}"),
    }
}

impl Loop {
    /// A loop for `shape` on the mounted `fd`.
    pub fn new(s: Arc<Shared>, shape: Shape, fd: Arc<OwnedFd>) -> Result<Loop> {
        Ok(Loop {
            s,
            shape,
            fd,
            agreed: Arc::new(Mutex::new(None)),
        })
    }

    fn write(&self, b: &[u8]) -> Result<Io> {
        // SAFETY: a valid buffer of b.len() bytes on an open descriptor.
        io_result(unsafe { libc::write(self.fd.as_raw_fd(), b.as_ptr().cast(), b.len()) })
    }

    /// Answers a held IO (or fails it, power cut since).
    fn answer(&self, slot: &mut Slot) -> Result<Io> {
        match self.s.answer(slot.at, slot.epoch) {
            Ok(()) => {
                let n = slot.reply;
                proto::out_header(&mut slot.buf, n, 0, slot.unique);
                self.write(&slot.buf[..n])
            }
            Err(e) => self.fail(&mut slot.buf, slot.unique, e),
        }
    }

    fn fail(&self, buf: &mut [u8], unique: u64, errno: i32) -> Result<Io> {
        proto::out_header(buf, OUT_HEADER, -errno, unique);
        self.write(&buf[..OUT_HEADER])
    }

    /// Serves until the filesystem is unmounted.
    // Long: the FUSE server's event loop, on the measured path of every IO:
    // its state (slots, free list, timer heap, waker, the io_uring flag and
    // protocol version agreed) is shared by every branch of one loop.
    pub fn run(self) -> Result<()> {
        timer::realtime();
        let mut slots: Vec<Slot> = (0..QUEUE_DEPTH)
            .map(|_| Slot {
                // Zeroed on demand: pages are touched as IOs need them.
                buf: vec![0; BUF],
                unique: 0,
                reply: 0,
                strict: false,
                arrived: 0,
                at: 0,
                epoch: 0,
            })
            .collect();
        let mut free: Vec<usize> = (0..QUEUE_DEPTH).rev().collect();
        let mut heap: BinaryHeap<Reverse<(Nanos, usize)>> = BinaryHeap::with_capacity(QUEUE_DEPTH);
        let mut waker = Waker::default();
        let mut out = vec![0u8; proto::MIN_READ_BUFFER];
        let mut agreed = Agreed::default();
        loop {
            // Every request waiting, while there is room.
            while let Some(&i) = free.last() {
                let slot = &mut slots[i];
                // SAFETY: a valid buffer of its length on an open descriptor.
                let r = unsafe {
                    libc::read(
                        self.fd.as_raw_fd(),
                        slot.buf.as_mut_ptr().cast(),
                        slot.buf.len(),
                    )
                };
                let n = match io_result(r)? {
                    Io::Done(n) => n,
                    Io::Again => break,
                    Io::Gone => return Ok(()),
                };
                let t = now();
                let h = InHeader::parse(&slot.buf[..n]);
                slot.unique = h.unique;
                let arg = proto::IN_HEADER;
                let held = match h.opcode {
                    op::READ => {
                        let (off, size) = proto::rw_args(&slot.buf[arg..]);
                        let size = (size as usize).min(slot.buf.len() - OUT_HEADER);
                        self.s
                            .read_now(off, &mut slot.buf[OUT_HEADER..OUT_HEADER + size], t)
                            .map(|(len, at, epoch)| (OUT_HEADER + len, at, epoch))
                    }
                    op::WRITE => {
                        let (off, size) = proto::rw_args(&slot.buf[arg..]);
                        let d = arg + RW_IN;
                        let end = (d + size as usize).min(n);
                        self.s
                            .write_now(off, &slot.buf[d..end], t)
                            .map(|(at, epoch)| {
                                // fuse_write_out: the size written.
                                slot.buf[OUT_HEADER..OUT_HEADER + 8].fill(0);
                                slot.buf[OUT_HEADER..OUT_HEADER + 4]
                                    .copy_from_slice(&((end - d) as u32).to_ne_bytes());
                                (OUT_HEADER + 8, at, epoch)
                            })
                    }
                    op::FSYNC => self
                        .s
                        .serve(Op::Flush, 0, 0, t, |_| Ok(()))
                        .map(|(at, epoch)| (OUT_HEADER, at, epoch)),
                    op::FALLOCATE => {
                        let (off, len, mode) = proto::fallocate_args(&slot.buf[arg..]);
                        let r = match self.s.fallocate(off, len, mode as i32) {
                            Ok(()) => {
                                proto::out_header(&mut out, OUT_HEADER, 0, h.unique);
                                self.write(&out[..OUT_HEADER])
                            }
                            Err(e) => self.fail(&mut out, h.unique, e),
                        };
                        if let Io::Gone = r? {
                            return Ok(());
                        }
                        continue;
                    }
                    _ => {
                        let m =
                            proto::meta(&self.shape, &h, &slot.buf[arg..n], &mut out, &mut agreed);
                        match m {
                            Meta::Reply(len) => {
                                if let Io::Gone = self.write(&out[..len])? {
                                    return Ok(());
                                }
                            }
                            Meta::None => {}
                            Meta::Destroy => return Ok(()),
                        }
                        // Told only once the reply is written: the rings
                        // register after it (before, the kernel refuses).
                        if h.opcode == op::INIT {
                            *self.agreed.lock().unwrap_or_else(|e| e.into_inner()) = Some(agreed);
                        }
                        continue;
                    }
                };
                match held {
                    Ok((reply, at, epoch)) => {
                        (slot.reply, slot.arrived, slot.at, slot.epoch) = (reply, t, at, epoch);
                        slot.strict = h.opcode == op::FSYNC || self.s.shadow.is_some();
                        free.pop();
                        heap.push(Reverse((at, i)));
                    }
                    Err(e) => {
                        if let Io::Gone = self.fail(&mut out, h.unique, e)? {
                            return Ok(());
                        }
                    }
                }
            }
            // Every reply due.
            let t = now();
            let mut first = true;
            while let Some(&Reverse((at, i))) = heap.peek() {
                // The first reply of a wake-up on time; the next ones if
                // near enough (see `timer::joins`).
                // Flushes, and every IO while power cuts are played, only
                // at their time: an early answer would promise what the
                // medium does not hold yet.
                let early = !slots[i].strict
                    && (at <= t + waker.slack() || (!first && joins(t, at, slots[i].arrived)));
                if at > t && !early {
                    break;
                }
                first = false;
                heap.pop();
                if let Io::Gone = self.answer(&mut slots[i])? {
                    return Ok(());
                }
                free.push(i);
            }
            // The next request, or a little before the next deadline.
            let next = heap.peek().map(|r| r.0.0);
            let target = match next {
                Some(due) => match waker.sleep_until(t, due) {
                    Some(target) => Some(target),
                    None => {
                        let strict = heap.peek().is_some_and(|r| slots[r.0.1].strict);
                        spin_until(if strict {
                            due
                        } else {
                            due.saturating_sub(waker.slack())
                        });
                        continue;
                    }
                },
                None => None,
            };
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ts = target.map(|at| {
                let d = at.saturating_sub(t);
                libc::timespec {
                    tv_sec: (d / 1_000_000_000) as libc::time_t,
                    tv_nsec: (d % 1_000_000_000) as libc::c_long,
                }
            });
            // SAFETY: one valid pollfd (or none, when every slot is
            // held), a valid timespec or null.
            let r = unsafe {
                libc::ppoll(
                    &mut pfd,
                    if free.is_empty() { 0 } else { 1 },
                    ts.as_ref().map_or(std::ptr::null(), |t| t),
                    std::ptr::null(),
                )
            };
            if r == 0
                && let Some(target) = target
            {
                waker.woke(target, now());
            }
        }
    }
}
