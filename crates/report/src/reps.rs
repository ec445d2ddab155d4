//! Which repetitions a chart or a per-host table shows: the ones the
//! headline comes from (the selected repetition, or every repetition a
//! mean is over), and the words that say so. A report once charted and
//! tabled repetition 1 of a test whose headline was the mean of 3.

use crate::compare::{MultiHost, RepSeries};
use iotoll_model::metrics::label;
use iotoll_model::{rederive_metrics, Metrics, ResultStatus};
use iotoll_store::RepRow;

/// The series of the repetitions `kept` (the headline's), failed ones left
/// out; `of` is how many repetitions the test has, `rule` its selection.
pub fn kept_series(kept: &[&RepRow], of: usize, rule: &str) -> Vec<RepSeries> {
    measured(kept)
        .map(|r| RepSeries {
            rep: r.rep,
            of,
            rule: rule.to_string(),
            points: r.doc.series.clone(),
        })
        .collect()
}

fn measured<'a>(reps: &'a [&'a RepRow]) -> impl Iterator<Item = &'a RepRow> + 'a {
    reps.iter()
        .copied()
        .filter(|r| r.status != ResultStatus::Failed)
}

/// How a repetition stands for its test, for a chart's legend:
/// "repetition 2 of 3 (selected: median of IOPS)", "repetition 1 of 3
/// (the headline is the mean of 3)"; None for a test run once.
pub fn rep_label(s: &RepSeries, kept: usize) -> Option<String> {
    if s.of <= 1 {
        return None;
    }
    let how = match s.rule.strip_prefix("median:") {
        Some(m) => format!("selected: median of {}", label(m)),
        None if s.rule == "mean" => format!("the headline is the mean of {kept}"),
        None => s.rule.clone(),
    };
    Some(format!("repetition {} of {} ({how})", s.rep, s.of))
}

/// The mean of `values`, when every one is present.
fn mean_all(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let (mut n, mut sum) = (0usize, 0.0);
    for v in values {
        sum += v?;
        n += 1;
    }
    (n > 0).then(|| sum / n as f64)
}

/// Each metric's mean over `ms` (kept only where all have it), derived
/// figures derived again from the means, as the headline's summary is.
fn mean_metrics(ms: &[&Metrics]) -> Metrics {
    let Some(first) = ms.first() else {
        return Metrics::new();
    };
    let mut out: Metrics = first
        .keys()
        .filter_map(|k| Some((k.clone(), mean_all(ms.iter().map(|m| m.get(k).copied()))?)))
        .collect();
    rederive_metrics(&mut out);
    out
}

/// A mean test's per-host figures, averaged over the repetitions the mean
/// is over as its headline is: each host (by name and role) and pair (by
/// client and server) metric by metric, its other processes' and steal CPU
/// too; the windows' skew is the largest seen. None when no repetition has
/// per-host figures.
pub fn mean_of(kept: &[&RepRow]) -> Option<MultiHost> {
    let reps: Vec<&RepRow> = measured(kept).filter(|r| !r.doc.hosts.is_empty()).collect();
    let first = reps.first()?;
    let mut mh = MultiHost::of(first, false)?;
    mh.mean_of = reps.iter().map(|r| r.rep).collect();
    if reps.len() == 1 {
        return Some(mh);
    }
    let totals: Vec<&Metrics> = reps.iter().map(|r| &r.doc.metrics).collect();
    mh.totals = mean_metrics(&totals);
    for h in &mut mh.hosts {
        let same: Vec<&iotoll_model::HostFigures> = reps
            .iter()
            .filter_map(|r| (r.doc.hosts.iter()).find(|x| x.name == h.name && x.role == h.role))
            .collect();
        let ms: Vec<&Metrics> = same.iter().map(|x| &x.metrics).collect();
        h.metrics = mean_metrics(&ms);
        h.on_us = mean_all(same.iter().map(|x| Some(x.on_us))).unwrap_or(h.on_us);
        h.off_us = mean_all(same.iter().map(|x| Some(x.off_us))).unwrap_or(h.off_us);
        let judged: Vec<&iotoll_model::Interference> = same
            .iter()
            .filter_map(|x| x.cpu.as_ref()?.interference.as_ref())
            .collect();
        // Each adapter's rates over its host's windows, as the totals.
        for i in &mut h.ifaces {
            let rates: Vec<(f64, f64)> = (same.iter())
                .filter_map(|x| {
                    let f = x.ifaces.iter().find(|f| f.name == i.name)?;
                    let f = f.rated(x.cpu.as_ref().map_or(0.0, |c| c.window_s));
                    Some((f.rx_mbit_s?, f.tx_mbit_s?))
                })
                .collect();
            i.rx_mbit_s = mean_all(rates.iter().map(|r| Some(r.0))).or(i.rx_mbit_s);
            i.tx_mbit_s = mean_all(rates.iter().map(|r| Some(r.1))).or(i.tx_mbit_s);
        }
        if let Some(i) = h.cpu.as_mut().and_then(|c| c.interference.as_mut()) {
            i.others_pct = mean_all(judged.iter().map(|j| Some(j.others_pct))).unwrap_or(0.0);
            i.steal_pct = mean_all(judged.iter().map(|j| Some(j.steal_pct))).unwrap_or(0.0);
            i.interfered = judged.iter().any(|j| j.interfered);
        }
    }
    for p in &mut mh.pairs {
        let same: Vec<&iotoll_model::PairFigures> = reps
            .iter()
            .filter_map(|r| {
                (r.doc.pairs.iter()).find(|x| x.client == p.client && x.server == p.server)
            })
            .collect();
        let n = same.len().max(1) as f64;
        let bytes = |f: fn(&iotoll_model::PairFigures) -> u64| {
            (same.iter().map(|x| f(x) as f64).sum::<f64>() / n).round() as u64
        };
        p.client_to_server_bytes = bytes(|x| x.client_to_server_bytes);
        p.server_to_client_bytes = bytes(|x| x.server_to_client_bytes);
        p.mbit_s = same.iter().map(|x| x.mbit_s).sum::<f64>() / n;
    }
    for r in &reps[1..] {
        if let (Some(s), Some(o)) = (mh.skew_us.as_mut(), r.doc.skew_us.as_ref()) {
            s.start = s.start.max(o.start);
            s.stop = s.stop.max(o.stop);
            s.clock = s.clock.max(o.clock);
        }
    }
    Some(mh)
}

