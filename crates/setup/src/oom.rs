//! Out-of-memory at the `--memory` limit, said in words.
//!
//! The kernel's OOM killer stays on: turning it off (cgroup v1
//! `memory.oom_control`) makes a write(2) that cannot charge its page
//! cache fail with ENOMEM instead, and RocksDB then aborts on its own
//! assertion; the engine waiting at the limit for dirty pages to be
//! written back on a throttled device is worse than a clear kill. So
//! [`oom_kills`] counts the group's OOM kills, and the runner fails a
//! step with that reason when the engine's process was the victim: a
//! server, or the engine host an embedded engine runs in
//! (`runner::host`); ampbench itself is never in the group.

use super::cgroup::{MemCgroup, Version};

/// OOM kills in the group so far (v1 `memory.oom_control` `oom_kill`, v2
/// `memory.events` `oom_kill`).
pub fn oom_kills(cg: &MemCgroup) -> Option<u64> {
    let file = match cg.version() {
        Version::V1 => "memory.oom_control",
        Version::V2 => "memory.events",
    };
    std::fs::read_to_string(cg.dir().join(file))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
}
