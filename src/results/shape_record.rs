//! How a device launched a kernel, as its records keep it: the launch
//! shape that ran, and the shapes the protocol timed against it before
//! the run (the fastest was kept, where it beat the default beyond the
//! noise).

use serde::{Deserialize, Serialize};

/// A kernel's launch on a device: the shape that ran, and every shape
/// timed while the protocol calibrated (the fastest was kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeRecord {
    /// `792 blocks of 256 (one wave: 6 per multiprocessor, by occupancy)`.
    pub shape: String,
    /// Its stable id (`w16.u1.b1024.cover`), which `membw run --shape`
    /// takes; empty in records from before ids.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Where the shape was the one measured fastest on this GPU's
    /// architecture (the committed table), that GPU: nothing else was timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_on: Option<String>,
    /// Each shape timed, with its best rate then (GB/s); empty where the
    /// target had one shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tried: Vec<ShapeTried>,
    /// Where a faster shape was within the noise (this share of the
    /// default's time), so the default shape ran: the noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_within: Option<f64>,
}

/// One launch shape as calibration timed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeTried {
    pub shape: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    pub best_gb_s: f64,
    /// Whether it was checked on its own (`membw tune`: one call over an
    /// odd length, every element and the one past them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checked: bool,
    /// What the check found wrong; such a shape is never chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}
