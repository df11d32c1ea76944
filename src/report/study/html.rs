//! A bandwidth study's results as HTML: the table and the NUMA findings;
//! [`crate::report::html`] puts them in a page with the plots.

use super::*;
use crate::kernels::KernelId;
use crate::results::Record;
use std::fmt::Write;

/// The results section of a study's HTML page.
pub fn html(records: &[Record], kernel: KernelId, layout: Layout) -> String {
    let mut out = main_table(records, kernel, layout).html();
    let _ = writeln!(
        out,
        "<p class=\"legend\">{}</p>",
        escape(&full_legend(records, kernel, layout)).replace('\n', "<br>\n")
    );
    let findings = numa_findings(records, kernel);
    if !findings.is_empty() {
        out.push_str("<ul>\n");
        for line in findings {
            let _ = writeln!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul>\n");
    }
    let mut in_list = false;
    for line in trust_lines(records, kernel) {
        match line.strip_prefix("  ") {
            Some(item) => {
                if !in_list {
                    out.push_str("<ul>\n");
                    in_list = true;
                }
                let _ = writeln!(out, "<li>{}</li>", escape(item));
            }
            None => {
                if in_list {
                    out.push_str("</ul>\n");
                    in_list = false;
                }
                let _ = writeln!(
                    out,
                    "<p class=\"untrusted\"><strong>{}</strong></p>",
                    escape(&line)
                );
            }
        }
    }
    if in_list {
        out.push_str("</ul>\n");
    }
    if let Some(verdict) = StudyConclusion::find(records, kernel) {
        let lines: Vec<String> = (verdict.lines().iter())
            .map(|l| escape(l.trim_start_matches('\n').trim_start()))
            .collect();
        let _ = writeln!(out, "<p class=\"verdict\">{}</p>", lines.join("<br>\n"));
    }
    out
}
