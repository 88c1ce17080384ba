//! A running server engine: its process with the recipe that started it
//! (killed and started again by crashcheck), and the watch that kills a
//! server that stops answering.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::{ServerProcess, any_running, descendants};

/// How a server is started: called once at open and again by
/// [`Server::restart`], it builds the command afresh (a `Command` runs
/// once) on the same data directory, settings and port.
pub type Starter = Box<dyn Fn() -> Result<ServerProcess> + Send + Sync>;

/// A server engine's process with the recipe that started it, so that it
/// can be killed as a crash would kill it and started again on the same
/// data (`ampbench crashcheck`), and a watch that kills it when it stops
/// answering ([`Server::watch`]).
pub struct Server {
    process: std::sync::Mutex<ServerProcess>,
    watch: std::sync::Arc<Watch>,
    start: Starter,
}

/// What the server and its watchdog thread share.
struct Watch {
    /// The running server's pid (0 while none runs).
    pid: std::sync::atomic::AtomicU32,
    /// Set when the server goes: the watchdog ends.
    stop: std::sync::atomic::AtomicBool,
    /// Why the watchdog killed the server, once it did.
    hung: std::sync::Mutex<Option<String>>,
    /// Held by the watchdog from its last look at `stop` and `pid` to its
    /// kill, and by whoever stops or reaps the server while it changes
    /// them: a pid is never killed after it was reaped (and reused).
    kill: std::sync::Mutex<()>,
}

/// Kills `pid`'s process group and every process descending from it
/// (PostgreSQL's backends leave the group) with SIGKILL; returns them.
pub(super) fn kill_family(pid: u32) -> Vec<u32> {
    let victims = descendants(pid);
    // SAFETY: signals a server's process group (started in a group of its
    // own, whose id is its pid) and its descendants.
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
        for v in &victims {
            libc::kill(*v as i32, libc::SIGKILL);
        }
    }
    victims
}

/// Where a watched server takes new connections.
#[derive(Clone, Debug)]
pub enum Knock {
    /// TCP on 127.0.0.1, this port.
    Tcp(u16),
    /// Its unix socket (a server in a private network namespace).
    Unix(std::path::PathBuf),
}

/// Asks a server at `at` for its first byte: connect, send `hello` (what
/// makes it speak first), read. Ok(true): it answered; Ok(false):
/// nothing listens (a server down between a crash and its restart is not
/// hung); Err: it did not answer within `t`.
fn answers(at: &Knock, hello: &[u8], t: Duration) -> std::io::Result<bool> {
    use std::io::{ErrorKind, Read, Write};
    fn talk<S: Read + Write>(mut s: S, hello: &[u8]) -> std::io::Result<bool> {
        s.write_all(hello)?;
        let mut b = [0u8; 1];
        match s.read(&mut b) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(true),
            Err(e) => Err(e),
        }
    }
    let gone =
        |e: &std::io::Error| matches!(e.kind(), ErrorKind::ConnectionRefused | ErrorKind::NotFound);
    match at {
        Knock::Tcp(port) => {
            let to = std::net::SocketAddr::from(([127, 0, 0, 1], *port));
            let s = match std::net::TcpStream::connect_timeout(&to, t) {
                Ok(s) => s,
                Err(e) if gone(&e) => return Ok(false),
                Err(e) => return Err(e),
            };
            s.set_read_timeout(Some(t))?;
            s.set_write_timeout(Some(t))?;
            talk(s, hello)
        }
        Knock::Unix(path) => {
            // A unix connect waits while the server's backlog is full (a
            // hung server's fills): made on a thread of its own, given up
            // after `t` (the thread ends when the server is killed).
            let (tx, rx) = std::sync::mpsc::channel();
            let p = path.clone();
            std::thread::Builder::new()
                .name("server-knock".into())
                .spawn(move || {
                    let _ = tx.send(std::os::unix::net::UnixStream::connect(p));
                })?;
            let s = match rx.recv_timeout(t) {
                Ok(Ok(s)) => s,
                Ok(Err(e)) if gone(&e) => return Ok(false),
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(std::io::Error::new(
                        ErrorKind::TimedOut,
                        "the server's socket did not accept",
                    ));
                }
            };
            s.set_read_timeout(Some(t))?;
            s.set_write_timeout(Some(t))?;
            talk(s, hello)
        }
    }
}

