//! The KV workload family: documents (key, value) in one table.

pub mod data;
pub mod micro;
pub mod pattern;
pub mod sql;
pub mod store;
pub mod ycsb;
