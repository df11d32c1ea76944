//! membw: sustainable memory bandwidth, measured the STREAM way and explained.

pub mod cli;
pub mod error;
pub mod experiments;
pub mod kernels;
pub mod memory;
pub mod peak;
pub mod placement;
pub mod plan;
pub mod protocol;
pub mod report;
pub mod sys;
pub mod team;
pub mod topology;
pub mod units;
