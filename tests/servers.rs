//! The tests that start servers (MariaDB, MyRocks, Galera, PostgreSQL)
//! or reach them in network namespaces: LinkBench, the insert benchmark,
//! crash checks, `--target`, `--server-bin`, the seed plans.
//!
//! One test binary of a few (see Cargo.toml's `[[test]]`): each module was
//! a binary of its own; `scripts/test.sh` still runs each module in a
//! process of its own, so they share nothing at run time.

mod common;

mod crashcheck;
mod insert;
mod linkbench;
mod linkbench_runs;
mod loopback_servers;
mod mariadb_wire;
mod model_sweep;
mod seeds;
mod server_access;
mod server_bin;
mod targets;
