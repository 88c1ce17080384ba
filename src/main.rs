//! The ampbench command. All work is in the library; this prints the error
//! chain on one line and sets the exit code: 2 for bad input, 1 otherwise,
//! and 0 without a word when the reader of standard output went away.

/// mimalloc: the client's measured path allocates per row and per
/// statement inside the SQL drivers; glibc's malloc spent a fifth of the
/// LinkBench client's CPU there (profiled), mimalloc less.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let code = match ampbench::cli::main() {
        Ok(code) => code,
        // Whoever read our output has gone (`ampbench list | head -1`, a
        // test that dropped the pipe): nothing to say, and nowhere to say
        // it. A broken pipe to a server is an error like any other.
        Err(e) if stdout_gone(&e) => 0,
        Err(e) => {
            let usage = e
                .chain()
                .any(|c| c.downcast_ref::<ampbench::UsageError>().is_some());
            let msg: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            // One line, and no escape sequence from a server's text.
            eprintln!(
                "ampbench: error: {}",
                ampbench::sys::printable(&msg.join(": "))
            );
            if usage { 2 } else { 1 }
        }
    };
    ampbench::signals::exit(code);
}

/// The error is a broken pipe and standard output is a pipe whose reader
/// has closed it.
fn stdout_gone(e: &anyhow::Error) -> bool {
    let broken = e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    });
    let mut fd = libc::pollfd {
        fd: 1,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one pollfd it is given; a zero
    // timeout returns at once.
    broken && unsafe { libc::poll(&mut fd, 1, 0) } == 1 && fd.revents & libc::POLLERR != 0
}
