//! What a test measures, read from a result's `spec`: the workload
//! parameters that must be equal for two results to be compared, the test
//! name a single run gets from them (the suite scheme,
//! `stream/dir=tx,conns=4,msg=64k`), and the differences between two specs
//! ("conns 4 vs 1"). Single runs, imports and `compare` all go through here,
//! so an fio or iperf3 import gets the name the equivalent native run gets.
//!
//! What is meant to differ between configurations — the engine, O_DIRECT,
//! the target, MTU, the adapter — is not a workload parameter: it is the
//! configuration, named by the run's `--config` label and its disclosure.

use crate::units::format_size;
use crate::Kind;
use serde_json::Value;

#[derive(Clone, Copy)]
enum Fmt {
    Size,
    Int,
    Text,
    Secs,
    OnOff,
    /// Bits per second; null: unlimited.
    Rate,
}

/// One workload parameter: its key in `spec`, the short name shown, how its
/// value is written, and whether it is part of a single run's test name.
struct Param {
    key: &'static str,
    label: &'static str,
    fmt: Fmt,
    in_name: bool,
}

const fn p(key: &'static str, label: &'static str, fmt: Fmt, in_name: bool) -> Param {
    Param {
        key,
        label,
        fmt,
        in_name,
    }
}

const DISK: &[Param] = &[
    p("bs", "bs", Fmt::Size, true),
    p("read_pct", "read", Fmt::Int, true),
    p("random_pct", "random", Fmt::Int, true),
    // Written only for a mixed spec, several targets, spread workers.
    p("mix", "mix", Fmt::Text, true),
    p("qd", "qd", Fmt::Int, true),
    p("workers", "workers", Fmt::Int, true),
    p("ntargets", "targets", Fmt::Int, true),
    p("spread", "spread", Fmt::OnOff, true),
    p("size", "size", Fmt::Size, false),
    p("align", "align", Fmt::Size, false),
    p("burst_delay_s", "burst-delay", Fmt::Secs, false),
    p("burst_len", "burst-len", Fmt::Int, false),
];

const STREAM: &[Param] = &[
    p("dir", "dir", Fmt::Text, true),
    p("conns", "conns", Fmt::Int, true),
    p("msg", "msg", Fmt::Size, true),
    p("sockbuf", "sockbuf", Fmt::Size, false),
    p("nodelay", "nodelay", Fmt::OnOff, false),
];

const RR: &[Param] = &[
    p("req", "req", Fmt::Size, true),
    p("resp", "resp", Fmt::Size, true),
    p("conns", "conns", Fmt::Int, true),
    p("burst", "burst", Fmt::Int, true),
    p("sockbuf", "sockbuf", Fmt::Size, false),
    p("nodelay", "nodelay", Fmt::OnOff, false),
];

const CRR: &[Param] = &[
    p("req", "req", Fmt::Size, true),
    p("resp", "resp", Fmt::Size, true),
    p("conns", "conns", Fmt::Int, true),
    p("linger0", "linger0", Fmt::OnOff, false),
];

const CC: &[Param] = &[
    p("conns", "conns", Fmt::Int, true),
    p("linger0", "linger0", Fmt::OnOff, false),
];

const UDP: &[Param] = &[
    p("dir", "dir", Fmt::Text, true),
    p("conns", "conns", Fmt::Int, true),
    p("size", "size", Fmt::Int, true),
    p("rate", "rate", Fmt::Rate, true),
];

/// What every kind has last: the window and the ramp-up before it.
const WINDOW: &[Param] = &[
    p("time_s", "time", Fmt::Secs, false),
    p("ramp_s", "ramp", Fmt::Secs, false),
];

/// The parameters of a kind.
fn table(kind: Kind) -> impl Iterator<Item = &'static Param> {
    let own = match kind {
        Kind::Disk => DISK,
        Kind::NetStream => STREAM,
        Kind::NetRr => RR,
        Kind::NetUdp => UDP,
        Kind::NetCrr => CRR,
        Kind::NetCc => CC,
    };
    own.iter().chain(WINDOW)
}

fn show(fmt: Fmt, v: &Value) -> Option<String> {
    Some(match (fmt, v) {
        (Fmt::Rate, Value::Null) => "unlimited".to_string(),
        (Fmt::Rate, v) => crate::units::format_rate(v.as_f64().filter(|x| *x >= 1.0)? as u64),
        // An unset socket buffer is the kernel's autotuning.
        (_, Value::Null) => "default".to_string(),
        (Fmt::Size, v) => format_size(v.as_f64().filter(|x| *x >= 0.0)?.round() as u64),
        (Fmt::Int, v) => format!("{}", v.as_f64()?),
        (Fmt::Secs, v) => format!("{}s", v.as_f64()?),
        (Fmt::OnOff, Value::Bool(b)) => if *b { "on" } else { "off" }.to_string(),
        (_, Value::String(s)) => s.clone(),
        _ => return None,
    })
}

