//! The CPU lines of the table after a run: busy CPU and its modes, who
//! used it (the split and the top consumers), interference.

use super::or_dash;
use iotoll_model::result::{ROLE_ENDPOINT, ROLE_IOTOLL, ROLE_SELF, ROLE_SUT};
use iotoll_model::units::format_number as num;
use iotoll_model::{CpuAccount, CpuReport, ResultDoc, TopConsumer};
use std::fmt::Write;

/// This host's CPU (or why it was not measured), then the peer's.
pub(super) fn lines(o: &mut String, doc: &ResultDoc) {
    match &doc.cpu.local {
        Some(c) => local(o, c),
        None => {
            let _ = writeln!(o, "  {:<12} not measured (see notes)", "cpu");
        }
    }
    if let Some(c) = &doc.cpu.remote {
        busy_line(o, "remote cpu", c, false);
    }
}

fn local(o: &mut String, c: &CpuReport) {
    // With the split, iotoll's own figure is one of its parts.
    busy_line(o, "cpu", c, c.account.is_none());
    if c.interrupts_s.is_some() || c.ctx_switches_s.is_some() {
        let _ = writeln!(
            o,
            "  {:<12} {} interrupts/s   {} context switches/s",
            "",
            or_dash(c.interrupts_s),
            or_dash(c.ctx_switches_s),
        );
    }
    if let Some(a) = &c.account {
        let _ = writeln!(o, "  {:<12} {}", "cpu split", split(a, c.busy_pct));
    }
    // iotoll and its endpoint are parts of the split already: each figure
    // is printed once.
    let tops: Vec<String> = (c.top.iter())
        .filter(|t| c.account.is_none() || !is_own(t))
        .map(consumer)
        .collect();
    if !tops.is_empty() {
        let _ = writeln!(o, "  {:<12} {}", "top cpu", tops.join(", "));
    }
    let Some(i) = &c.interference else { return };
    let flag = if i.interfered { "  INTERFERED" } else { "" };
    let _ = match c.account {
        Some(_) => writeln!(
            o,
            "  {:<12} others + steal {} the {} % threshold{flag}",
            "interference",
            if i.interfered { "above" } else { "within" },
            num(i.threshold_pct),
        ),
        None => writeln!(
            o,
            "  {:<12} {} % of the host by other processes (threshold {} %){flag}",
            "others",
            num(i.others_pct),
            num(i.threshold_pct),
        ),
    };
}

fn busy_line(o: &mut String, label: &str, c: &CpuReport, with_self: bool) {
    let own = match with_self {
        true => format!("   iotoll itself {} %", or_dash(c.self_pct)),
        false => String::new(),
    };
    let _ = writeln!(
        o,
        "  {:<12} {} % of {} CPUs busy   user {} sys {} irq {} softirq {} steal {}   iowait {}{own}",
        label,
        num(c.busy_pct),
        c.cpus,
        num(c.modes.user + c.modes.nice),
        num(c.modes.system),
        num(c.modes.irq),
        num(c.modes.softirq),
        num(c.modes.steal),
        num(c.modes.iowait),
    );
}

/// Whether a consumer is this iotoll or its endpoint.
fn is_own(t: &TopConsumer) -> bool {
    matches!(t.role.as_deref(), Some(ROLE_SELF | ROLE_ENDPOINT))
}

/// `iotoll 9.1 + others 40.2 + kernel threads 1.2 + kernel, no process 3.0
/// = 53.5 % busy`: the window's busy CPU by who used it, parts that were
/// zero left out (iotoll's own and the others' always shown).
pub fn split(a: &CpuAccount, busy_pct: f64) -> String {
    let parts = [
        ("iotoll", a.self_pct, true),
        ("its endpoint", a.endpoint_pct, false),
        ("the test's other agents", a.agents_pct, false),
        ("system under test", a.sut_pct, false),
        ("others", a.others_pct, true),
        ("kernel threads", a.kernel_threads_pct, false),
        ("kernel, no process", a.kernel_other_pct, false),
        ("steal", a.steal_pct, false),
    ];
    let shown: Vec<String> = (parts.iter())
        .filter(|(_, v, always)| *always || *v >= 0.05)
        .map(|(name, v, _)| format!("{name} {v:.1}"))
        .collect();
    // One decimal throughout, so that a reader's sum matches to rounding.
    format!("{} = {busy_pct:.1} % busy", shown.join(" + "))
}

/// `sh pid 4242 48.1 %`, with `[k]` for a kernel thread and what an iotoll
/// process is to this run: `this iotoll`, `its endpoint`, `another iotoll`.
pub fn consumer(t: &TopConsumer) -> String {
    let role = match t.role.as_deref() {
        Some(ROLE_SELF) => " (this iotoll)",
        Some(ROLE_ENDPOINT) => " (its endpoint)",
        Some(ROLE_IOTOLL) => " (another iotoll)",
        Some(ROLE_SUT) => " (under test)",
        _ => "",
    };
    format!(
        "{} pid {}{}{role} {} %",
        t.comm,
        t.pid,
        if t.kernel_thread { " [k]" } else { "" },
        num(t.cpu_pct)
    )
}
