//! membw: sustainable memory bandwidth, measured the STREAM way and explained.

pub mod error;
pub mod kernels;
pub mod sys;
pub mod topology;
pub mod units;