impl Server {
    /// Starts the server with `start`.
    pub fn start(start: Starter) -> Result<Server> {
        let p = start()?;
        Ok(Server {
            watch: std::sync::Arc::new(Watch {
                pid: std::sync::atomic::AtomicU32::new(p.pid()),
                stop: std::sync::atomic::AtomicBool::new(false),
                hung: std::sync::Mutex::new(None),
                kill: std::sync::Mutex::new(()),
            }),
            process: std::sync::Mutex::new(p),
            start,
        })
    }

    /// Watches the server until it is dropped: every few seconds a new
    /// connection to `at` that sends `hello` must get an
    /// answer within `timeout`. When none comes, the server is hung
    /// (stopped, deadlocked, swapping to death): it is killed with its
    /// processes, so every client waiting on it gets an error at once,
    /// and [`Server::hung`] says why.
    pub fn watch(&self, name: &str, at: Knock, hello: &'static [u8], timeout: Duration) {
        let w = std::sync::Arc::clone(&self.watch);
        let name = name.to_string();
        let every = (timeout / 4).clamp(Duration::from_millis(200), Duration::from_secs(10));
        let spawned = std::thread::Builder::new()
            .name("server-watch".into())
            .spawn(move || {
                use std::sync::atomic::Ordering::SeqCst;
                loop {
                    let t0 = Instant::now();
                    while t0.elapsed() < every {
                        if w.stop.load(SeqCst) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    let pid = w.pid.load(SeqCst);
                    if pid == 0 || answers(&at, hello, timeout).is_ok() {
                        continue;
                    }
                    let _held = w.kill.lock();
                    if w.stop.load(SeqCst) || w.pid.load(SeqCst) != pid {
                        continue;
                    }
                    let why = format!(
                        "{name} did not answer a new connection within {} s (--server-timeout): killed",
                        timeout.as_secs_f64()
                    );
                    if let Ok(mut h) = w.hung.lock() {
                        *h = Some(why);
                    }
                    kill_family(pid);
                    return;
                }
            });
        // Without the thread the server is simply not watched; clients
        // still give up after their own timeouts.
        drop(spawned);
    }

    /// Why the server was killed as hung, if it was.
    pub fn hung(&self) -> Option<String> {
        self.watch.hung.lock().ok().and_then(|h| h.clone())
    }

    /// The running server's process id (it changes on restart).
    pub fn pid(&self) -> u32 {
        self.watch.pid.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn process(&self) -> Result<std::sync::MutexGuard<'_, ServerProcess>> {
        self.process
            .lock()
            .map_err(|_| anyhow::anyhow!("server lock poisoned"))
    }

    /// Stops the server cleanly (see [`ServerProcess::stop`]).
    pub fn stop(&self) -> Result<()> {
        {
            let _held = self.watch.kill.lock();
            self.watch
                .stop
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        self.process()?.stop()
    }

    /// Kills the server, its process group and every process descending
    /// from it (PostgreSQL's backends and helpers) with SIGKILL, as a
    /// process crash does, and waits until none of them runs.
    pub fn crash(&self) -> Result<()> {
        let mut p = self.process()?;
        let pid = p.pid();
        if pid == 0 {
            return Ok(());
        }
        {
            let _held = self.watch.kill.lock();
            self.watch.pid.store(0, std::sync::atomic::Ordering::SeqCst);
        }
        // PostgreSQL's backends leave the group (setsid): every
        // descendant is killed by pid, the group besides.
        let victims = kill_family(pid);
        p.reap()?;
        // The descendants are not our children: wait until none runs, so
        // the next start does not meet the old shared memory still in use.
        let t0 = Instant::now();
        while any_running(&victims) && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// Starts the server again on the same data directory after it died;
    /// returns once it admits connections, its crash recovery done.
    pub fn restart(&self) -> Result<()> {
        let mut p = self.process()?;
        p.stop()?;
        *p = (self.start)()?;
        self.watch
            .pid
            .store(p.pid(), std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.watch
            .stop
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
