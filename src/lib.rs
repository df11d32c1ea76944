//! membw: sustainable memory bandwidth, measured the STREAM way and explained.
//!
//! The data flows one way: `cli` turns arguments into settings; `topology`
//! reads the machine; `placement` and `memory` resolve where threads and
//! pages go; `plan` resolves settings into plans; the `engine` hands plans to
//! a measurement source (`protocol` with the `kernels` on a `team`, or a
//! fake) and turns what comes back into the `results` model, which `report`
//! renders. See docs/guide/architecture.md.

pub mod backend;
pub mod cli;
pub mod engine;
pub mod error;
pub mod foreign;
pub mod health;
pub mod kernels;
pub mod latency;
pub mod memory;
pub mod observe;
pub mod peak;
pub mod placement;
pub mod plan;
pub mod protocol;
pub mod ranks;
pub mod report;
pub mod results;
pub mod sys;
pub mod team;
pub mod topology;
pub mod trust;
pub mod units;
pub mod untrusted;
