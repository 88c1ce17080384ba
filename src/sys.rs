//! Small facts about this process and machine that every layer uses,
//! at the bottom of the pipeline: how many malloc arenas a run uses, and
//! random credentials and names from the kernel's random source.

use anyhow::{Context, Result};

/// glibc malloc arenas a run uses: one per CPU, at least 2.
pub fn arenas() -> i32 {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2)) as i32
}

/// A password for one run's benchmark user: 16 bytes from the kernel's
/// random source, as hex. No credential is fixed in the code, so a server
/// of ours admits nobody who did not read its process's memory.
pub fn random_password() -> Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .context("reading /dev/urandom for a password")?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}
