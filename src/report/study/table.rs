//! A table as headers and rows of cells: plain text, Markdown and HTML.

use std::fmt::Write;

/// A table as headers and rows of cells, rendered three ways.
#[derive(Debug, Clone)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Row to emphasize (the best point).
    pub best: Option<usize>,
}

impl Table {
    pub fn plain(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .chain([self.headers[c].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String], mark: &str| {
            let mut s = String::from(mark);
            for (c, cell) in cells.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                // Numbers right-aligned, text left-aligned.
                if cell.starts_with(|ch: char| ch.is_ascii_digit()) {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(cell);
                } else {
                    s.push_str(cell);
                    s.push_str(&" ".repeat(pad));
                }
                s.push_str("  ");
            }
            s.trim_end().to_string() + "\n"
        };
        let mut out = line(&self.headers, "  ");
        for (i, r) in self.rows.iter().enumerate() {
            out.push_str(&line(r, if Some(i) == self.best { "▶ " } else { "  " }));
        }
        out
    }

    pub fn markdown(&self) -> String {
        let mut out = format!("| {} |\n", self.headers.join(" | "));
        out.push_str(&format!(
            "|{}\n",
            self.headers.iter().map(|_| "---|").collect::<String>()
        ));
        for (i, r) in self.rows.iter().enumerate() {
            let cells: Vec<String> = if Some(i) == self.best {
                r.iter()
                    .map(|c| {
                        if c.is_empty() {
                            c.clone()
                        } else {
                            format!("**{c}**")
                        }
                    })
                    .collect()
            } else {
                r.clone()
            };
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        out
    }

    pub fn html(&self) -> String {
        let mut out = String::from("<table>\n<thead><tr>");
        for h in &self.headers {
            let _ = write!(out, "<th>{}</th>", escape(h));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for (i, r) in self.rows.iter().enumerate() {
            out.push_str(if Some(i) == self.best {
                "<tr class=\"best\">"
            } else {
                "<tr>"
            });
            for c in r {
                let _ = write!(out, "<td>{}</td>", escape(c));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        out
    }
}

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