/// The parameters of a kind that `spec` states, each with its value shown.
/// Keys the spec lacks (an import that does not know them) are left out.
fn shown(kind: Kind, spec: &Value) -> impl Iterator<Item = (&'static Param, String)> + '_ {
    table(kind).filter_map(|p| Some((p, show(p.fmt, spec.get(p.key)?)?)))
}

/// The workload parameters present in `spec`, as (short name, value shown).
pub fn params(kind: Kind, spec: &Value) -> Vec<(&'static str, String)> {
    shown(kind, spec).map(|(p, s)| (p.label, s)).collect()
}

/// The test name a single run (or an import of the equivalent run) gets:
/// `disk/bs=4k,read=70,random=100,qd=28,workers=1`,
/// `stream/dir=tx,conns=4,msg=64k`, `rr/req=1,resp=1,conns=1,burst=1`.
pub fn test_name(kind: Kind, spec: &Value) -> String {
    let prefix = kind.test_prefix();
    let parts: Vec<String> = shown(kind, spec)
        .filter(|(p, _)| p.in_name)
        .map(|(p, s)| format!("{}={s}", p.label))
        .collect();
    if parts.is_empty() {
        prefix.to_string()
    } else {
        format!("{prefix}/{}", parts.join(","))
    }
}

/// How the workloads of the same test differ across configurations, one
/// entry per differing parameter, values in configuration order:
/// `"conns 4 vs 1"`, `"kind disk vs net-rr"`. A parameter only some specs
/// state is not a difference (an import may not know the socket buffer);
/// `None` entries (a configuration without the test) are skipped.
pub fn differences(tests: &[Option<(Kind, &Value)>]) -> Vec<String> {
    let present: Vec<(Kind, &Value)> = tests.iter().flatten().copied().collect();
    let Some((kind0, _)) = present.first() else {
        return Vec::new();
    };
    if present.iter().any(|(k, _)| k != kind0) {
        let kinds: Vec<&str> = present.iter().map(|(k, _)| k.as_str()).collect();
        return vec![format!("kind {}", kinds.join(" vs "))];
    }
    let shown: Vec<Vec<(&str, String)>> = present.iter().map(|(k, s)| params(*k, s)).collect();
    let mut out = Vec::new();
    for p in table(*kind0) {
        let vals: Vec<&String> = shown
            .iter()
            .filter_map(|v| v.iter().find(|(l, _)| *l == p.label).map(|(_, s)| s))
            .collect();
        if vals.len() == shown.len() && vals.iter().any(|v| *v != vals[0]) {
            let joined: Vec<&str> = vals.iter().map(|s| s.as_str()).collect();
            out.push(format!("{} {}", p.label, joined.join(" vs ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn single_run_names_follow_the_suite_scheme() {
        let stream = json!({"dir": "tx", "conns": 4, "msg": 65536, "sockbuf": null, "nodelay": false,
                            "time_s": 5.0, "ramp_s": 1.0, "peer": "h:1"});
        let d = json!({"bs": 8192, "read_pct": 70, "random_pct": 100, "qd": 28, "workers": 1,
                       "engine": "io_uring", "target": "/tmp/x"});
        let r = json!({"req": 1, "resp": 1400, "conns": 1, "burst": 1});
        // Floats from JSON written by another tool read the same.
        let f = json!({"dir": "tx", "conns": 4.0, "msg": 65536.0});
        for (kind, spec, want) in [
            (Kind::NetStream, stream, "stream/dir=tx,conns=4,msg=64k"),
            (
                Kind::Disk,
                d,
                "disk/bs=8k,read=70,random=100,qd=28,workers=1",
            ),
            (Kind::NetRr, r, "rr/req=1,resp=1400,conns=1,burst=1"),
            (Kind::NetStream, f, "stream/dir=tx,conns=4,msg=64k"),
        ] {
            assert_eq!(test_name(kind, &spec), want);
        }
    }

    /// The keys read here are fields of the spec type each kind writes.
    #[test]
    fn parameters_are_fields_of_the_spec_types() {
        use crate::spec::{DiskSpec, RrSpec, StreamSpec};
        for kind in Kind::ALL {
            let schema = match kind {
                Kind::Disk => schemars::schema_for!(DiskSpec),
                Kind::NetStream => schemars::schema_for!(StreamSpec),
                Kind::NetRr => schemars::schema_for!(RrSpec),
                Kind::NetUdp => schemars::schema_for!(crate::spec::UdpSpec),
                Kind::NetCrr | Kind::NetCc => schemars::schema_for!(crate::spec::CrrSpec),
            };
            for p in table(*kind) {
                assert!(
                    schema.as_value()["properties"].get(p.key).is_some(),
                    "{kind}: {}",
                    p.key
                );
            }
        }
    }

    #[test]
    fn differences_name_each_parameter() {
        let a = json!({"dir": "tx", "conns": 4, "msg": 65536, "time_s": 5.0});
        let b = json!({"dir": "rx", "conns": 1, "msg": 1024, "time_s": 5.0});
        assert_eq!(
            differences(&[Some((Kind::NetStream, &a)), Some((Kind::NetStream, &b))]),
            vec!["dir tx vs rx", "conns 4 vs 1", "msg 64k vs 1k"]
        );
        assert!(
            differences(&[Some((Kind::NetStream, &a)), Some((Kind::NetStream, &a))]).is_empty()
        );
        // Engine and target are the configuration, not the workload.
        let d1 = json!({"bs": 4096, "qd": 32, "engine": "io_uring", "target": "/a"});
        let d2 = json!({"bs": 4096, "qd": 32, "engine": "psync", "target": "/b"});
        assert!(differences(&[Some((Kind::Disk, &d1)), Some((Kind::Disk, &d2))]).is_empty());
        // A parameter one side does not state is not a difference.
        let imported = json!({"dir": "tx", "conns": 4, "msg": 65536});
        assert!(differences(&[
            Some((Kind::NetStream, &a)),
            Some((Kind::NetStream, &imported))
        ])
        .is_empty());
        // Three configurations, one missing the test.
        let c = json!({"dir": "tx", "conns": 8, "msg": 65536, "time_s": 60.0});
        assert_eq!(
            differences(&[
                Some((Kind::NetStream, &a)),
                None,
                Some((Kind::NetStream, &c))
            ]),
            vec!["conns 4 vs 8", "time 5s vs 60s"]
        );
        assert_eq!(
            differences(&[Some((Kind::Disk, &d1)), Some((Kind::NetRr, &a))]),
            vec!["kind disk vs net-rr"]
        );
    }
}
