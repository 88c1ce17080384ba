//! A private network namespace for servers that must talk to each other
//! over TCP (a Galera cluster's group communication, state transfers):
//! made by ampbench, with only its loopback up, so no user of the machine
//! but root (and the servers' own, through them) can reach a port in it (a Galera node admits any peer that
//! connects to its group port, and sends it the whole database).
//!
//! The namespace has no name and no mount: it lives while a descriptor of
//! it is open (ours) or a process runs in it (the servers, which die with
//! ampbench), so nothing outlives the run. Servers enter it between fork
//! and exec; ampbench's own threads enter it only to make a connection
//! (`setns` changes the calling thread alone), and the connected socket
//! stays in it after the thread has returned to the host's namespace.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

use anyhow::{Context, Result, anyhow, bail};

/// A private network namespace with its loopback up.
pub struct PrivateNet {
    net: OwnedFd,
}

/// Opens `path` (a namespace file) read-only, close-on-exec.
fn open_ns(path: &str) -> std::io::Result<OwnedFd> {
    let c = std::ffi::CString::new(path).map_err(std::io::Error::other)?;
    // SAFETY: a NUL-terminated path; the descriptor is owned on success.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sets the loopback interface of the calling thread's namespace up.
fn loopback_up() -> std::io::Result<()> {
    // SAFETY: a socket used for two ioctls on a zeroed, NUL-terminated
    // ifreq, and closed by OwnedFd.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let s = OwnedFd::from_raw_fd(s);
        let mut req: libc::ifreq = std::mem::zeroed();
        for (d, b) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *b as libc::c_char;
        }
        if libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS, &req) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Moves the calling thread into the namespace `fd`.
fn enter(fd: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: setns on a namespace descriptor we own; it changes only the
    // calling thread.
    if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

impl PrivateNet {
    /// Makes the namespace (root only: it needs CAP_SYS_ADMIN), on a
    /// thread of its own that ends once the namespace is open.
    pub fn new() -> Result<PrivateNet> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            bail!("a private network namespace needs root (CAP_SYS_ADMIN)");
        }
        let net = std::thread::Builder::new()
            .name("netns".into())
            .spawn(|| -> std::io::Result<OwnedFd> {
                // SAFETY: unshare of the network namespace changes only
                // this thread, which ends right after.
                if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                loopback_up()?;
                open_ns("/proc/thread-self/ns/net")
            })
            .context("cannot start a thread")?
            .join()
            .map_err(|_| anyhow!("the namespace thread panicked"))?
            .context("cannot make a private network namespace")?;
        Ok(PrivateNet { net })
    }

    /// Makes `cmd` start in the namespace (a pre-exec `setns`), then as
    /// `user` (uid, gid) when given: the standard library changes the
    /// user before any pre-exec step, which would leave none the right
    /// to enter, so the change is made here instead. Call it before the
    /// steps that must follow the change (the parent-death signal, which
    /// a change of user clears).
    pub fn enter_on_exec(&self, cmd: &mut Command, user: Option<(u32, u32)>) -> Result<()> {
        let fd = self
            .net
            .try_clone()
            .context("cannot duplicate a descriptor")?;
        // SAFETY: setns, setgroups, setgid and setuid are
        // async-signal-safe and allocate nothing; the descriptor was
        // duplicated before fork.
        unsafe {
            cmd.pre_exec(move || {
                enter(&fd)?;
                if let Some((uid, gid)) = user {
                    let groups = [gid];
                    if libc::setgroups(1, groups.as_ptr()) != 0
                        || libc::setgid(gid) != 0
                        || libc::setuid(uid) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// Runs `f` (a connect) with the calling thread in the namespace, and
    /// brings the thread back to the namespace it was in, whatever `f`
    /// returned. Sockets `f` made stay in the private namespace.
    pub fn within<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        let home = open_ns("/proc/thread-self/ns/net")
            .context("cannot open this thread's network namespace")?;
        enter(&self.net).context("cannot enter the servers' network namespace")?;
        /// Brings the thread home on every path out, panics included.
        struct Home(OwnedFd);
        impl Drop for Home {
            fn drop(&mut self) {
                if enter(&self.0).is_err() {
                    // A thread that cannot return would make every later
                    // socket of it in the private namespace: nothing
                    // sensible is left to do.
                    std::process::abort();
                }
            }
        }
        let _home = Home(home);
        Ok(f())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_in_the_namespace_is_not_reachable_from_outside() {
        if unsafe { libc::geteuid() } != 0 {
            crate::testing::skip(
                "a_port_in_the_namespace_is_not_reachable_from_outside",
                "needs root to make a network namespace",
            );
            return;
        }
        let net = PrivateNet::new().unwrap();
        let l = net
            .within(|| std::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap()
            .unwrap();
        let port = l.local_addr().unwrap().port();
        l.set_nonblocking(true).unwrap();
        let arrived = || match l.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(e) => panic!("{e}"),
        };
        // From the host's namespace the connection does not reach it
        // (another service may hold the same port number there).
        let _outside = std::net::TcpStream::connect(("127.0.0.1", port));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!arrived(), "reached a private port from the host");
        // From within: it does.
        let _inside = net
            .within(|| std::net::TcpStream::connect(("127.0.0.1", port)))
            .unwrap()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(arrived(), "the connection from within did not arrive");
        // And this thread is home again.
        let _again = std::net::TcpStream::connect(("127.0.0.1", port));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!arrived(), "the thread stayed in the private namespace");
    }
}
