//! The kinds of result and the statuses of results and runs: the words
//! every crate, the database and the JSON documents share. Each is an enum
//! so that a new kind is taught once here and the compiler finds every
//! place that must say something about it.

use crate::metrics::{MetricDef, METRICS};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// An enum of words: serialized, stored and printed as the given names.
macro_rules! words {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
        pub enum $name { $($(#[$vm])* #[serde(rename = $s)] $v,)* }
        impl $name {
            pub const ALL: &[$name] = &[$($name::$v,)*];
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$v => $s,)* }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // pad, not write_str: `{:<10}` columns line up.
                f.pad(self.as_str())
            }
        }
    };
}

words! {
    /// What a result measured.
    Kind { Disk = "disk", NetStream = "net-stream", NetRr = "net-rr", NetUdp = "net-udp", NetCrr = "net-crr", NetCc = "net-cc", }
}

words! {
    /// How a single measurement ended (`ResultDoc::status`).
    ResultStatus {
        Complete = "complete",
        /// The window was cut short (Ctrl-C): the figures cover what ran.
        Interrupted = "interrupted",
        /// The workload failed: never a result, the figures are partial.
        Failed = "failed",
    }
}

words! {
    /// How a run (a suite, or a single measurement's run) ended, as stored.
    #[derive(Default)]
    RunStatus {
        Running = "running",
        #[default]
        Complete = "complete",
        /// Ctrl-C or SIGTERM: every finished repetition is kept.
        Aborted = "aborted",
        /// Some repetitions failed; the others are kept.
        Failed = "failed",
        /// The process that ran it died (its PID is gone) while `running`.
        Incomplete = "incomplete",
    }
}

impl RunStatus {
    /// The word people read: a run cut short by Ctrl-C is "interrupted",
    /// as its results are, though it is stored (and in JSON) as `aborted`.
    pub const fn label(self) -> &'static str {
        match self {
            RunStatus::Aborted => "interrupted",
            s => s.as_str(),
        }
    }
}

impl Kind {
    /// "disk, net-stream, net-rr, ... or net-cc", for errors.
    pub fn names() -> String {
        let v: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        match v.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => v.join(""),
        }
    }

    /// What a reader calls a test of this kind ("request/response").
    pub const fn noun(self) -> &'static str {
        match self {
            Kind::Disk => "disk",
            Kind::NetStream => "stream",
            Kind::NetRr => "request/response",
            Kind::NetUdp => "UDP",
            Kind::NetCrr => "connect/request/response",
            Kind::NetCc => "connect/close",
        }
    }

    /// The prefix of a single run's test name (`stream/dir=tx,...`).
    pub const fn test_prefix(self) -> &'static str {
        match self {
            Kind::Disk => "disk",
            Kind::NetStream => "stream",
            Kind::NetRr => "rr",
            Kind::NetUdp => "udp",
            Kind::NetCrr => "crr",
            Kind::NetCc => "cc",
        }
    }

    /// Its bit in a set of kinds: one per kind, in declaration order.
    pub(crate) const fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The metric that judges a test of this kind unless told otherwise:
    /// what repetitions are selected by, what tables and charts lead with.
    pub fn headline(self) -> &'static str {
        self.headline_def(false)
    }

    /// The efficiency index a report leads with for this kind.
    pub fn headline_efficiency(self) -> &'static str {
        self.headline_def(true)
    }

    /// The efficiency index of `metric` (a test selected by `mb_s` is
    /// judged per % CPU in MB/s, not in IOPS); the kind's headline index
    /// for a metric without one (latency).
    pub fn efficiency_of(self, metric: &str) -> &'static str {
        METRICS
            .iter()
            .find(|d| d.efficiency_of == Some(metric) && d.produced_by(self))
            .map_or(self.headline_efficiency(), |d| d.name)
    }

    fn headline_def(self, efficiency: bool) -> &'static str {
        METRICS
            .iter()
            .find(|d| d.headline.has(self) && d.efficiency_of.is_some() == efficiency)
            .map_or("", |d| d.name)
    }

    /// The efficiency metrics of this kind, its headline index first.
    pub fn efficiency(self) -> impl Iterator<Item = &'static str> {
        METRICS
            .iter()
            .filter(move |d| d.efficiency_of.is_some() && d.produced_by(self))
            .map(|d| d.name)
    }

    /// Every metric a result of this kind may carry.
    pub fn metrics(self) -> impl Iterator<Item = &'static MetricDef> {
        METRICS.iter().filter(move |d| d.produced_by(self))
    }
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        Kind::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown kind '{s}': use {}", Kind::names()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialized_as_before() {
        for &k in Kind::ALL {
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::json!(k.as_str())
            );
            assert_eq!(k.as_str().parse::<Kind>(), Ok(k));
        }
        assert_eq!(
            serde_json::to_value(ResultStatus::Interrupted).unwrap(),
            "interrupted"
        );
        assert_eq!(
            serde_json::to_value(RunStatus::Incomplete).unwrap(),
            "incomplete"
        );
        assert_eq!(
            "tape".parse::<Kind>().unwrap_err(),
            "unknown kind 'tape': use disk, net-stream, net-rr, net-udp, net-crr or net-cc"
        );
    }

    #[test]
    fn every_kind_has_a_headline_and_an_efficiency_index() {
        let want = [
            (Kind::Disk, "iops", "iops_per_cpu_pct"),
            (Kind::NetStream, "mbit_s", "mbit_s_per_cpu_pct"),
            (Kind::NetRr, "trans_s", "cpu_us_per_trans"),
            (Kind::NetUdp, "mbit_s", "mbit_s_per_cpu_pct"),
            (Kind::NetCrr, "conn_s", "cpu_us_per_conn"),
            (Kind::NetCc, "conn_s", "cpu_us_per_conn"),
        ];
        for (k, head, eff) in want {
            assert_eq!(k.headline(), head);
            assert_eq!(k.headline_efficiency(), eff);
            assert_eq!(
                k.efficiency().next(),
                Some(eff),
                "{k}: headline index first"
            );
        }
        assert_eq!(
            Kind::NetStream.efficiency().collect::<Vec<_>>(),
            [
                "mbit_s_per_cpu_pct",
                "remote_mbit_s_per_cpu_pct",
                "cpu_us_per_kb"
            ]
        );
    }
}
