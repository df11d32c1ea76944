//! The one reader of membw's result documents. A file is opened once (only
//! if it is a regular file, without blocking), its first line says what it
//! is, and it is read with bounded buffers: a hostile or corrupt file ends
//! in one error naming it, never a hang or a runaway allocation.
//!
//! - a `membw run --json` document: pretty-printed JSON, first line `{`;
//! - a results file of bandwidth records (`sweep`, `tune`, `run -o`);
//! - a results file of latency records (`latency -o`);
//! - check verdicts (`check --format json`, or one per line: `jsonl`).

use super::file::{
    FileError, LineReader, Lines, open_regular, parse_lines, parse_record, take_line,
};
use super::latency_record::{self, LatencyRecord};
use super::{Record, RunReport};
use std::path::Path;

/// The most a run document may weigh: an MPI run of thousands of ranks,
/// pretty-printed, is a few MiB.
pub const MAX_DOCUMENT: u64 = 32 << 20;

/// What a file held.
#[derive(Debug)]
pub enum Document {
    /// One `membw run --json` document.
    Run(Box<RunReport>),
    /// Bandwidth records (`sweep`, `tune`, `run -o`), in file order, one
    /// per point and host: a point recorded again adds its runs to the
    /// first record of it.
    Bandwidth(Vec<Record>),
    /// Latency records (`latency -o`), in file order.
    Latency(Vec<LatencyRecord>),
    /// Check verdicts, as a fleet's history reads them.
    Checks(Vec<super::typed::CheckSummary>),
}

impl Document {
    /// How many records (a run document is one).
    pub fn len(&self) -> usize {
        match self {
            Document::Run(_) => 1,
            Document::Bandwidth(r) => r.len(),
            Document::Latency(r) => r.len(),
            Document::Checks(c) => c.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What kind of document this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Document::Run(_) => "a `membw run --json` document",
            Document::Bandwidth(_) => "a bandwidth results file",
            Document::Latency(_) => "a latency results file",
            Document::Checks(_) => "check verdicts",
        }
    }
}

/// A document, and the number of its last line when a write cut it short
/// (that line is left out).
#[derive(Debug)]
pub struct Read {
    pub document: Document,
    pub torn: Option<usize>,
}

/// Reads any membw document. A results file with no record is an error.
pub fn read(path: &Path) -> Result<Read, FileError> {
    let file = open_regular(path)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut lines = LineReader::new(path, std::io::BufReader::new(file));
    let first = loop {
        match lines.next_line()? {
            None => return Err(FileError::Empty(path.to_path_buf())),
            Some(_) if lines.text().trim().is_empty() => continue,
            Some(complete) => break (lines.text().trim().to_string(), complete),
        }
    };
    if first.0 == "{" {
        // A pretty-printed document: its first line opens the object.
        if len > MAX_DOCUMENT {
            return Err(FileError::TooLarge(path.to_path_buf(), MAX_DOCUMENT));
        }
        let rest = lines.rest(MAX_DOCUMENT)?;
        let mut text = b"{\n".to_vec();
        text.extend_from_slice(&rest);
        if super::typed::is_check(&text) {
            return checks(path, &String::from_utf8_lossy(&text));
        }
        let report: RunReport =
            serde_json::from_slice(&text).map_err(|e| FileError::NotARecord {
                path: path.to_path_buf(),
                line: e.line(),
                message: format!("not a `membw run --json` document: {e}"),
            })?;
        return run_document(path, report);
    }
    let experiment = super::file::experiment_of(&first.0);
    if experiment.is_none() && super::typed::is_check(first.0.as_bytes()) {
        // Verdicts one per line: each is read, as a history reads them.
        let mut text = first.0.clone();
        text.push('\n');
        text.push_str(&String::from_utf8_lossy(&lines.rest(MAX_DOCUMENT)?));
        return checks(path, &text);
    }
    if experiment.is_none()
        && let Ok(report) = serde_json::from_str::<RunReport>(&first.0)
    {
        // A run document on one line (minified by another tool).
        return run_document(path, report);
    }
    let is_latency = experiment.as_deref() == Some(latency_record::EXPERIMENT);
    // The first line is parsed again with the rest: one rule for every line.
    let (document, torn) = if is_latency {
        let items = records_from(&mut lines, &first, latency_record::parse)?;
        (Document::Latency(items.items), items.torn)
    } else {
        let mut by_point = super::pooled::ByPoint::new();
        collect_from(&mut lines, &first, parse_record, &mut by_point)?;
        let items = by_point.finish();
        (Document::Bandwidth(items.items), items.torn)
    };
    if document.is_empty() {
        return Err(FileError::Empty(path.to_path_buf()));
    }
    Ok(Read {
        document,
        torn: torn.map(|t| t.0),
    })
}

