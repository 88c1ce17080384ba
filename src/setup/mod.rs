//! What changes or inspects the machine for a run: `doctor`'s checks of
//! engines, devices, cgroups, cache dropping and direct IO. (Memory limits,
//! IO throttling and managed servers build on these.)

pub mod doctor;
pub mod server;
