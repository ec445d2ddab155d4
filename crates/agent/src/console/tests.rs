use super::docs::{one_kernel_note, shared_kernel, weighted_cpu};
use super::session::compatible;
use super::*;
use iotoll_model::{CpuReport, HostFigures};

#[test]
fn offsets_from_four_timestamps() {
    // The agent's clock is 1 ms ahead; 100 us each way; 20 us inside.
    let (t1, d, ahead) = (1_000_000_000i64, 100_000i64, 1_000_000i64);
    let t2 = t1 + d + ahead;
    let t3 = t2 + 20_000;
    let t4 = t3 - ahead + d;
    let o = offset_of(t1, t2, t3, t4).unwrap();
    assert_eq!(
        o,
        Offset {
            offset_ns: ahead,
            rtt_ns: 2 * d
        }
    );
    // An asymmetric path errs by half the asymmetry, never more than
    // half the round trip.
    let t4 = t3 - ahead + 3 * d;
    let o = offset_of(t1, t2, t3, t4).unwrap();
    assert!((o.offset_ns - ahead).abs() <= o.rtt_ns / 2);
}

/// issue 24: an agent's clock near i64::MAX wrapped the offset (292
/// years); now nothing wraps, and impossible probes are refused.
#[test]
fn offsets_never_wrap() {
    let t1 = 1_795_000_000_000_000_000i64;
    let (t2, t3) = (i64::MAX - 1_000, i64::MAX - 500);
    let o = offset_of(t1, t2, t3, t1 + 2_000).unwrap();
    assert!(o.offset_ns > 7_000_000_000_000_000_000, "{o:?}");
    assert!(offset_of(t1, i64::MIN, i64::MAX, t1 + 10).is_none());
    // Held 1 s inside a 1 ms round trip; answered before asked.
    assert!(offset_of(t1, t1, t1 + 1_000_000_000, t1 + 1_000_000).is_none());
    assert!(offset_of(t1, t1 + 10, t1 + 5, t1 + 100).is_none());
}

#[test]
fn versions() {
    let info = |v: &str, proto| AgentInfo {
        version: v.into(),
        proto,
        hostname: "h".into(),
        cpus: 2,
        boot_id: None,
        targets: vec![],
        disclosure: serde_json::Value::Null,
    };
    assert!(compatible(&info(iotoll_model::VERSION, wire::AGENT_PROTO)).is_ok());
    let e = compatible(&info("0.0.9", wire::AGENT_PROTO)).unwrap_err();
    assert!(
        e.contains("0.0.9") && e.contains(iotoll_model::VERSION),
        "{e}"
    );
    assert!(compatible(&info(iotoll_model::VERSION, 99)).is_err());
}

#[test]
fn cpu_weighted_once_per_machine() {
    let cpu = |cpus, busy| CpuReport {
        cpus,
        window_s: 1.0,
        busy_pct: busy,
        ..Default::default()
    };
    let host = |name: &str, role: &str, boot: &str, c| HostFigures {
        name: name.into(),
        role: role.into(),
        boot_id: Some(boot.into()),
        cpu: Some(c),
        ..Default::default()
    };
    let hosts = vec![
        host("srv", "server", "k0", cpu(32, 10.0)),
        host("c1", "client", "k1", cpu(2, 90.0)),
        host("c2", "client", "k1", cpu(2, 90.0)),
        host("c3", "client", "k2", cpu(6, 10.0)),
    ];
    let c = weighted_cpu(&hosts, |h| h.role == "client").unwrap();
    // k1 once: (2 x 90 + 6 x 10) / 8.
    assert_eq!(c.cpus, 8);
    assert!((c.busy_pct - 30.0).abs() < 1e-9, "{}", c.busy_pct);
    let all = weighted_cpu(&hosts, |_| true).unwrap();
    assert_eq!(all.cpus, 40);
    assert!((all.busy_pct - (320.0 + 180.0 + 60.0) / 40.0).abs() < 1e-9);
    assert!(!shared_kernel(&hosts));
}

/// issue 28: quad-100m's 16 clients sharing one CPU are one phrase of the
/// one-kernel note, beside the server on its own.
#[test]
fn one_kernel_note_groups_hosts_by_cpu_set() {
    let host = |name: &str, own: Vec<u32>| HostFigures {
        name: name.into(),
        boot_id: Some("k".into()),
        cpu: Some(CpuReport {
            own_cpus: Some(own),
            ..Default::default()
        }),
        ..Default::default()
    };
    let hosts = [
        host("server", vec![0]),
        host("c1", vec![1]),
        host("c2", vec![1]),
    ];
    let n = one_kernel_note(&hosts, "");
    assert!(
        n.contains("(server on CPUs 0, c1, c2 sharing CPUs 1)"),
        "{n}"
    );
}
