//! What the console accepts of an agent's report (issue 24): every figure
//! a finite, non-negative number within what the hardware and the
//! schedule allow, for this test and these pairs. An agent is a peer, not
//! a part of the console: a broken or hostile one must make its test
//! invalid, named, never store an absurd result as complete.

use crate::wire::{AgentReport, PairBytes, Work};
use iotoll_model::metrics as mn;
use iotoll_model::CpuReport;
use std::time::Duration;

/// Largest percentage of all CPUs a figure may be: 100, with room for the
/// rounding of tick counts and of per-process times sampled apart.
pub const PCT_MAX: f64 = 100.5;
/// More CPUs than any Linux kernel runs (NR_CPUS is at most 8192).
pub const CPUS_MAX: u32 = 16_384;
/// Bytes per second no interface, disk or page cache moves: 1 TB/s.
pub const BYTES_S_MAX: f64 = 1e12;
/// I/Os per second no host completes (the null engine, every core).
pub const IOPS_MAX: f64 = 1e10;
/// How far a window's edge may be from the schedule, besides the clock
/// offset's uncertainty: an agent opens its window at the instant it was
/// given, late by what a loaded host's scheduler adds.
pub const EDGE_SLACK: Duration = Duration::from_secs(1);
/// How much earlier than RECORD OFF a report may arrive, besides the
/// clock offset's uncertainty: none, for an honest agent.
pub const EARLY_SLACK: Duration = Duration::from_millis(100);
/// Clocks drift apart (NTP slews at most 500 ppm each way).
pub const DRIFT: f64 = 1e-3;
/// Payload that may be in a connection's buffers at either edge of the
/// windows (send and receive buffers, twice, and the path), at least.
pub const IN_FLIGHT_PER_CONN: u64 = 64 << 20;

/// What the console expects of one agent's report.
pub struct Expect<'a> {
    /// The host's work in this test (its pairs, for a network test).
    pub work: &'a Work,
    /// The scheduled window on the console's clock, ns.
    pub on_ns: i64,
    pub off_ns: i64,
    /// The host's clock offset (its clock minus the console's) and the
    /// round trip it was measured over.
    pub offset_ns: i64,
    pub rtt_ns: i64,
    /// From START to the report's arrival, on the console's monotonic clock.
    pub elapsed: Duration,
    /// How long before RECORD OFF (the console's monotonic clock) the
    /// report arrived; zero if after.
    pub early: Duration,
}

impl Expect<'_> {
    fn time_s(&self) -> f64 {
        (self.off_ns.saturating_sub(self.on_ns)) as f64 / 1e9
    }

    /// The clock offset's uncertainty plus drift over the test.
    fn clock_s(&self) -> f64 {
        self.rtt_ns.max(0) as f64 / 2e9 + DRIFT * self.elapsed.as_secs_f64()
    }

    /// Most bytes any counter can hold: the whole test at [`BYTES_S_MAX`].
    fn bytes_max(&self) -> f64 {
        BYTES_S_MAX * (self.elapsed.as_secs_f64() + 1.0)
    }
}

