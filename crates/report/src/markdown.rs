//! Markdown (and terminal) rendering: the findings, the side-by-side
//! table, the group summary, efficiency and the disclosure differences.

use crate::compare::{Comparison, ConfigData};
use crate::disclosure;
use std::fmt::Write;

pub fn num(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

pub fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{}{:.1} %", if v < 0.0 { "−" } else { "+" }, v.abs()))
        .unwrap_or_else(|| "–".into())
}

pub fn render(c: &Comparison, configs: &[ConfigData]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# iotoll comparison: {}\n", c.configs.join(" vs "));
    let runs: Vec<String> = c
        .configs
        .iter()
        .zip(&c.run_ids)
        .map(|(l, r)| format!("{l} (run {r})"))
        .collect();
    let _ = writeln!(
        o,
        "Baseline: {}. Compared: {}.\n",
        runs[0],
        runs[1..].join(", ")
    );
    let _ = writeln!(o, "## Key findings\n");
    for f in &c.findings {
        let _ = writeln!(o, "- {f}");
    }
    let _ = writeln!(o, "\n## Results\n");
    let mut head = String::from("| test | group | metric |");
    let mut sep = String::from("|---|---|---|");
    for l in &c.configs {
        let _ = write!(head, " {l} | CPU % |");
        sep.push_str("---:|---:|");
    }
    for l in &c.configs[1..] {
        let _ = write!(head, " Δ {l} |");
        sep.push_str("---:|");
    }
    let _ = writeln!(o, "{head}\n{sep}");
    for r in &c.rows {
        let mut line = format!(
            "| {}{} | {} | {} |",
            r.test,
            if r.not_repeatable {
                " ⚠ not repeatable"
            } else {
                ""
            },
            r.group,
            r.metric
        );
        for (i, v) in r.values.iter().enumerate() {
            let ok = match r.acceptable[i] {
                Some(false) => " ✗",
                _ => "",
            };
            let _ = write!(line, " {} | {}{ok} |", num(*v), num(r.cpu_pct[i]));
        }
        for d in &r.diff_pct {
            let _ = write!(line, " {} |", pct(*d));
        }
        let _ = writeln!(o, "{line}");
    }
    if let Some(th) = c.cpu_threshold_pct {
        let _ = writeln!(o, "\n✗: above the {th} % CPU threshold.");
    }
    let _ = writeln!(o, "\n## By group (mean of the per-test differences)\n");
    let _ = writeln!(o, "| group | candidate | metric | tests | mean Δ | min Δ | max Δ | wins |\n|---|---|---|---:|---:|---:|---:|---:|");
    for g in &c.groups {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} of {} |",
            g.group,
            g.candidate,
            g.metric,
            g.tests,
            pct(g.mean_diff_pct),
            pct(g.min_diff_pct),
            pct(g.max_diff_pct),
            g.wins,
            g.tests
        );
    }
    let keys: Vec<&String> = {
        let mut k: Vec<&String> = c.efficiency.iter().flat_map(|e| e.means.keys()).collect();
        k.sort();
        k.dedup();
        k
    };
    if !keys.is_empty() {
        let _ = writeln!(
            o,
            "\n## Efficiency (mean over the tests every configuration has)\n"
        );
        let _ = write!(o, "| configuration |");
        for k in &keys {
            let _ = write!(o, " {k} |");
        }
        let _ = writeln!(o, "\n|---|{}", "---:|".repeat(keys.len()));
        for e in &c.efficiency {
            let _ = write!(o, "| {} |", e.label);
            for k in &keys {
                let _ = write!(o, " {} |", num(e.means.get(*k).copied()));
            }
            let _ = writeln!(o);
        }
    }
    if configs.iter().any(|c| !c.notes.is_empty()) {
        let _ = writeln!(o, "\n## Warnings and notes\n");
        for cfg in configs {
            for n in &cfg.notes {
                let _ = writeln!(o, "- {}: {n}", cfg.label);
            }
        }
    }
    let diff = disclosure::table(configs);
    let differing: Vec<_> = diff.iter().filter(|r| r.differs).collect();
    if !differing.is_empty() {
        let _ = writeln!(o, "\n## System differences\n");
        let _ = writeln!(
            o,
            "| item | {} |\n|---|{}",
            c.configs.join(" | "),
            "---|".repeat(c.configs.len())
        );
        for r in differing {
            let _ = writeln!(o, "| {} | {} |", r.key, r.values.join(" | "));
        }
    }
    o
}
