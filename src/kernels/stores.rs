//! The store instructions a user asks for, before the last-level cache
//! decides what `auto` becomes (`plan::resolve_stores`).

use serde::{Deserialize, Serialize};

/// The store instructions asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoresRequest {
    /// Non-temporal when each array is larger than the last-level cache.
    Auto,
    Regular,
    Nt,
}

impl StoresRequest {
    pub fn name(self) -> &'static str {
        match self {
            StoresRequest::Auto => "auto",
            StoresRequest::Regular => "regular",
            StoresRequest::Nt => "nt",
        }
    }
}

impl std::fmt::Display for StoresRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
