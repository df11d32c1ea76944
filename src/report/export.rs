//! One trait for every output format a command prints (`view.rs`), and
//! one registry. A command builds a [`View`](super::view::View) and hands it to the exporter
//! the user named with `--format`; the exporter renders it, or says it has
//! no form for that document. Adding a format is one file implementing
//! [`Exporter`] and one line in [`EXPORTERS`].

use super::view::{Exporter, Format};

/// Every format's exporter, in [`Format::ALL`]'s order.
pub const EXPORTERS: &[&dyn Exporter] = &[
    &super::text::Text,
    &super::json::Json,
    &super::jsonl::Jsonl,
    &super::csv::Csv,
    &super::markdown::Markdown,
    &super::html::Html,
];

/// The exporter of `format`.
pub fn exporter(format: Format) -> Option<&'static dyn Exporter> {
    EXPORTERS.iter().copied().find(|e| e.format() == format)
}

/// The formats that render `command`'s documents.
pub fn formats_for(command: &str) -> Vec<Format> {
    EXPORTERS
        .iter()
        .filter(|e| e.commands().contains(&command))
        .map(|e| e.format())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(command: &str) -> Vec<&'static str> {
        formats_for(command).into_iter().map(Format::name).collect()
    }

    #[test]
    fn every_format_has_one_exporter_and_the_commands_their_forms() {
        let formats: Vec<Format> = EXPORTERS.iter().map(|e| e.format()).collect();
        assert_eq!(formats, Format::ALL);
        assert!(Format::ALL.iter().all(|f| exporter(*f).is_some()));
        assert!(
            Format::ALL
                .iter()
                .all(|f| Format::from_name(f.name()) == Some(*f))
        );
        assert_eq!(Format::from_name("yaml"), None);
        assert_eq!(names("exec"), ["text", "json", "jsonl"]);
        assert_eq!(
            names("latency"),
            ["text", "json", "jsonl", "csv", "markdown"]
        );
        assert_eq!(
            names("report"),
            ["text", "jsonl", "csv", "markdown", "html"]
        );
        assert_eq!(names("sweep"), ["text", "jsonl", "markdown"]);
        assert_eq!(names("compare"), ["text", "markdown"]);
        assert_eq!(names("check"), ["text", "json", "jsonl"]);
        assert_eq!(names("baseline"), ["text", "json"]);
        assert_eq!(names("topo"), ["text", "json"]);
        assert_eq!(names("place"), ["text", "json"]);
        assert_eq!(names("tune"), ["text", "jsonl"]);
    }
}
