//! Typed readers of membw's other documents: baselines (any document with
//! a `kind` and a `schema_version`, read into its own type) and the inputs
//! of a fleet's history (check verdicts and run documents). Like every
//! reader in `results`, they build typed values and never walk untyped
//! JSON, so a renamed field fails to compile or fails the round-trip tests
//! instead of silently reading nothing.

use super::RunReport;
use crate::kernels::KernelId;
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Why a document could not be read as the kind asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum TypedError {
    /// Not this kind at all: not JSON, another document, a newer schema.
    NotThisKind(String),
    /// A field that cannot be read: its path in the file (`scopes[0].elements`,
    /// `.` for the document itself) and why.
    Field { path: String, problem: String },
}

/// What every versioned membw document opens with.
#[derive(Deserialize)]
struct DocumentHead {
    kind: Option<String>,
    schema_version: Option<u64>,
}

/// Reads `text` as a `kind` document of schema `schema` into `T`,
/// refusing another document or a newer schema before reading the rest.
pub fn document<T: DeserializeOwned>(text: &str, kind: &str, schema: u64) -> Result<T, TypedError> {
    let not = TypedError::NotThisKind;
    let head: DocumentHead =
        serde_json::from_str(text).map_err(|e| not(format!("not JSON ({e})")))?;
    if head.kind.as_deref() != Some(kind) {
        return Err(not(format!("not a {kind} document")));
    }
    match head.schema_version {
        Some(v) if v == schema => {}
        Some(v) => {
            return Err(not(format!(
                "schema version {v}; this membw reads version {schema} (a newer membw wrote it?)"
            )));
        }
        None => return Err(not("no schema_version".into())),
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| TypedError::Field {
        path: e.path().to_string(),
        problem: e.into_inner().to_string(),
    })
}

/// A check verdict as a fleet's history reads it (the fields of
/// `health::verdict::Verdict` it needs, by the same names).
#[derive(Debug, Clone, Deserialize)]
pub struct CheckSummary {
    pub timestamp: String,
    pub host: Named,
    /// False when the check could not judge the node: its rates are then
    /// of something else than the node at rest (absent in verdicts from
    /// before checks could decline to judge).
    #[serde(default = "judged")]
    pub judged: bool,
    pub rates: Vec<CheckRate>,
}

/// The one field of a verdict's host that a history needs.
#[derive(Debug, Clone, Deserialize)]
pub struct Named {
    #[serde(deserialize_with = "crate::untrusted::printable_name")]
    pub hostname: String,
}

fn judged() -> bool {
    true
}

/// One scope's and kernel's rate in a check.
#[derive(Debug, Clone, Deserialize)]
pub struct CheckRate {
    /// `node`, or a NUMA domain.
    pub scope: String,
    pub kernel: KernelId,
    pub gb_s: f64,
}

/// The kind a check verdict names itself with.
pub const CHECK_KIND: &str = "membw-check";

/// One input of a fleet's history.
#[derive(Debug, Clone)]
pub enum FleetDocument {
    Check(CheckSummary),
    Run(Box<RunReport>),
}

/// Whether `text` (one JSON document) is a check verdict, by the kind it
/// names itself with.
pub fn is_check(text: &[u8]) -> bool {
    serde_json::from_slice::<Tag>(text).is_ok_and(|t| t.kind.as_deref() == Some(CHECK_KIND))
}

/// How a document names what it is.
#[derive(Deserialize)]
struct Tag {
    kind: Option<String>,
    tool: Option<String>,
}

/// The fleet documents in `text`: one document, or one per line. `Err`
/// names the first line (1 for a whole document) that is neither a check
/// verdict nor a run document.
pub fn fleet_documents(text: &str) -> Result<Vec<FleetDocument>, (usize, String)> {
    let whole = serde_json::from_str::<Tag>(text).is_ok();
    let docs: Vec<(usize, &str)> = if whole {
        vec![(1, text)]
    } else {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| (i + 1, l))
            .collect()
    };
    docs.into_iter()
        .map(|(line, doc)| fleet_document(doc).map_err(|e| (line, e)))
        .collect()
}

fn fleet_document(text: &str) -> Result<FleetDocument, String> {
    let tag: Tag = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    match (tag.kind.as_deref(), tag.tool.as_deref()) {
        (Some(CHECK_KIND), _) => serde_json::from_str(text)
            .map(FleetDocument::Check)
            .map_err(|e| format!("a check verdict that cannot be read: {e}")),
        (_, Some("membw")) => serde_json::from_str(text)
            .map(|r| FleetDocument::Run(Box::new(r)))
            .map_err(|e| format!("a run document that cannot be read: {e}")),
        _ => Err(
            "neither a check verdict (membw check --format json) nor a run document (membw run --format json)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Doc {
        kind: String,
        schema_version: u64,
        elements: u64,
    }

    #[test]
    fn a_document_of_another_kind_or_schema_is_refused_and_a_bad_field_named() {
        let ok = r#"{"kind":"k","schema_version":1,"elements":5}"#;
        assert_eq!(document::<Doc>(ok, "k", 1).unwrap().elements, 5);
        let other = document::<Doc>(ok, "x", 1).unwrap_err();
        assert!(matches!(other, TypedError::NotThisKind(ref w) if w.contains("not a x")));
        let newer = document::<Doc>(ok, "k", 0).unwrap_err();
        assert!(matches!(newer, TypedError::NotThisKind(ref w) if w.contains("version 1")));
        let bad = r#"{"kind":"k","schema_version":1,"elements":"many"}"#;
        match document::<Doc>(bad, "k", 1).unwrap_err() {
            TypedError::Field { path, .. } => assert_eq!(path, "elements"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            document::<Doc>("nope", "k", 1),
            Err(TypedError::NotThisKind(_))
        ));
    }

    #[test]
    fn fleet_inputs_are_one_document_or_one_per_line_and_others_are_named() {
        let check = r#"{"kind":"membw-check","timestamp":"2026-11-25T00:00:00Z","host":{"hostname":"n1","cpu_model":null,"kernel":"k","online_cpus":2,"numa_nodes":1,"sockets":1,"thp_mode":null},"judged":true,"rates":[{"scope":"node","kernel":"triad","gb_s":100.0}]}"#;
        let lines = format!("{check}\n\n{check}\n");
        let docs = fleet_documents(&lines).unwrap();
        assert_eq!(docs.len(), 2);
        match &docs[0] {
            FleetDocument::Check(c) => {
                assert_eq!(c.host.hostname, "n1");
                assert_eq!(c.rates[0].kernel, KernelId::Triad);
            }
            other => panic!("{other:?}"),
        }
        let (line, why) = fleet_documents(&format!("{check}\n{{\"x\":1}}\n")).unwrap_err();
        assert_eq!(line, 2);
        assert!(why.contains("neither a check verdict"), "{why}");
    }
}
