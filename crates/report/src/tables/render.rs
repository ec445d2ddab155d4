//! One table, three renderings: HTML, Markdown and the terminal's text.

use super::Table;
use crate::fmt::{esc, md};
use std::fmt::Write;

/// The table as HTML; `class` names it for the DOM.
pub fn to_html(t: &Table, class: &str) -> String {
    // The configuration's colour goes beside its name.
    let swatch_col = t
        .head
        .iter()
        .position(|h| h == "configuration")
        .unwrap_or(usize::MAX);
    let mut o = format!("<table class=\"{class}\"><thead><tr>");
    for h in &t.head {
        o.push_str(&format!("<th>{}</th>", esc(h)));
    }
    o.push_str("</tr></thead><tbody>\n");
    for r in &t.rows {
        o.push_str(if r.total {
            "<tr class=\"total\">"
        } else {
            "<tr>"
        });
        for (j, c) in r.cells.iter().enumerate() {
            let attr = match (r.cell_diff.get(j) == Some(&true), j == 0 && r.warn) {
                (false, false) => "",
                (true, false) => " class=\"diff\"",
                (false, true) => " class=\"warn\"",
                (true, true) => " class=\"diff warn\"",
            };
            let swatch = match (j, r.config) {
                (j, Some(ci)) if j == swatch_col => format!(
                    "<span class=\"sw\" style=\"background:{}\"></span>",
                    crate::charts::css_color(ci)
                ),
                _ => String::new(),
            };
            o.push_str(&format!("<td{attr}>{swatch}{}</td>", esc(c)));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table>\n");
    if let Some(n) = &t.note {
        o.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
    }
    o
}

/// The table as Markdown; differing cells in bold.
pub fn to_md(t: &Table) -> String {
    let mut o = format!(
        "| {} |\n",
        t.head.iter().map(|h| md(h)).collect::<Vec<_>>().join(" | ")
    );
    // The first column to the left, the figures to the right.
    let align = (0..t.head.len()).map(|i| if i == 0 { "---|" } else { "---:|" });
    o.push_str(&format!("|{}\n", align.collect::<String>()));
    for r in &t.rows {
        let cells: Vec<String> = (r.cells.iter().enumerate())
            .map(|(j, c)| match r.cell_diff.get(j) == Some(&true) {
                true => format!("**{}**", md(c)),
                false => md(c),
            })
            .collect();
        o.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    if let Some(n) = &t.note {
        o.push_str(&format!("\n{}\n", md(n)));
    }
    o
}

/// The table as terminal text: the title, then the head and rows indented
/// under it in columns as wide as their widest cell, then the note's lines.
/// `align` has a letter per column, `l` (left) or `r` (right); columns
/// past its end take its last letter.
pub fn to_text(t: &Table, indent: &str, align: &str) -> String {
    let mut o = String::new();
    let inner = match t.title.is_empty() {
        true => indent.to_string(),
        false => {
            let _ = writeln!(o, "{indent}{}", t.title);
            format!("{indent}  ")
        }
    };
    let lines: Vec<&[String]> = (!t.head.is_empty())
        .then_some(t.head.as_slice())
        .into_iter()
        .chain(t.rows.iter().map(|r| r.cells.as_slice()))
        .collect();
    let mut width: Vec<usize> = Vec::new();
    for l in &lines {
        width.resize(width.len().max(l.len()), 0);
        for (w, c) in width.iter_mut().zip(l.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let right = |j: usize| align.chars().nth(j).or(align.chars().last()) == Some('r');
    for l in lines {
        let cells: Vec<String> = (l.iter().zip(&width).enumerate())
            .map(|(j, (c, w))| match right(j) {
                true => format!("{c:>w$}"),
                false => format!("{c:<w$}"),
            })
            .collect();
        let _ = writeln!(o, "{inner}{}", cells.join("  ").trim_end());
    }
    for n in t.note.iter().flat_map(|n| n.lines()) {
        let _ = writeln!(o, "{inner}{n}");
    }
    o
}
