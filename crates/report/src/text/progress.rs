//! The live progress line on stderr: a measurement's second, a suite's
//! next repetition.

use iotoll_model::SeriesPoint;
use std::time::Duration;

/// A second of a measurement: its phase, how far it is, and its figures.
pub fn second(p: &SeriesPoint, elapsed: Duration, total: Duration) -> String {
    let mut line = format!(
        "[{}] {:>4.0} / {:.0} s",
        p.phase,
        elapsed.as_secs_f64(),
        total.as_secs_f64()
    );
    line.extend(
        [
            p.iops.map(|v| format!("  {v:>10.0} IOPS")),
            p.mb_s.map(|v| format!("  {v:>9.1} MB/s")),
            p.trans_s.map(|v| format!("  {v:>10.0} trans/s")),
            p.mbit_s.map(|v| format!("  {v:>9.1} Mbit/s")),
            p.cpu_pct.map(|v| format!("  cpu {v:>5.1} %")),
        ]
        .into_iter()
        .flatten(),
    );
    line
}

/// An `--interval` line, as iperf prints them: the interval (seconds since
/// the workload started), its phase, its rates (named as `l.labels` says)
/// and whole-host CPU.
pub fn interval(l: &iotoll_run::interval::IntervalLine) -> String {
    let p = l.point;
    let span = format!("{:.2}-{:.2}", l.from_s, p.t_s);
    let mut line = format!("[{span:>13} s] {:<7}", p.phase);
    let of = l.labels.rate_of.map_or(String::new(), |w| format!(" {w}"));
    line.extend(
        [
            p.iops.map(|v| format!("  {v:>10.0} IOPS")),
            p.mb_s.map(|v| format!("  {v:>10.2} MB/s")),
            p.trans_s.map(|v| format!("  {v:>10.0} {}", l.labels.ops)),
            p.mbit_s.map(|v| format!("  {v:>10.2} Mbit/s{of}")),
            Some(
                p.cpu_pct
                    .map_or("  cpu     - %".into(), |v| format!("  cpu {v:>5.1} %")),
            ),
        ]
        .into_iter()
        .flatten(),
    );
    line
}

/// A suite's repetition starting: which test of how many, and how long
/// the suite has left.
pub fn test_start(
    index: usize,
    total: usize,
    name: &str,
    rep: (u32, u32),
    eta: Duration,
) -> String {
    let eta = iotoll_suite::durations::length(eta);
    format!(
        "[{index}/{total}] {name}  repetition {}/{}  suite ETA {eta}",
        rep.0, rep.1
    )
}