/// Check verdicts: one document, or one per line.
fn checks(path: &Path, text: &str) -> Result<Read, FileError> {
    let docs =
        super::typed::fleet_documents(text).map_err(|(line, message)| FileError::NotARecord {
            path: path.to_path_buf(),
            line,
            message,
        })?;
    let verdicts = (docs.into_iter())
        .filter_map(|d| match d {
            super::typed::FleetDocument::Check(c) => Some(c),
            super::typed::FleetDocument::Run(_) => None,
        })
        .collect();
    Ok(Read {
        document: Document::Checks(verdicts),
        torn: None,
    })
}

/// A run document of this schema version.
fn run_document(path: &Path, mut report: RunReport) -> Result<Read, FileError> {
    super::schema::known_version(report.schema_version).map_err(|message| {
        FileError::NotARecord {
            path: path.to_path_buf(),
            line: 1,
            message,
        }
    })?;
    let cpus: Vec<usize> = report.measurement.threads.iter().map(|t| t.cpu).collect();
    if let Some(s) = report.reproduce.as_mut() {
        s.refresh(&cpus);
    }
    Ok(Read {
        document: Document::Run(Box::new(report)),
        torn: None,
    })
}

/// The records of a JSON Lines file whose first line was `first`.
fn records_from<R: std::io::Read, T>(
    lines: &mut LineReader<R>,
    first: &(String, bool),
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Lines<T>, FileError> {
    let mut out = Lines {
        items: Vec::new(),
        torn: None,
    };
    collect_from(lines, first, parse, &mut out)?;
    Ok(out)
}

/// [`records_from`] into any collector.
fn collect_from<R: std::io::Read, T>(
    lines: &mut LineReader<R>,
    first: &(String, bool),
    parse: impl Fn(&str) -> Result<T, String>,
    out: &mut impl super::file::Collect<T>,
) -> Result<(), FileError> {
    if take_line(lines, &parse, &first.0, first.1, out)? {
        parse_lines(lines, parse, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_regular_file_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for path in [fifo.as_path(), dir.path(), Path::new("/dev/zero")] {
            let err = read(path).unwrap_err();
            assert!(matches!(err, FileError::NotAFile(_)), "{path:?}: {err}");
        }
    }

    #[test]
    fn a_long_single_line_is_refused_after_the_line_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one-line");
        let line = vec![b'x'; (20 << 20) as usize];
        std::fs::write(&path, line).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 1") && err.contains("longer than"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_file_and_a_blank_one_have_no_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blank");
        for text in ["", "\n\n  \n"] {
            std::fs::write(&path, text).unwrap();
            assert!(matches!(read(&path), Err(FileError::Empty(_))));
        }
    }

    #[test]
    fn a_pretty_document_that_is_not_a_run_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doc.json");
        std::fs::write(&path, "{\n  \"x\": 1\n}\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("not a `membw run --json` document"), "{err}");
    }

    #[test]
    fn check_verdicts_read_as_checks_whole_or_one_per_line() {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/documents/check.json");
        let Document::Checks(whole) = read(&fixture).unwrap().document else {
            panic!("a pretty verdict is not read as checks");
        };
        assert_eq!(whole.len(), 1);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("verdicts.jsonl");
        let line: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&fixture).unwrap()).unwrap();
        std::fs::write(&path, format!("{line}\n{line}\n")).unwrap();
        let read = read(&path).unwrap();
        assert_eq!(read.document.kind(), "check verdicts");
        assert_eq!(read.document.len(), 2);
    }

    #[test]
    fn a_torn_first_line_leaves_no_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("torn.jsonl");
        std::fs::write(&path, "{\"schema_version\":1,\"exp").unwrap();
        assert!(matches!(read(&path), Err(FileError::Empty(_))));
    }
}