/// A figure as a message shows it: 1e308, not 309 digits.
fn shown(v: f64) -> String {
    if v.abs() >= 1e12 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn num(what: &str, v: f64, max: f64) -> Result<(), String> {
    if !v.is_finite() {
        return Err(format!("{what} is not a number ({v})"));
    }
    if v < 0.0 {
        return Err(format!("{what} is negative ({})", shown(v)));
    }
    if v > max {
        return Err(format!(
            "{what} is {}, beyond any possible ({})",
            shown(v),
            shown(max)
        ));
    }
    Ok(())
}

fn pct(what: &str, v: f64) -> Result<(), String> {
    num(&format!("{what} (% of all CPUs)"), v, PCT_MAX)
}

/// A CPU window's figures: percentages of all CPUs within 0..100, a
/// plausible CPU count, rates and clock finite and non-negative.
pub fn cpu(c: &CpuReport, what: &str, window_max_s: f64) -> Result<(), String> {
    if c.cpus == 0 || c.cpus > CPUS_MAX {
        return Err(format!("{what}: {} CPUs", c.cpus));
    }
    num(&format!("{what}: window_s"), c.window_s, window_max_s)?;
    pct(&format!("{what}: busy"), c.busy_pct)?;
    let modes = |m: &iotoll_model::CpuModes, at: &str| -> Result<(), String> {
        for (k, v) in [
            ("user", m.user),
            ("nice", m.nice),
            ("system", m.system),
            ("irq", m.irq),
            ("softirq", m.softirq),
            ("iowait", m.iowait),
            ("steal", m.steal),
            ("idle", m.idle),
        ] {
            pct(&format!("{at}: {k}"), v)?;
        }
        Ok(())
    };
    modes(&c.modes, what)?;
    if c.per_core.len() > c.cpus as usize {
        return Err(format!(
            "{what}: {} cores in a window of {} CPUs",
            c.per_core.len(),
            c.cpus
        ));
    }
    for k in &c.per_core {
        let at = format!("{what}: CPU {}", k.cpu);
        pct(&format!("{at} busy"), k.busy_pct)?;
        modes(&k.modes, &at)?;
    }
    if let Some(v) = c.self_pct {
        pct(&format!("{what}: self"), v)?;
    }
    let per_cpu_s = 1e9 * c.cpus as f64;
    for (k, v) in [
        ("interrupts_s", c.interrupts_s),
        ("ctx_switches_s", c.ctx_switches_s),
    ] {
        if let Some(v) = v {
            num(&format!("{what}: {k}"), v, per_cpu_s)?;
        }
    }
    if let Some(v) = c.nominal_mhz {
        num(&format!("{what}: nominal_mhz"), v, 1e5)?;
    }
    for t in c
        .top
        .iter()
        .chain(c.interference.iter().flat_map(|i| &i.processes))
    {
        pct(&format!("{what}: process {}", t.pid), t.cpu_pct)?;
    }
    if let Some(i) = &c.interference {
        pct(&format!("{what}: others"), i.others_pct)?;
        pct(&format!("{what}: steal"), i.steal_pct)?;
        pct(&format!("{what}: interference threshold"), i.threshold_pct)?;
    }
    Ok(())
}

/// One agent's report against what the console scheduled and asked.
pub fn report(r: &AgentReport, e: &Expect) -> Result<(), String> {
    if r.interrupted {
        return Err("it says its window was cut short, and the console stopped nothing".into());
    }
    let clock = e.clock_s();
    if e.early.as_secs_f64() > EARLY_SLACK.as_secs_f64() + clock {
        return Err(format!(
            "it reported {:.3} s before RECORD OFF",
            e.early.as_secs_f64()
        ));
    }
    let time = e.time_s();
    let edge = EDGE_SLACK.as_secs_f64() + clock;
    // Its edges on the console's clock, against the schedule.
    let console = |ns: Option<i64>, at: i64, which: &str| -> Result<(), String> {
        let Some(ns) = ns else {
            return Err(format!("it does not say when its window {which}"));
        };
        let d = (i128::from(ns) - i128::from(e.offset_ns) - i128::from(at)) as f64 / 1e9;
        if d.abs() > edge {
            return Err(format!(
                "its window {which} {d:+.3} s from the schedule (its clock offset applied)"
            ));
        }
        Ok(())
    };
    console(r.on_ns, e.on_ns, "opened")?;
    console(r.off_ns, e.off_ns, "closed")?;
    let span = (time / 2.0).min(EDGE_SLACK.as_secs_f64()) + clock;
    num("its window_s", r.window_s, time + span)?;
    if r.window_s < time - span {
        return Err(format!(
            "its window is {:.3} s of the {time:.3} s scheduled",
            r.window_s
        ));
    }
    if let Some(c) = &r.cpu {
        cpu(c, "its CPU window", time + span)?;
    }
    let bytes_max = e.bytes_max();
    if r.ifaces.len() > 4096 {
        return Err(format!("it lists {} interfaces", r.ifaces.len()));
    }
    for i in &r.ifaces {
        for (k, v) in [
            ("rx_bytes", i.rx_bytes),
            ("tx_bytes", i.tx_bytes),
            ("rx_packets", i.rx_packets),
            ("tx_packets", i.tx_packets),
        ] {
            num(&format!("interface {}: {k}", i.name), v as f64, bytes_max)?;
        }
    }
    match e.work {
        Work::Disk { .. } => {
            if !r.pairs.is_empty() {
                return Err("a disk test's report has network pairs".into());
            }
            let Some(d) = &r.disk else {
                return Err("a disk test's report has no disk result".into());
            };
            disk_metrics(&d.metrics, e)?;
        }
        Work::NetServe { params, pairs, .. } | Work::NetClient { params, pairs, .. } => {
            if r.disk.is_some() {
                return Err("a network test's report has a disk result".into());
            }
            let conns = iotoll_net::server::server_roles(params).len() as u32;
            let mut want: Vec<u32> = pairs.iter().map(|p| p.pair).collect();
            let mut got: Vec<u32> = r.pairs.iter().map(|p| p.pair).collect();
            want.sort_unstable();
            got.sort_unstable();
            if want != got {
                return Err(format!(
                    "it reports pairs {got:?}; its pairs in this test are {want:?}"
                ));
            }
            for p in &r.pairs {
                if p.conns != conns {
                    return Err(format!(
                        "pair {}: {} connections, the test has {conns}",
                        p.pair + 1,
                        p.conns
                    ));
                }
                num(&format!("pair {} rx", p.pair + 1), p.rx as f64, bytes_max)?;
                num(&format!("pair {} tx", p.pair + 1), p.tx as f64, bytes_max)?;
            }
        }
    }
    Ok(())
}

/// A disk result's metrics: every one finite and non-negative, rates and
/// latencies within what the hardware and the test's length allow.
fn disk_metrics(m: &iotoll_model::Metrics, e: &Expect) -> Result<(), String> {
    let elapsed_us = (e.elapsed.as_secs_f64() + 1.0) * 1e6;
    let mb_s_max = BYTES_S_MAX / 1e6;
    for (k, v) in m {
        let max = match k.as_str() {
            mn::IOPS | mn::READ_IOPS | mn::WRITE_IOPS => IOPS_MAX,
            mn::MB_S | mn::READ_MB_S | mn::WRITE_MB_S | mn::MIB_S => mb_s_max,
            k if k.starts_with("lat_") => elapsed_us,
            k if k.starts_with("cpu_") && k.ends_with("_pct") => PCT_MAX,
            mn::QD_ACHIEVED => 1e7,
            mn::ERRORS => IOPS_MAX * (e.elapsed.as_secs_f64() + 1.0),
            _ => f64::MAX,
        };
        num(&format!("its disk result's {k}"), *v, max)?;
    }
    Ok(())
}

/// One pair's bytes at its two ends: what the client sent in its window
/// and what the server received in its own (and the other way) differ
/// by no more than could be in flight at the windows' edges.
pub struct PairEnds<'a> {
    pub pair: u32,
    pub client: &'a PairBytes,
    pub server: &'a PairBytes,
    /// Both windows, s, and how far apart their edges were (on the
    /// console's clock, clock uncertainty included), s.
    pub window_s: f64,
    pub edges_s: f64,
    /// The test's socket buffer request, bytes.
    pub sockbuf: Option<u64>,
}

