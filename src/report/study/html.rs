//! A study as one self-contained HTML page: the tables, the findings and
//! the plots inline.

use super::*;
use crate::kernels::KernelId;
use crate::results::Record;
use std::fmt::Write;

/// One self-contained HTML file: inline CSS and SVG, nothing fetched.
pub fn html(records: &[Record], kernel: KernelId, plots: &[(String, String)]) -> String {
    let host = records
        .first()
        .map_or("unknown".to_string(), |r| r.host.hostname.clone());
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>membw report: {}</title>\n<style>\n\
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}\n\
table {{ border-collapse: collapse; margin: 1em 0; font-size: 14px; }}\n\
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; }}\n\
th {{ background: #f2f2f2; }}\n\
tr.best td {{ background: #fff4c2; font-weight: bold; }}\n\
figure {{ margin: 2em 0; }} figcaption {{ color: #555; }}\n\
dl {{ display: grid; grid-template-columns: max-content auto; gap: 4px 16px; }} dt {{ font-weight: bold; }}\n\
</style>\n</head>\n<body>\n<h1>membw report: {}</h1>\n",
        escape(&host),
        escape(&host)
    );
    out.push_str("<section>\n<h2>Host and configuration</h2>\n<dl>\n");
    for (k, v) in context(records) {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", escape(&k), escape(&v));
    }
    out.push_str("</dl>\n</section>\n<section>\n<h2>Results</h2>\n");
    out.push_str(&results_table(records, kernel).html());
    let findings = numa_findings(records, kernel);
    if !findings.is_empty() {
        out.push_str("<ul>\n");
        for line in findings {
            let _ = writeln!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    if !plots.is_empty() {
        out.push_str("<section>\n<h2>Plots</h2>\n");
        for (title, svg) in plots {
            let _ = write!(
                out,
                "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
                strip_xml_prolog(svg),
                escape(title)
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

fn strip_xml_prolog(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}
