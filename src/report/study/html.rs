//! A bandwidth study's results as HTML: the table and the NUMA findings;
//! [`crate::report::html`] puts them in a page with the plots.

use super::*;
use crate::kernels::KernelId;
use crate::results::Record;
use std::fmt::Write;

/// The results section of a study's HTML page.
pub fn html(records: &[Record], kernel: KernelId, pivot: Option<&Pivot>) -> String {
    let mut out = main_table(records, kernel, pivot).html();
    let _ = writeln!(
        out,
        "<p class=\"legend\">{}</p>",
        escape(&full_legend(records, pivot)).replace('\n', "<br>\n")
    );
    let findings = numa_findings(records, kernel);
    if !findings.is_empty() {
        out.push_str("<ul>\n");
        for line in findings {
            let _ = writeln!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul>\n");
    }
    let doubts = trust_lines(records);
    if let Some((head, rest)) = doubts.split_first() {
        let _ = writeln!(
            out,
            "<p class=\"untrusted\"><strong>{}</strong></p>\n<ul>",
            escape(head)
        );
        for line in rest {
            let _ = writeln!(out, "<li>{}</li>", escape(line.trim_start()));
        }
        out.push_str("</ul>\n");
    }
    out
}
