//! The FUSE wire protocol, as much of it as a filesystem of one file
//! needs (`linux/fuse.h`, protocol 7.x): the headers, the replies to the
//! operations that are not IO, and the layout of the IO operations'
//! arguments. The loops (`devloop`, `uring`) carry the bytes; this file
//! knows what they mean. Native byte order, as the kernel's.

use std::time::Duration;

/// `struct fuse_in_header`'s size.
pub const IN_HEADER: usize = 40;
/// `struct fuse_out_header`'s size.
pub const OUT_HEADER: usize = 16;
/// `struct fuse_read_in` / `fuse_write_in`'s size.
pub const RW_IN: usize = 40;
/// The kernel's smallest read buffer for `/dev/fuse`.
pub const MIN_READ_BUFFER: usize = 8192;

/// The operations this filesystem answers (`enum fuse_opcode`).
pub mod op {
    pub const LOOKUP: u32 = 1;
    pub const FORGET: u32 = 2;
    pub const GETATTR: u32 = 3;
    pub const SETATTR: u32 = 4;
    pub const OPEN: u32 = 14;
    pub const READ: u32 = 15;
    pub const WRITE: u32 = 16;
    pub const STATFS: u32 = 17;
    pub const RELEASE: u32 = 18;
    pub const FSYNC: u32 = 20;
    pub const FLUSH: u32 = 25;
    pub const INIT: u32 = 26;
    pub const OPENDIR: u32 = 27;
    pub const READDIR: u32 = 28;
    pub const RELEASEDIR: u32 = 29;
    pub const FSYNCDIR: u32 = 30;
    pub const ACCESS: u32 = 34;
    pub const INTERRUPT: u32 = 36;
    pub const DESTROY: u32 = 38;
    pub const BATCH_FORGET: u32 = 42;
    pub const FALLOCATE: u32 = 43;
}

/// `FUSE_INIT` flags (`flags`, then `flags2` as bits 32..).
mod init {
    pub const ASYNC_READ: u64 = 1 << 0;
    pub const BIG_WRITES: u64 = 1 << 5;
    pub const ASYNC_DIO: u64 = 1 << 15;
    pub const MAX_PAGES: u64 = 1 << 22;
    pub const INIT_EXT: u64 = 1 << 30;
    pub const OVER_IO_URING: u64 = 1 << 41;
}

/// `FOPEN_DIRECT_IO | FOPEN_PARALLEL_DIRECT_WRITES`.
const OPEN_FLAGS: u32 = (1 << 0) | (1 << 6);

/// The root directory's and the one file's node ids.
pub const ROOT: u64 = 1;
/// The served file's node id.
pub const FILE: u64 = 2;

/// Reads a native-endian `u32` at `at` (0 past the end).
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_ne_bytes)
        .unwrap_or(0)
}

/// Reads a native-endian `u64` at `at` (0 past the end).
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_ne_bytes)
        .unwrap_or(0)
}

/// Writes a request's reply header: `len` bytes in all, `error` a
/// negative errno or 0.
pub fn out_header(b: &mut [u8], len: usize, error: i32, unique: u64) {
    b[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
    b[4..8].copy_from_slice(&error.to_ne_bytes());
    b[8..16].copy_from_slice(&unique.to_ne_bytes());
}

/// A request's header (`struct fuse_in_header`), read.
#[derive(Clone, Copy, Debug)]
pub struct InHeader {
    /// What it asks.
    pub opcode: u32,
    /// Its id, echoed in the reply.
    pub unique: u64,
    /// The node it is about.
    pub nodeid: u64,
}

impl InHeader {
    /// Parses the first [`IN_HEADER`] bytes.
    pub fn parse(b: &[u8]) -> InHeader {
        InHeader {
            opcode: u32_at(b, 4),
            unique: u64_at(b, 8),
            nodeid: u64_at(b, 16),
        }
    }
}

/// An IO request's arguments (`fuse_read_in`, `fuse_write_in`): the
/// offset and the size.
pub fn rw_args(arg: &[u8]) -> (u64, u32) {
    (u64_at(arg, 8), u32_at(arg, 16))
}

/// `fuse_fallocate_in`: offset, length, mode.
pub fn fallocate_args(arg: &[u8]) -> (u64, u64, u32) {
    (u64_at(arg, 8), u64_at(arg, 16), u32_at(arg, 24))
}

/// What the filesystem's one file looks like.
#[derive(Clone, Debug)]
pub struct Shape {
    /// The file's name.
    pub name: Vec<u8>,
    /// The file's size (fixed).
    pub size: u64,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// The largest IO asked of the kernel.
    pub max_io: u32,
    /// Background requests the kernel may keep in flight.
    pub max_background: u16,
    /// Ask for requests over io_uring when the kernel offers it.
    pub want_uring: bool,
}

/// How a request that is not IO was answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Meta {
    /// Reply with `len` bytes of `out` (the header included).
    Reply(usize),
    /// No reply is due (forgets, interrupts).
    None,
    /// The kernel gave the filesystem up: stop.
    Destroy,
}

