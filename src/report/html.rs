//! One self-contained HTML page per report (inline CSS and SVG, nothing
//! fetched): the host and configuration, the results, the plots.

use super::Plot;
use super::study::{self, escape};
use super::view::View;
use crate::error::Result;
use std::fmt::Write;

/// The page around a report's results: `context` as a definition list,
/// `results` as given (already HTML), each plot inline with its title.
fn page(host: &str, context: &[(String, String)], results: &str, plots: &[Plot]) -> String {
    let host = escape(host);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>membw report: {host}</title>\n<style>\n\
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}\n\
table {{ border-collapse: collapse; margin: 1em 0; font-size: 14px; }}\n\
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; }}\n\
th {{ background: #f2f2f2; }}\n\
tr.best td {{ background: #fff4c2; font-weight: bold; }}\n\
pre {{ background: #f7f7f7; padding: 1em; overflow-x: auto; }}\n\
figure {{ margin: 2em 0; }} figcaption {{ color: #555; }}\n\
dl {{ display: grid; grid-template-columns: max-content auto; gap: 4px 16px; }} dt {{ font-weight: bold; }}\n\
</style>\n</head>\n<body>\n<h1>membw report: {host}</h1>\n"
    );
    if !context.is_empty() {
        out.push_str("<section>\n<h2>Host and configuration</h2>\n<dl>\n");
        for (k, v) in context {
            let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
        }
        out.push_str("</dl>\n</section>\n");
    }
    let _ = write!(out, "<section>\n<h2>Results</h2>\n{results}</section>\n");
    if !plots.is_empty() {
        out.push_str("<section>\n<h2>Plots</h2>\n");
        for p in plots {
            let _ = write!(
                out,
                "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
                without_xml_prolog(&p.svg),
                escape(&p.title)
            );
        }
        out.push_str("</section>\n");
    }
    let _ = writeln!(
        out,
        "<footer><p>membw {}</p></footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// Inline SVG takes no XML prolog.
fn without_xml_prolog(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

/// Text tables (latency, per-node) as preformatted HTML.
fn preformatted(text: &str) -> String {
    format!("<pre>{}</pre>\n", escape(text))
}

/// The HTML exporter: `membw report --format html`, and `--html FILE`.
pub struct Html;

impl super::view::TextExporter for Html {
    fn format(&self) -> super::view::Format {
        super::view::Format::Html
    }
    fn commands(&self) -> &'static [&'static str] {
        &["report"]
    }
    fn render(&self, doc: &View) -> Option<Result<String>> {
        Some(Ok(match doc {
            View::Study {
                records,
                kernel,
                plots,
                layout,
                ..
            } => {
                let host = records.first().map_or("unknown", |r| &r.host.hostname);
                let results = study::html::html(records, *kernel, *layout);
                page(host, &study::context(records), &results, plots)
            }
            View::LatencyExperiment { records, plots, .. } => {
                let host = records.first().map_or("unknown", |r| &r.host.hostname);
                let tables = preformatted(&super::latency_tables::render(records));
                page(host, &[], &tables, plots)
            }
            View::Nodes { text, plots, .. } => page("nodes", &[], &preformatted(text), plots),
            _ => return None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_escapes_what_it_shows_and_inlines_plots_without_prolog() {
        let plot = Plot {
            title: "a < b".into(),
            file: "p.svg".into(),
            svg: "<?xml version=\"1.0\"?>\n<svg></svg>".into(),
        };
        let html = page("n<1>", &[("k".into(), "v&w".into())], "<p>r</p>", &[plot]);
        assert!(html.contains("membw report: n&lt;1&gt;"), "{html}");
        assert!(html.contains("<dd>v&amp;w</dd>"));
        assert!(html.contains("<figure>\n<svg></svg>"));
        assert!(!html.contains("<?xml"));
        assert!(html.contains("<figcaption>a &lt; b</figcaption>"));
        assert!(preformatted("x < y").contains("x &lt; y"));
    }
}
