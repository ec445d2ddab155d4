//! Markdown (and terminal) rendering: the findings, the parameters, the
//! side-by-side tables, the group summary, efficiency and the disclosure
//! differences.

use crate::compare::{Comparison, ConfigData};
use crate::fmt::md;
use crate::hosts::Part;
use crate::info::RunInfo;
use crate::{disclosure, tables};
use std::fmt::Write;

pub fn render(c: &Comparison, configs: &[ConfigData], infos: &[RunInfo]) -> String {
    let mut o = heading(c, configs, infos);
    // Everything from a run (names, notes, a peer's disclosure) is text,
    // never Markdown or HTML.
    let put = |o: &mut String, ts: &[tables::Table]| {
        for t in ts {
            let _ = writeln!(o, "### {}\n\n{}", md(&t.title), tables::to_md(t));
        }
    };
    if let Some(t) = crate::differs::table(&c.differs, &c.configs) {
        let _ = writeln!(o, "## {}\n\n{}", md(&t.title), tables::to_md(&t));
    }
    let _ = writeln!(o, "## Key findings\n");
    for f in &crate::findings::for_report(c, configs, infos) {
        let _ = writeln!(o, "- {}", md(f));
    }
    let _ = writeln!(o, "\n## Test parameters\n");
    put(&mut o, &tables::parameters(configs, infos));
    let _ = writeln!(o, "## Results\n");
    put(&mut o, &tables::metrics(configs, infos));
    put(&mut o, &[tables::comparison(c)]);
    if let Some(t) = c.group_table() {
        let _ = writeln!(
            o,
            "\n## By group (averages, ratios, differences)\n\n{}",
            tables::to_md(&t)
        );
    }
    if !c.efficiency.is_empty() {
        let _ = writeln!(o, "\n## Efficiency\n");
        put(&mut o, &tables::efficiency(c, configs));
    }
    let multi = crate::hosts::parts(configs);
    if !multi.is_empty() {
        let _ = writeln!(o, "\n## Multi-host tests\n");
    }
    for part in multi {
        match part {
            Part::Table(t) => put(&mut o, &[t]),
            Part::Text(s) => {
                let _ = writeln!(o, "{}\n", md(&s));
            }
            // Charts and folded lists are the HTML report's.
            Part::Chart { .. } | Part::AllPairs { .. } => {}
        }
    }
    notes(&mut o, configs, infos);
    system_differences(&mut o, c, configs);
    o
}

/// The title, the runs compared, and a warning for each smoke run.
fn heading(c: &Comparison, configs: &[ConfigData], infos: &[RunInfo]) -> String {
    let mut o = String::new();
    let runs: Vec<String> = (configs.iter().enumerate())
        .map(|(i, cfg)| {
            let info = infos.get(i).cloned().unwrap_or_default();
            format!(
                "{} (run {}, suite {}, started {}, {}{})",
                md(&cfg.label),
                cfg.run_id,
                md(&info.suite),
                md(&info.started_at),
                md(info.status.label()),
                info.overridden.as_ref().map_or("", |_| ", **smoke run**")
            )
        })
        .collect();
    if configs.len() == 1 {
        let _ = writeln!(o, "# iotoll report: {}\n", md(&c.configs[0]));
        let _ = writeln!(o, "Run: {}.\n", runs[0]);
    } else {
        let labels: Vec<String> = c.configs.iter().map(|l| md(l)).collect();
        let _ = writeln!(o, "# iotoll comparison: {}\n", labels.join(" vs "));
        let _ = writeln!(
            o,
            "Baseline: {}. Compared: {}. Differences are candidate / baseline − 1.\n",
            runs[0],
            runs[1..].join(", ")
        );
    }
    for (i, info) in infos.iter().enumerate() {
        if let Some(n) = &info.overridden {
            let _ = writeln!(
                o,
                "> ⚠ **Smoke run** ({}): {}. Not a measurement to publish.\n",
                md(&configs[i].label),
                md(n)
            );
        }
    }
    o
}

/// Every configuration's warnings and notes, by test.
fn notes(o: &mut String, configs: &[ConfigData], infos: &[RunInfo]) {
    let notes = crate::info::notes(configs, infos);
    if notes.iter().all(|n| n.is_empty()) {
        return;
    }
    let _ = writeln!(o, "\n## Warnings and notes\n");
    for (cfg, notes) in configs.iter().zip(&notes) {
        for n in notes {
            let _ = match &n.test {
                Some(t) => writeln!(o, "- {} {}: {}", md(&cfg.label), md(t), md(&n.text)),
                None => writeln!(o, "- {}: {}", md(&cfg.label), md(&n.text)),
            };
        }
    }
}

/// The disclosure items in which the configurations' systems differ.
fn system_differences(o: &mut String, c: &Comparison, configs: &[ConfigData]) {
    let diff = disclosure::table(configs);
    let differing: Vec<_> = diff.iter().filter(|r| r.differs).collect();
    if differing.is_empty() {
        return;
    }
    let labels: Vec<String> = c.configs.iter().map(|l| md(l)).collect();
    let _ = writeln!(o, "\n## System differences\n");
    let _ = writeln!(
        o,
        "| group | item | {} |\n|---|---|{}",
        labels.join(" | "),
        "---|".repeat(c.configs.len())
    );
    for r in differing {
        let values: Vec<String> = r.values.iter().map(|v| md(v)).collect();
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            r.group,
            md(&r.key),
            values.join(" | ")
        );
    }
}