/// What the kernel and the server agreed at `FUSE_INIT`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Agreed {
    /// Requests will come over io_uring (once every queue has an entry).
    pub uring: bool,
    /// The kernel's protocol minor version.
    pub minor: u32,
}

const TTL: Duration = Duration::from_secs(3600);

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

/// `struct fuse_attr` (88 bytes) at `at`.
fn attr(b: &mut [u8], at: usize, s: &Shape, ino: u64) {
    b[at..at + 88].fill(0);
    let file = ino == FILE;
    put64(b, at, ino);
    put64(b, at + 8, if file { s.size } else { 0 });
    put64(b, at + 16, if file { s.size / 512 } else { 0 });
    let mode = if file {
        libc::S_IFREG | 0o600
    } else {
        libc::S_IFDIR | 0o700
    };
    put32(b, at + 60, mode);
    put32(b, at + 64, if file { 1 } else { 2 });
    put32(b, at + 68, s.uid);
    put32(b, at + 72, s.gid);
    put32(b, at + 80, 4096);
}

/// The machine's page size (max_pages is counted in pages).
fn page_size() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u32 } else { 4096 }
}

/// Answers a request that is not IO (`h`, its first argument `arg`) in
/// `out` (at least [`MIN_READ_BUFFER`] bytes); `agreed` is set at
/// `FUSE_INIT`. Unknown operations get `ENOSYS`, which the kernel
/// remembers for most of them.
// Long: one match arm per FUSE metadata operation (the kernel's protocol),
// each answer beside its opcode.
pub fn meta(s: &Shape, h: &InHeader, arg: &[u8], out: &mut [u8], agreed: &mut Agreed) -> Meta {
    let ok = |out: &mut [u8], body: usize| {
        out_header(out, OUT_HEADER + body, 0, h.unique);
        Meta::Reply(OUT_HEADER + body)
    };
    let err = |out: &mut [u8], e: i32| {
        out_header(out, OUT_HEADER, -e, h.unique);
        Meta::Reply(OUT_HEADER)
    };
    let o = OUT_HEADER;
    match h.opcode {
        op::INIT => {
            let (major, minor) = (u32_at(arg, 0), u32_at(arg, 4));
            let offered = u32_at(arg, 12) as u64 | ((u32_at(arg, 16) as u64) << 32);
            if major != 7 {
                // The kernel retries with the major we name.
                out[o..o + 64].fill(0);
                put32(out, o, 7);
                return ok(out, 8);
            }
            let mut want = init::ASYNC_READ
                | init::BIG_WRITES
                | init::ASYNC_DIO
                | init::MAX_PAGES
                | init::INIT_EXT;
            if s.want_uring {
                want |= init::OVER_IO_URING;
            }
            let flags = offered & want;
            agreed.uring = flags & init::OVER_IO_URING != 0;
            agreed.minor = minor;
            out[o..o + 64].fill(0);
            put32(out, o, 7);
            put32(out, o + 4, minor);
            put32(out, o + 8, u32_at(arg, 8));
            put32(out, o + 12, flags as u32);
            out[o + 16..o + 18].copy_from_slice(&s.max_background.to_ne_bytes());
            out[o + 18..o + 20].copy_from_slice(&s.max_background.to_ne_bytes());
            put32(out, o + 20, s.max_io);
            put32(out, o + 24, 1);
            out[o + 28..o + 30].copy_from_slice(&((s.max_io / page_size()) as u16).to_ne_bytes());
            put32(out, o + 32, (flags >> 32) as u32);
            // Before 7.23 the reply is 24 bytes.
            ok(out, if minor < 23 { 24 } else { 64 })
        }
        op::LOOKUP => {
            let name = arg.split(|c| *c == 0).next().unwrap_or_default();
            if h.nodeid != ROOT || name != s.name.as_slice() {
                return err(out, libc::ENOENT);
            }
            out[o..o + 40].fill(0);
            put64(out, o, FILE);
            put64(out, o + 16, TTL.as_secs());
            put64(out, o + 24, TTL.as_secs());
            attr(out, o + 40, s, FILE);
            ok(out, 128)
        }
        op::GETATTR | op::SETATTR => {
            // The size is fixed; nothing else is kept.
            out[o..o + 16].fill(0);
            put64(out, o, TTL.as_secs());
            attr(out, o + 16, s, h.nodeid);
            ok(out, 104)
        }
        op::OPEN => {
            if h.nodeid != FILE {
                return err(out, libc::EISDIR);
            }
            // No page cache of the kernel's for the served file (the
            // host file below has it), and writes in parallel.
            out[o..o + 16].fill(0);
            put32(out, o + 8, OPEN_FLAGS);
            ok(out, 16)
        }
        op::OPENDIR => {
            if h.nodeid != ROOT {
                return err(out, libc::ENOTDIR);
            }
            out[o..o + 16].fill(0);
            ok(out, 16)
        }
        op::READDIR => {
            let (offset, size) = (u64_at(arg, 8), u32_at(arg, 16) as usize);
            let entries: [(u64, u32, &[u8]); 3] = [
                (ROOT, libc::DT_DIR as u32, b"."),
                (ROOT, libc::DT_DIR as u32, b".."),
                (FILE, libc::DT_REG as u32, s.name.as_slice()),
            ];
            let cap = size.min(out.len() - o);
            let mut at = 0;
            for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
                let rec = (24 + name.len()).div_ceil(8) * 8;
                if at + rec > cap {
                    break;
                }
                let b = &mut out[o + at..o + at + rec];
                b.fill(0);
                put64(b, 0, *ino);
                put64(b, 8, i as u64 + 1);
                put32(b, 16, name.len() as u32);
                put32(b, 20, *kind);
                b[24..24 + name.len()].copy_from_slice(name);
                at += rec;
            }
            ok(out, at)
        }
        op::STATFS => {
            out[o..o + 80].fill(0);
            put64(out, o, s.size / 4096);
            put32(out, o + 40, 4096);
            put32(out, o + 44, 255);
            put32(out, o + 48, 4096);
            ok(out, 80)
        }
        // A close, not a cache flush; releases keep nothing.
        op::FLUSH | op::RELEASE | op::RELEASEDIR | op::FSYNCDIR => ok(out, 0),
        op::ACCESS => ok(out, 0),
        op::FORGET | op::BATCH_FORGET | op::INTERRUPT => Meta::None,
        op::DESTROY => {
            ok(out, 0);
            Meta::Destroy
        }
        _ => err(out, libc::ENOSYS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        Shape {
            name: b"disk.img".to_vec(),
            size: 1 << 30,
            uid: 0,
            gid: 0,
            max_io: 1 << 20,
            max_background: 128,
            want_uring: true,
        }
    }

    fn header(opcode: u32, nodeid: u64) -> InHeader {
        InHeader {
            opcode,
            unique: 77,
            nodeid,
        }
    }

    #[test]
    fn lookup_finds_only_the_file() {
        let s = shape();
        let mut out = vec![0u8; MIN_READ_BUFFER];
        let mut a = Agreed::default();
        let r = meta(
            &s,
            &header(op::LOOKUP, ROOT),
            b"disk.img\0",
            &mut out,
            &mut a,
        );
        assert_eq!(r, Meta::Reply(OUT_HEADER + 128));
        assert_eq!(u32_at(&out, 0), (OUT_HEADER + 128) as u32);
        assert_eq!(u64_at(&out, 8), 77);
        assert_eq!(u64_at(&out, OUT_HEADER), FILE);
        // The attributes' size.
        assert_eq!(u64_at(&out, OUT_HEADER + 40 + 8), 1 << 30);
        let r = meta(&s, &header(op::LOOKUP, ROOT), b"other\0", &mut out, &mut a);
        assert_eq!(r, Meta::Reply(OUT_HEADER));
        assert_eq!(u32_at(&out, 4) as i32, -libc::ENOENT);
    }

    #[test]
    fn init_takes_uring_only_when_offered() {
        let s = shape();
        let mut out = vec![0u8; MIN_READ_BUFFER];
        let mut arg = [0u8; 64];
        put32(&mut arg, 0, 7);
        put32(&mut arg, 4, 44);
        put32(&mut arg, 12, (init::ASYNC_DIO | init::INIT_EXT) as u32);
        let mut a = Agreed::default();
        meta(&s, &header(op::INIT, 0), &arg, &mut out, &mut a);
        assert!(!a.uring);
        assert_eq!(u32_at(&out, OUT_HEADER + 20), 1 << 20);
        put32(&mut arg, 16, (init::OVER_IO_URING >> 32) as u32);
        meta(&s, &header(op::INIT, 0), &arg, &mut out, &mut a);
        assert!(a.uring);
        assert_eq!(
            u32_at(&out, OUT_HEADER + 32) as u64,
            init::OVER_IO_URING >> 32
        );
        assert_eq!(
            u32_at(&out, OUT_HEADER + 12) as u64 & init::ASYNC_DIO,
            init::ASYNC_DIO
        );
    }

    #[test]
    fn readdir_lists_three_entries_then_none() {
        let s = shape();
        let mut out = vec![0u8; MIN_READ_BUFFER];
        let mut a = Agreed::default();
        let mut arg = [0u8; 40];
        put32(&mut arg, 16, 4096);
        let Meta::Reply(n) = meta(&s, &header(op::READDIR, ROOT), &arg, &mut out, &mut a) else {
            panic!("no reply")
        };
        // ".", ".." (32 bytes each) and "disk.img" (24 + 8).
        assert_eq!(n, OUT_HEADER + 32 + 32 + 32);
        put64(&mut arg, 8, 3);
        let r = meta(&s, &header(op::READDIR, ROOT), &arg, &mut out, &mut a);
        assert_eq!(r, Meta::Reply(OUT_HEADER));
    }
}
