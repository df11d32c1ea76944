//! Which schema version a line or a document was written in, and the
//! refusal of one this membw does not read.

use super::SCHEMA_VERSION;

/// Refuses a line written by another schema version, by name.
pub fn check_version(text: &str) -> Result<(), String> {
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u32,
    }
    match serde_json::from_str::<Version>(text) {
        Ok(v) => known_version(v.schema_version),
        _ => Ok(()),
    }
}

/// Refuses a document of another schema version, by name.
pub fn known_version(version: u32) -> Result<(), String> {
    if version == SCHEMA_VERSION {
        Ok(())
    } else {
        Err(format!(
            "schema_version {version} is not the version {SCHEMA_VERSION} this membw reads"
        ))
    }
}
