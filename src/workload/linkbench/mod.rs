//! LinkBench: the social-graph workload (see docs/linkbench.md).

pub mod dist;