/// Which repetition(s) a per-host table shows, for its note.
pub fn host_table_source(mh: &MultiHost) -> String {
    match mh.mean_of.as_slice() {
        [] if mh.selected => format!("repetition {}, the selected one", mh.rep),
        [] => format!("repetition {}", mh.rep),
        [one] => format!("repetition {one}, the only one the mean is over"),
        many => format!(
            "the mean of repetitions {}, as the headline is",
            many.iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::fixtures::{multi_host_run, multi_stream_doc, render};
    use iotoll_model::SeriesPoint;

    /// A multi-host stream kept as the mean of 3 repetitions (scaled 1.0,
    /// 1.2, 1.4), each with a 3 s window second by second.
    fn mean_of_three() -> (iotoll_store::RunDetail, [f64; 3]) {
        let scales = [1.0, 1.2, 1.4];
        let docs: Vec<iotoll_model::ResultDoc> = scales
            .iter()
            .map(|s| {
                let mut d = multi_stream_doc(&["c1", "c2"], &["s1"], *s);
                d.series = (1..=4)
                    .map(|t| SeriesPoint {
                        t_s: t as f64,
                        phase: if t == 1 { "ramp" } else { "measure" }.into(),
                        iops: None,
                        mb_s: None,
                        mbit_s: Some(d.metrics["mbit_s"]),
                        trans_s: None,
                        cpu_pct: Some(40.0),
                    })
                    .collect();
                d
            })
            .collect();
        let totals = [0, 1, 2].map(|i| docs[i].metrics["mbit_s"]);
        let mut run = multi_host_run(1, "base", docs[0].clone());
        let t = run.tests.last_mut().unwrap();
        t.select = "mean".into();
        t.selected_rep = None;
        let mut mean = docs[0].metrics.clone();
        for (k, v) in mean.iter_mut() {
            *v = docs.iter().map(|d| d.metrics[k]).sum::<f64>() / 3.0;
        }
        iotoll_model::rederive_metrics(&mut mean);
        t.summary = Some(mean);
        t.reps = docs
            .into_iter()
            .enumerate()
            .map(|(i, doc)| iotoll_store::RepRow {
                rep: i as i64 + 1,
                status: doc.status,
                doc,
            })
            .collect();
        (run, totals)
    }

    /// The headline of a mean test is the mean of its repetitions: its
    /// chart shows each of them, labelled, and its per-host table their
    /// means, saying so. Before, both showed repetition 1 unlabelled, and
    /// the section said a 3 s window was "shorter than a second".
    #[test]
    fn a_mean_test_charts_and_tables_the_repetitions_its_headline_comes_from() {
        let (run, totals) = mean_of_three();
        let (md, html) = render(&[run]);
        crate::fixtures::dump("mean-of-three", &md, &html);
        let seconds =
            &html[html.find("id=\"seconds\"").unwrap()..html.find("id=\"tables\"").unwrap()];
        for r in 1..=3 {
            let want = format!("repetition {r} of 3 (the headline is the mean of 3)");
            assert!(seconds.contains(&want), "{want} missing: {seconds}");
        }
        assert!(!seconds.contains("mesh: no per-second series"), "{seconds}");
        let hosts = &html[html.find("id=\"hosts\"").unwrap()..];
        assert!(
            hosts.contains("the mean of repetitions 1, 2, 3, as the headline is"),
            "{hosts}"
        );
        let cell = |v: f64| crate::tables::metric_cell("mbit_s", Some(v), false);
        let mean = totals.iter().sum::<f64>() / 3.0;
        let table = &hosts[..hosts.find("</table>").unwrap()];
        assert!(
            table.contains(&cell(mean)),
            "mean total {} missing: {table}",
            cell(mean)
        );
        assert!(
            !table.contains(&cell(totals[0])),
            "repetition 1's total shown: {table}"
        );
    }

    /// A multi-host test without a series says why, not that its window
    /// was shorter than a second.
    #[test]
    fn a_multi_host_test_without_series_does_not_blame_its_window() {
        let d = multi_stream_doc(&["c1"], &["s1"], 1.0);
        let (_, html) = render(&[multi_host_run(1, "base", d)]);
        let line = html
            .lines()
            .find(|l| l.contains("mesh: no per-second series"))
            .expect("a note for mesh");
        assert!(!line.contains("shorter than a second"), "{line}");
    }
}