pub fn pair_agrees(p: &PairEnds) -> Result<(), String> {
    let per_conn = IN_FLIGHT_PER_CONN.max(p.sockbuf.unwrap_or(0).saturating_mul(8));
    let buffers = per_conn.saturating_mul(p.client.conns.max(p.server.conns) as u64) as f64;
    for (sent, got, way) in [
        (p.client.tx, p.server.rx, "client to server"),
        (p.server.tx, p.client.rx, "server to client"),
    ] {
        let (sent, got) = (sent as f64, got as f64);
        let most = sent.max(got);
        let rate = if p.window_s > 0.0 {
            most / p.window_s
        } else {
            0.0
        };
        let allowed = buffers + rate * p.edges_s;
        if (sent - got).abs() > allowed {
            return Err(format!(
                "pair {}, {way}: {sent} bytes sent and {got} received, more apart than could be in flight ({allowed:.0})",
                p.pair + 1
            ));
        }
    }
    Ok(())
}

/// Hosts that claim one kernel (one boot id) must be one machine: the
/// same CPU count in what they said and in their CPU windows.
pub fn one_machine(
    a: (&str, u32, Option<&CpuReport>),
    b: (&str, u32, Option<&CpuReport>),
) -> Result<(), String> {
    let cpus = |(_, info, c): (&str, u32, Option<&CpuReport>)| {
        let mut v = vec![info];
        v.extend(c.map(|c| c.cpus));
        v
    };
    let (ca, cb) = (cpus(a), cpus(b));
    if ca.iter().chain(&cb).any(|n| *n != ca[0]) {
        return Err(format!(
            "hosts {} and {} claim one kernel (one boot id) with different CPU counts ({ca:?} and {cb:?}): one of them is not what it says",
            a.0, b.0
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_out_of_bounds_are_named() {
        let mut c = CpuReport {
            cpus: 4,
            window_s: 1.0,
            busy_pct: 1e308,
            ..Default::default()
        };
        let e = cpu(&c, "cpu", 2.0).unwrap_err();
        assert!(e.contains("busy") && e.contains("is 1e308, beyond"), "{e}");
        c.busy_pct = -40.0;
        assert!(cpu(&c, "cpu", 2.0).unwrap_err().contains("negative"));
        c.busy_pct = f64::NAN;
        assert!(cpu(&c, "cpu", 2.0).unwrap_err().contains("not a number"));
        c.busy_pct = 100.0;
        assert!(cpu(&c, "cpu", 2.0).is_ok());
        c.cpus = 0;
        assert!(cpu(&c, "cpu", 2.0).is_err());
    }

    #[test]
    fn a_pairs_ends_agree_within_what_is_in_flight() {
        let b = |tx, rx| PairBytes {
            pair: 0,
            conns: 2,
            rx,
            tx,
        };
        let (c, s) = (b(1_000_000_000, 0), b(0, 999_000_000));
        let ends = PairEnds {
            pair: 0,
            client: &c,
            server: &s,
            window_s: 1.0,
            edges_s: 0.001,
            sockbuf: None,
        };
        assert!(pair_agrees(&ends).is_ok());
        let s3 = b(0, 3_000_000_000);
        let e = pair_agrees(&PairEnds {
            server: &s3,
            ..ends
        })
        .unwrap_err();
        assert!(e.contains("pair 1, client to server"), "{e}");
    }
}
