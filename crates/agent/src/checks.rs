//! What the console accepts of an agent's report (issue 24): every figure
//! a finite, non-negative number within what the hardware and the
//! schedule allow, for this test and these pairs. An agent is a peer, not
//! a part of the console: a broken or hostile one must make its test
//! invalid, named, never store an absurd result as complete.

use crate::wire::{AgentInfo, AgentReport, DiskOrder, OrderLine, PairBytes, Work};
use iotoll_model::metrics as mn;
use iotoll_model::spec::{to_json, word};
use iotoll_model::{CpuReport, Kind, Metrics, ResultStatus};
use iotoll_net::proto::TestParams;
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
/// Relative rounding between figures computed from one count over one
/// window (I/Os and their bytes): IOPS x transfer size is MB/s to this.
pub const ROUNDING: f64 = 1e-9;
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
    pub offset: crate::console::Offset,
    /// From START to the report's arrival, on the console's monotonic clock.
    pub elapsed: Duration,
    /// How long before RECORD OFF (the console's monotonic clock) the
    /// report arrived; zero if after.
    pub early: Duration,
    /// What the agent said of itself when the console connected (its CPU
    /// count, the targets it allows).
    pub info: &'a AgentInfo,
}

impl Expect<'_> {
    fn time_s(&self) -> f64 {
        (self.off_ns.saturating_sub(self.on_ns)) as f64 / 1e9
    }

    /// The clock offset's uncertainty plus drift over the test.
    fn clock_s(&self) -> f64 {
        self.offset.rtt_ns.max(0) as f64 / 2e9 + DRIFT * self.elapsed.as_secs_f64()
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
    let modes = |m: &iotoll_model::CpuModes, at: &str| {
        (m.list().into_iter()).try_for_each(|(k, v)| pct(&format!("{at}: {k}"), v))
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
    if !c.per_core.is_empty() {
        // The host's figures are its CPUs' tick counts added up: each a
        // weighted mean of the CPUs' own, so never outside their range.
        between(
            &format!("{what}: busy"),
            c.busy_pct,
            c.per_core.iter().map(|k| k.busy_pct),
        )?;
        for (i, (k, v)) in c.modes.list().into_iter().enumerate() {
            let each = c.per_core.iter().map(|core| core.modes.list()[i].1);
            between(&format!("{what}: {k}"), v, each)?;
        }
    }
    if let Some(v) = c.self_pct {
        pct(&format!("{what}: self"), v)?;
    }
    let per_cpu_s = 1e9 * c.cpus as f64;
    for (k, v, max) in [
        ("interrupts_s", c.interrupts_s, per_cpu_s),
        ("ctx_switches_s", c.ctx_switches_s, per_cpu_s),
        ("nominal_mhz", c.nominal_mhz, 1e5),
    ] {
        if let Some(v) = v {
            num(&format!("{what}: {k}"), v, max)?;
        }
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

/// The CPU count of a window against what the agent said of itself: the
/// machine's, which a lab host with CPUs of its own reports beside the
/// count of its own CPUs (which its list must match).
fn cpu_count(c: &CpuReport, said: u32) -> Result<(), String> {
    let machine = c.machine.as_ref().map_or(c.cpus, |m| m.cpus);
    if machine != said {
        return Err(format!(
            "its CPU window counts {machine} CPUs, and it said it has {said} when the console connected"
        ));
    }
    if let Some(own) = &c.own_cpus {
        if own.len() != c.cpus as usize || c.machine.is_none() || c.cpus > machine {
            return Err(format!(
                "its CPU window is of its own {} CPUs but counts {} of a machine of {machine}",
                own.len(),
                c.cpus
            ));
        }
    }
    Ok(())
}

/// A host's percentage against its CPUs' own: within their range, to
/// float rounding.
fn between(what: &str, v: f64, each: impl Iterator<Item = f64>) -> Result<(), String> {
    let (lo, hi) = each.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if v < lo - 1e-6 || v > hi + 1e-6 {
        return Err(format!(
            "{what} is {} %, outside its CPUs' own ({} to {} %): a host's figure is a mean of its CPUs'",
            shown(v),
            shown(lo),
            shown(hi)
        ));
    }
    Ok(())
}

/// One agent's report against what the console scheduled and asked. A
/// disk result's spec is replaced by the one the console ordered (the
/// agent's own facts, its targets' kinds and sizes and the engine that
/// ran, kept once they agree with the order).
pub fn report(r: &mut AgentReport, e: &Expect) -> Result<(), String> {
    if r.interrupted {
        return Err("it says its window was cut short, and the console stopped nothing".into());
    }
    window(r, e)?;
    series(&r.series)?;
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
        Work::Disk { order } => disk_report(r, order, e),
        Work::NetServe { params, .. } | Work::NetClient { params, .. } => net_report(r, params, e),
    }
}

/// Its window: reported in time, its edges where the console scheduled
/// them (on the console's clock), as long as scheduled, and its CPU
/// window within it.
fn window(r: &AgentReport, e: &Expect) -> Result<(), String> {
    let clock = e.clock_s();
    if e.early.as_secs_f64() > EARLY_SLACK.as_secs_f64() + clock {
        return Err(format!(
            "it reported {:.3} s before RECORD OFF",
            e.early.as_secs_f64()
        ));
    }
    let time = e.time_s();
    let edge = EDGE_SLACK.as_secs_f64() + clock;
    let console = |ns: Option<i64>, at: i64, which: &str| -> Result<(), String> {
        let Some(ns) = ns else {
            return Err(format!("it does not say when its window {which}"));
        };
        let d = (i128::from(ns) - i128::from(e.offset.offset_ns) - i128::from(at)) as f64 / 1e9;
        if d.abs() > edge {
            return Err(format!(
                "its window {which} {d:+.3} s from the schedule (its clock offset applied)"
            ));
        }
        Ok(())
    };
    console(r.on_ns, e.on_ns, "opened")?;
    console(r.off_ns, e.off_ns, "closed")?;
    if let (Some(on), Some(off)) = (r.on_ns, r.off_ns) {
        if off <= on {
            return Err(format!(
                "its window closed ({off} ns on its clock) before it opened ({on} ns)"
            ));
        }
    }
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
        cpu_count(c, e.info.cpus)?;
    }
    Ok(())
}

/// A disk test's report: a complete disk result whose spec is the
/// order's; the spec is replaced by the one the console ordered.
fn disk_report(r: &mut AgentReport, order: &DiskOrder, e: &Expect) -> Result<(), String> {
    if !r.pairs.is_empty() {
        return Err("a disk test's report has network pairs".into());
    }
    let window_s = r.window_s;
    let Some(d) = r.disk.as_mut() else {
        return Err("a disk test's report has no disk result".into());
    };
    if d.kind != Kind::Disk {
        return Err(format!("its disk result is of kind {}", word(&d.kind)));
    }
    if d.status != ResultStatus::Complete {
        return Err(format!(
            "its disk result says {}: only a complete one is stored as complete",
            word(&d.status)
        ));
    }
    let spec = disk_spec(order, e.info, &d.spec.to_value())?;
    disk_metrics(&d.metrics, e)?;
    series(&d.series)?;
    disk_coherent(&d.metrics, order, &spec, window_s)?;
    d.spec = iotoll_model::spec::Spec::Disk(spec.into());
    Ok(())
}

/// A network test's report: exactly its pairs (a host may serve some and
/// be the client of others), each with the test's connections and bytes
/// within what its links move.
fn net_report(r: &AgentReport, params: &TestParams, e: &Expect) -> Result<(), String> {
    if r.disk.is_some() {
        return Err("a network test's report has a disk result".into());
    }
    // A UDP pair's flows are sockets, and a connection-rate pair's
    // clients open one connection after another: not the data
    // connections the endpoint holds.
    let conns = match params.kind {
        iotoll_net::TestKind::Udp | iotoll_net::TestKind::Crr | iotoll_net::TestKind::Cc => {
            params.conns
        }
        _ => iotoll_net::server::server_roles(params).len() as u32,
    };
    let (served, clients) = e.work.slots();
    let mut want: Vec<u32> = served.iter().chain(clients).map(|p| p.pair).collect();
    let mut got: Vec<u32> = r.pairs.iter().map(|p| p.pair).collect();
    want.sort_unstable();
    got.sort_unstable();
    if want != got {
        return Err(format!(
            "it reports pairs {got:?}; its pairs in this test are {want:?}"
        ));
    }
    let bytes_max = e.bytes_max();
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
    Ok(())
}

/// An agent's seconds (its network series, or its disk result's): each in
/// time order, in a phase the run has, and every figure finite,
/// non-negative and within what hardware moves. They reach the merged
/// series, its chart and the store.
fn series(points: &[iotoll_model::SeriesPoint]) -> Result<(), String> {
    let mut last = 0.0;
    for (i, p) in points.iter().enumerate() {
        let at = format!("second {} of its series", i + 1);
        num(&format!("{at}: t_s"), p.t_s, 1e7)?;
        if p.t_s <= last && i > 0 {
            return Err(format!(
                "{at} is at {} s, not after the one before ({last} s)",
                p.t_s
            ));
        }
        last = p.t_s;
        if !matches!(p.phase.as_str(), "ramp" | "measure" | "stop") {
            return Err(format!("{at} is in phase '{}'", p.phase.escape_debug()));
        }
        for (k, v, max) in [
            ("iops", p.iops, IOPS_MAX),
            ("trans_s", p.trans_s, IOPS_MAX),
            ("mb_s", p.mb_s, BYTES_S_MAX / 1e6),
            ("mbit_s", p.mbit_s, BYTES_S_MAX * 8.0 / 1e6),
            ("cpu_pct", p.cpu_pct, PCT_MAX),
        ] {
            if let Some(v) = v {
                num(&format!("{at}: {k}"), v, max)?;
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
            mn::QD_ACHIEVED | mn::QD_COMPLETED => 1e7,
            mn::ERRORS => IOPS_MAX * (e.elapsed.as_secs_f64() + 1.0),
            _ => f64::MAX,
        };
        num(&format!("its disk result's {k}"), *v, max)?;
    }
    Ok(())
}

/// The targets an order runs on: those it names, or every one the agent
/// allows (as the agent chooses them).
fn ordered_targets(order: &DiskOrder, info: &AgentInfo) -> Vec<String> {
    if order.targets.is_empty() {
        info.targets.iter().map(|t| t.path.clone()).collect()
    } else {
        order.targets.clone()
    }
}

/// The spec of a disk result as the console ordered it: every parameter
/// the console sent is its own; what only the agent knows (its targets'
/// kinds, sizes and blocks, the engine that ran, O_DIRECT, pinned CPUs,
/// and what the order left to it: the alignment, the region's length,
/// workers per core) is the agent's, within what the order allows. A spec
/// that says otherwise than the order is refused, the parameter named.
pub fn disk_spec(
    order: &DiskOrder,
    info: &AgentInfo,
    theirs: &serde_json::Value,
) -> Result<iotoll_model::spec::DiskSpec, String> {
    use iotoll_model::spec::{DiskSpec, LineSpec, TargetSpec};
    let given: DiskSpec = serde_json::from_value(theirs.clone())
        .map_err(|e| format!("its disk result's spec is not a disk spec ({e})"))?;
    let paths = ordered_targets(order, info);
    if given.targets.len() != paths.len() || paths.is_empty() {
        return Err(format!(
            "its disk result's spec lists {} targets; the test runs on {}",
            given.targets.len(),
            paths.len()
        ));
    }
    let lines: Vec<iotoll_disk::AccessLine> =
        order.lines.iter().map(OrderLine::access_line).collect();
    let single = (order.lines.len() == 1).then(|| &order.lines[0]);
    let ntargets = paths.len() as u32;
    let engine = iotoll_disk::EngineChoice::parse(&order.engine)?;
    let mut want = DiskSpec {
        spec: order.spec_name.clone(),
        target: paths[0].clone(),
        targets: (paths.iter().zip(&given.targets))
            .map(|(p, t)| TargetSpec {
                path: p.clone(),
                ..t.clone()
            })
            .collect(),
        ntargets: (ntargets > 1).then_some(ntargets),
        bs: single.map(|l| l.bs),
        read_pct: single.map(|l| l.read_pct),
        random_pct: single.map(|l| l.random_pct),
        lines: (order.lines.iter().zip(&lines).enumerate())
            .map(|(k, (o, l))| LineSpec {
                share_pct: o.share_pct,
                bs: o.bs,
                read_pct: o.read_pct,
                random_pct: o.random_pct,
                burst_delay_s: l.burst_delay.as_secs_f64(),
                burst_len: o.burst_len,
                align: o
                    .align
                    .unwrap_or_else(|| given.lines.get(k).map_or(0, |g| g.align)),
            })
            .collect(),
        mix: iotoll_disk::runner::mix_word_of(order.spec_name.as_deref(), &lines),
        qd: order.qd,
        workers: if order.workers > 0 {
            order.workers
        } else {
            // One per core: no more than its CPUs on every target.
            given
                .workers
                .clamp(1, info.cpus.saturating_mul(ntargets).max(1))
        },
        spread: order.spread,
        size: order.size.unwrap_or(given.size),
        offset: order.offset,
        align: single.map(|l| l.align.unwrap_or(given.align.unwrap_or(0))),
        burst_delay_s: single.map(|_| lines[0].burst_delay.as_secs_f64()),
        burst_len: single.map(|l| l.burst_len),
        engine_requested: word(&engine),
        ramp_s: Duration::from_millis(order.ramp_ms).as_secs_f64(),
        time_s: Duration::from_millis(order.time_ms).as_secs_f64(),
        ..given.clone()
    };
    if let Some(t) = want.targets.first() {
        (want.target_kind, want.target_size) = (t.kind.clone(), t.size);
    }
    let (a, b) = (to_json(&given), to_json(&want));
    if a != b {
        let keys = (a.as_object().into_iter().chain(b.as_object()))
            .flat_map(|o| o.keys().cloned())
            .collect::<std::collections::BTreeSet<_>>();
        let what = |v: &serde_json::Value, k: &str| {
            let s = v.get(k).map_or("nothing".into(), |x| x.to_string());
            let s: String = s.chars().take(120).collect();
            iotoll_model::text::printable(&s).into_owned()
        };
        for k in keys {
            if a.get(&k) != b.get(&k) {
                return Err(format!(
                    "its disk result's spec says {k} {}; the console ordered {}",
                    what(&a, &k),
                    what(&b, &k)
                ));
            }
        }
    }
    if want.size > want.target_size.saturating_sub(want.offset) || want.size == 0 {
        return Err(format!(
            "its disk result's spec has a region of {} bytes at {} on a target of {}",
            want.size, want.offset, want.target_size
        ));
    }
    Ok(want)
}

/// A disk result's figures against each other and the test: I/Os times
/// their transfer size are the bytes (to rounding with one size, between
/// the smallest and largest with several), and no more I/Os are in flight
/// on average (Little's law: IOPS x mean latency) than the test keeps
/// outstanding, qd x workers x targets, plus those caught at the window's
/// edges.
fn disk_coherent(
    m: &Metrics,
    order: &DiskOrder,
    spec: &iotoll_model::spec::DiskSpec,
    window_s: f64,
) -> Result<(), String> {
    let get = |k: &str| m.get(k).copied();
    let near = |a: f64, b: f64| (a - b).abs() <= ROUNDING * a.abs().max(b.abs()) + 1e-9;
    type Sel = fn(&OrderLine) -> bool;
    let ways: [(&str, &str, Sel); 3] = [
        (mn::IOPS, mn::MB_S, |_| true),
        (mn::READ_IOPS, mn::READ_MB_S, |l| l.read_pct > 0),
        (mn::WRITE_IOPS, mn::WRITE_MB_S, |l| l.read_pct < 100),
    ];
    for (iops_k, mb_k, of) in ways {
        let (iops, mb) = (get(iops_k).unwrap_or(0.0), get(mb_k).unwrap_or(0.0));
        let sizes: Vec<u64> = (order.lines.iter())
            .filter(|l| l.share_pct > 0 && of(l))
            .map(|l| l.bs)
            .collect();
        let (Some(lo), Some(hi)) = (sizes.iter().min(), sizes.iter().max()) else {
            if iops > 0.0 || mb > 0.0 {
                return Err(format!(
                    "its disk result has {iops_k} {} and {mb_k} {}, and the test does no such I/O",
                    shown(iops),
                    shown(mb)
                ));
            }
            continue;
        };
        let bytes = mb * 1e6;
        let (least, most) = (iops * *lo as f64, iops * *hi as f64);
        if (bytes < least && !near(bytes, least)) || (bytes > most && !near(bytes, most)) {
            let size = if lo == hi {
                format!("{lo} bytes")
            } else {
                format!("{lo} to {hi} bytes")
            };
            return Err(format!(
                "its disk result's {iops_k} {} at {size} per I/O is not its {mb_k} {}",
                shown(iops),
                shown(mb)
            ));
        }
    }
    for (all, r, w) in [
        (mn::IOPS, mn::READ_IOPS, mn::WRITE_IOPS),
        (mn::MB_S, mn::READ_MB_S, mn::WRITE_MB_S),
    ] {
        let (a, rv, wv) = (get(all), get(r), get(w));
        if let (Some(a), Some(rv), Some(wv)) = (a, rv, wv) {
            if !near(a, rv + wv) {
                return Err(format!(
                    "its disk result's {all} {} is not its {r} {} plus {w} {}",
                    shown(a),
                    shown(rv),
                    shown(wv)
                ));
            }
        }
    }
    let ntargets = spec.targets.len().max(1) as f64;
    let outstanding = spec.qd as f64 * spec.workers as f64 * ntargets;
    if let (Some(iops), Some(mean)) = (get(mn::IOPS), get(mn::LAT_MEAN_US)) {
        let window = get(mn::WINDOW_S).filter(|w| *w > 0.0).unwrap_or(window_s);
        let lat_max = get(mn::LAT_MAX_US).unwrap_or(mean).max(mean);
        let depth = iotoll_disk::occupancy::littles_law_depth(iops, mean);
        let most = outstanding
            + iotoll_disk::occupancy::littles_law_tolerance(
                outstanding,
                outstanding,
                lat_max,
                window,
            );
        if depth > most {
            return Err(format!(
                "its disk result's {} IOPS at a mean latency of {} us are {depth:.1} I/Os in flight (Little's law), and the test keeps at most {outstanding} outstanding (qd x workers x targets)",
                shown(iops),
                shown(mean)
            ));
        }
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
        let allowed = buffers + crate::per_s(most, p.window_s) * p.edges_s;
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
/// same CPU count in what they said and in their CPU windows (the
/// machine's, beside a lab host's own CPUs).
pub fn one_machine(
    a: (&str, u32, Option<&CpuReport>),
    b: (&str, u32, Option<&CpuReport>),
) -> Result<(), String> {
    let cpus = |(_, info, c): (&str, u32, Option<&CpuReport>)| {
        let machine = |c: &CpuReport| c.machine.as_ref().map_or(c.cpus, |m| m.cpus);
        [Some(info), c.map(machine)]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
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

    /// A hostile agent's seconds reach the merged series, its chart and
    /// the store: out of order, in no phase of the run, or beyond what
    /// hardware moves, they are refused, naming the second.
    #[test]
    fn an_agents_series_is_checked_second_by_second() {
        let point = |t_s: f64, mbit_s: f64| iotoll_model::SeriesPoint {
            t_s,
            phase: "measure".into(),
            iops: None,
            mb_s: None,
            mbit_s: Some(mbit_s),
            trans_s: None,
            cpu_pct: Some(50.0),
        };
        series(&[point(1.0, 940.0), point(2.0, 941.0)]).unwrap();
        for (bad, why) in [
            (
                vec![point(1.0, f64::NAN)],
                "second 1 of its series: mbit_s is not a number",
            ),
            (vec![point(1.0, -5.0)], "mbit_s is negative"),
            (vec![point(1.0, 1e300)], "beyond any possible"),
            (
                vec![point(2.0, 1.0), point(1.0, 1.0)],
                "not after the one before",
            ),
            (vec![point(f64::INFINITY, 1.0)], "t_s is not a number"),
        ] {
            let e = series(&bad).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let mut odd = point(1.0, 1.0);
        odd.phase = "done\u{1b}[2J".into();
        let e = series(&[odd]).unwrap_err();
        assert!(e.contains("phase") && !e.contains('\u{1b}'), "{e}");
    }

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

    /// issue 28: a lab host on CPUs of its own counts them, the machine's
    /// beside them matching what it said; inconsistent counts are refused.
    #[test]
    fn own_cpus_are_checked_against_the_machine() {
        let mut c = CpuReport {
            cpus: 1,
            own_cpus: Some(vec![1]),
            machine: Some(iotoll_model::MachineCpu {
                cpus: 2,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(cpu_count(&c, 2).is_ok());
        assert!(cpu_count(&c, 1).unwrap_err().contains("counts 2 CPUs"));
        c.own_cpus = Some(vec![0, 1]);
        assert!(cpu_count(&c, 2).unwrap_err().contains("own 2 CPUs"));
        c.machine = None;
        c.own_cpus = None;
        assert!(cpu_count(&c, 2).is_err());
        c.cpus = 2;
        assert!(cpu_count(&c, 2).is_ok());
    }

    /// IOPS x transfer size against MB/s: exact for one size, between
    /// the smallest and largest for a mixed spec; Little's law against
    /// the outstanding I/Os with the edges' allowance.
    #[test]
    fn disk_figures_agree_with_each_other_and_the_test() {
        let order = DiskOrder::from_spec(&iotoll_disk::DiskRequest {
            lines: vec![
                iotoll_disk::AccessLine::new(50, 4096, 100, 100),
                iotoll_disk::AccessLine::new(50, 65536, 0, 100),
            ],
            qd: 4,
            workers: 2,
            time: Duration::from_secs(1),
            ..Default::default()
        });
        let spec: iotoll_model::spec::DiskSpec = serde_json::from_value(serde_json::json!({
            "spec": null, "target": "t", "target_kind": "existing-file", "target_size": 1u64 << 30,
            "qd": 4, "workers": 2, "size": 1u64 << 30, "offset": 0, "logical_block_size": 512,
            "engine": "io_uring", "engine_requested": "auto", "direct": true, "ramp_s": 0.0, "time_s": 1.0
        }))
        .unwrap();
        let m = |pairs: &[(&str, f64)]| -> Metrics {
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        // 1,000 reads of 4 KiB and 1,000 writes of 64 KiB per second,
        // 8 outstanding at 1 ms each (8,000 I/Os/s x 1 ms = 8 in flight).
        let honest = m(&[
            (mn::IOPS, 2000.0),
            (mn::READ_IOPS, 1000.0),
            (mn::WRITE_IOPS, 1000.0),
            (mn::MB_S, 4.096 + 65.536),
            (mn::READ_MB_S, 4.096),
            (mn::WRITE_MB_S, 65.536),
            (mn::LAT_MEAN_US, 4000.0),
            (mn::LAT_MAX_US, 9000.0),
            (mn::WINDOW_S, 1.0),
        ]);
        disk_coherent(&honest, &order, &spec, 1.0).unwrap();
        let mut bad = honest.clone();
        bad.insert(mn::READ_MB_S.into(), 40.0);
        bad.insert(mn::MB_S.into(), 105.536);
        let e = disk_coherent(&bad, &order, &spec, 1.0).unwrap_err();
        assert!(e.contains("read_iops") && e.contains("4096 bytes"), "{e}");
        let mut slow = honest.clone();
        slow.insert(mn::LAT_MEAN_US.into(), 8000.0);
        let e = disk_coherent(&slow, &order, &spec, 1.0).unwrap_err();
        assert!(
            e.contains("Little's law") && e.contains("at most 8 "),
            "{e}"
        );
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
