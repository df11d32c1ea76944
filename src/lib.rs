//! membw: sustainable memory bandwidth, measured the STREAM way and explained.

pub mod error;
pub mod kernels;
pub mod sys;
pub mod topology;
pub mod units;
pub mod memory;
pub mod placement;
pub mod protocol;
pub mod team;
pub mod report;
pub mod cli;
