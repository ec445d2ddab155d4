//! What a report shows about a run besides the compared numbers: its suite,
//! start and status, whether its durations were overridden (a smoke run),
//! and per test the parameters actually used, the ramp, whether the peer
//! was this host and whether another process interfered.

use crate::compare::ConfigData;
use iotoll_model::spec::Spec;
use iotoll_store::RunDetail;
use serde_json::Value;

/// One test's facts from its kept repetition's result document.
#[derive(Debug, Clone, Default)]
pub struct TestInfo {
    pub name: String,
    /// Every parameter actually used (the result's `spec`).
    pub spec: Spec,
    /// Ramp-up, seconds (0 when none).
    pub ramp_s: f64,
    /// The network peer ran on this host and its CPU is this host's: the
    /// same kernel (`cpu.same_host`), not on lab CPUs of its own
    /// (`CpuSection::remote_separate`).
    pub same_host: Option<bool>,
    /// Whether any repetition was interfered (`cpu.local.interference`, or
    /// any host's), as the suite's results table marks it; None when no
    /// repetition measured interference.
    pub interfered: Option<bool>,
    pub reps: usize,
    /// The number of the repetition kept (whose notes these are).
    pub rep: Option<i64>,
    /// The figures are the mean of the repetitions (no one repetition is
    /// the headline).
    pub mean_of_reps: bool,
    pub spread_pct: Option<f64>,
    /// The 95 % CI of the selection metric over the repetitions (3 or more).
    pub ci95: Option<iotoll_model::Ci95>,
    /// The kept repetition's notes (engine fallback, peer on this host, ...).
    pub notes: Vec<String>,
}

/// The start of the run's warning about a process busy before the start
/// (`iotoll_probe::sysinfo::warnings`), one per process.
const BUSY_BEFORE: &str = "another process was already using ";

/// One line of a report's "Warnings and notes".
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    /// The test (and repetition, when it had several) the note is about;
    /// None for the run as a whole.
    pub test: Option<String>,
    pub text: String,
}

#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    pub suite: String,
    pub started_at: String,
    pub status: iotoll_model::RunStatus,
    /// The run's `durations overridden:` note, if any (smoke runs).
    pub overridden: Option<String>,
    /// The suite's `cpu_threshold_pct` (set by the caller, which can parse
    /// suite files).
    pub cpu_threshold_pct: Option<f64>,
    pub tests: Vec<TestInfo>,
}

impl RunInfo {
    pub fn test(&self, name: &str) -> Option<&TestInfo> {
        self.tests.iter().find(|t| t.name == name)
    }

    /// The run's notes and its tests', each once and readable at any
    /// size:
    /// - a test's note is under its test; one that several tests share
    ///   ("the endpoint is on this host", said by 27 tests) is one line
    ///   naming them (or "all N tests");
    /// - a suite's run names every repetition's interference as
    ///   `TEST repetition N: interference: ...`: the kept repetition's is
    ///   the test's own note, the others are folded into one line per test
    ///   saying which repetitions and how much;
    /// - any other run note is the run's, once; a single measurement's run
    ///   holds its result's notes again, and these are left out.
    pub fn notes(&self, run_notes: &[String]) -> Vec<Note> {
        // (text, the tests that said it, the first one's name), in
        // first-seen order.
        let mut said: Vec<(String, Vec<String>, &str)> = Vec::new();
        let mut copies: Vec<String> = Vec::new();
        for t in &self.tests {
            let test = match t.rep {
                Some(rep) if t.reps > 1 => format!("{} repetition {rep}", t.name),
                _ => t.name.clone(),
            };
            for n in &t.notes {
                match said.iter_mut().find(|(text, _, _)| text == n) {
                    Some((_, tests, _)) if tests.contains(&test) => continue,
                    Some((_, tests, _)) => tests.push(test.clone()),
                    None => said.push((n.clone(), vec![test.clone()], &t.name)),
                }
                copies.push(n.clone());
                if let Some(rep) = t.rep {
                    copies.push(format!("{} repetition {rep}: {n}", t.name));
                }
            }
        }
        let mut all: Vec<Note> = Vec::new();
        // Per test, its other repetitions' interference: (repetition, how much).
        let mut folded: Vec<(&str, Vec<String>)> = Vec::new();
        // The processes already busy before the start, one warning each.
        let mut busy: Vec<(usize, String)> = Vec::new();
        for n in run_notes {
            if copies.contains(n) || all.iter().any(|a| &a.text == n) {
                continue;
            }
            if let Some((pct, who)) = (n.strip_prefix(BUSY_BEFORE))
                .and_then(|r| r.split_once(" % of the CPUs before the start: "))
            {
                busy.push((all.len(), format!("{who} {pct} %")));
            }
            if let Some((test, rep, what)) = self.repetition_interference(n) {
                match folded.iter_mut().find(|(t, _)| *t == test) {
                    Some((_, reps)) => reps.push(format!("{rep} ({what})")),
                    None => folded.push((test, vec![format!("{rep} ({what})")])),
                }
                continue;
            }
            all.push(Note {
                test: None,
                text: n.clone(),
            });
        }
        if let [(at, _), _, ..] = busy.as_slice() {
            let at = *at;
            let names: Vec<String> = busy.into_iter().map(|(_, w)| w).collect();
            all.retain(|n| !n.text.starts_with(BUSY_BEFORE));
            all.insert(
                at.min(all.len()),
                Note {
                    test: None,
                    text: format!(
                        "other processes were already using the CPUs before the start: {}",
                        names.join(", ")
                    ),
                },
            );
        }
        let every = self.tests.len();
        let mut folded: Vec<(&str, Note)> = (folded.into_iter())
            .map(|(test, reps)| (test, self.other_repetitions(test, &reps)))
            .collect();
        // The test a note said by one test belongs to.
        let owners: Vec<Option<&str>> = (said.iter())
            .map(|(_, tests, first)| (tests.len() == 1).then_some(*first))
            .collect();
        for (i, (text, tests, _)) in said.into_iter().enumerate() {
            let test = match tests.len() {
                1 => tests.into_iter().next(),
                n if n == every => Some(format!("all {n} tests")),
                n => Some(format!("{n} tests ({})", tests.join(", "))),
            };
            all.push(Note { test, text });
            // A test's other repetitions right after its last own note.
            let Some(name) = owners[i] else { continue };
            if owners[i + 1..].contains(&Some(name)) {
                continue;
            }
            if let Some(at) = folded.iter().position(|(t, _)| *t == name) {
                all.push(folded.remove(at).1);
            }
        }
        all.extend(folded.into_iter().map(|(_, n)| n));
        all
    }

    /// The line for `test`'s other repetitions' interference, `reps` as
    /// `N (how much)`.
    fn other_repetitions(&self, test: &str, reps: &[String]) -> Note {
        let t = self.test(test);
        let kept = match t {
            Some(t) if t.mean_of_reps => Some(format!(
                "; the figures are the mean of all {} repetitions",
                t.reps
            )),
            _ => (t.and_then(|t| t.rep)).map(|k| format!("; the figures are repetition {k}'s")),
        };
        let which = if reps.len() == 1 {
            "repetition"
        } else {
            "repetitions"
        };
        Note {
            test: Some(test.to_string()),
            text: format!(
                "interference in {which} {}{}",
                reps.join(", "),
                kept.unwrap_or_default()
            ),
        }
    }

    /// `TEST repetition N: interference: WHAT in the window ...` of one of
    /// the run's tests, as (test, N, WHAT).
    fn repetition_interference<'a>(&'a self, note: &'a str) -> Option<(&'a str, &'a str, &'a str)> {
        let (head, rest) = note.split_once(": ")?;
        let what = rest
            .strip_prefix(iotoll_model::result::INTERFERENCE_NOTE)?
            .trim();
        let (test, rep) = head.rsplit_once(" repetition ")?;
        rep.parse::<u32>().ok()?;
        let t = self.test(test)?;
        let what = what.split(" in the window").next().unwrap_or(what);
        Some((t.name.as_str(), rep, what))
    }

    /// The finding that tests failed outright (none of their repetitions
    /// completed, so they have no figures): every one, or which.
    pub fn failures_finding(&self) -> Option<String> {
        let failed: Vec<&str> = (self.tests.iter())
            .filter(|t| t.reps == 0)
            .map(|t| t.name.as_str())
            .collect();
        match failed.len() {
            0 => None,
            n if n == self.tests.len() => Some(format!(
                "Every test failed ({}): no repetition completed, so this run has no figures; the notes say why.",
                iotoll_model::text::count(n, "test")
            )),
            n => Some(format!(
                "{n} of {} tests failed (no repetition completed, no figures): {}; the notes say why.",
                self.tests.len(),
                failed.join(", ")
            )),
        }
    }

    /// Some network test's peer was this host.
    pub fn same_host(&self) -> bool {
        self.tests.iter().any(|t| t.same_host == Some(true))
    }
}

/// Each configuration's "Warnings and notes" ([`RunInfo::notes`]), in the
/// order of `configs`; the one place both renderers take them from.
pub fn notes(configs: &[ConfigData], infos: &[RunInfo]) -> Vec<Vec<Note>> {
    let none = RunInfo::default();
    (configs.iter().enumerate())
        .map(|(i, c)| infos.get(i).unwrap_or(&none).notes(&c.notes))
        .collect()
}

/// The metrics a comparison could use instead of `metric`: those that
/// some test found in every configuration has in all of them, in the
/// registry's order (`metrics.md`), `metric` left out. For "nothing to
/// compare" when the runs lack the default metric.
pub fn comparable_metrics(configs: &[ConfigData], metric: Option<&str>) -> Vec<&'static str> {
    let Some((first, rest)) = configs.split_first() else {
        return Vec::new();
    };
    let everywhere = |name: &str, m: &str| {
        rest.iter().all(|c| {
            c.tests
                .iter()
                .any(|t| t.name == name && t.metrics.contains_key(m))
        })
    };
    iotoll_model::metrics::METRICS
        .iter()
        .map(|d| d.name)
        .filter(|m| Some(*m) != metric)
        .filter(|m| {
            first
                .tests
                .iter()
                .any(|t| t.metrics.contains_key(*m) && everywhere(&t.name, m))
        })
        .collect()
}

/// A peer on a loopback address is this host, whatever the result says
/// (results stored before `cpu.same_host` existed say nothing).
fn loopback_peer(spec: &Spec) -> Option<bool> {
    let peer = spec.stated().peer?;
    let host = peer
        .rsplit_once(':')
        .map_or(peer.as_str(), |x| x.0)
        .trim_matches(|c| c == '[' || c == ']');
    let ip: std::net::IpAddr = host.parse().ok()?;
    ip.is_loopback().then_some(true)
}

fn from_run(run: &RunDetail) -> RunInfo {
    let tests = run
        .tests
        .iter()
        .map(|t| {
            let rep = t
                .reps
                .iter()
                .find(|r| Some(r.rep) == t.selected_rep)
                .or(t.reps.first());
            let cpu = rep.map(|r| &r.doc.cpu);
            let spec = rep.map(|r| r.doc.spec.clone()).unwrap_or_default();
            TestInfo {
                name: t.name.clone(),
                // Whether the peer's CPU is this host's, as a single run
                // decides (`CpuSection::remote_separate`): a lab host on
                // CPUs of its own is a peer of its own.
                same_host: cpu
                    .and_then(|c| c.same_host.map(|_| !c.remote_separate()))
                    .or_else(|| loopback_peer(&spec)),
                // An import's spec may not say.
                ramp_s: spec.stated().ramp_s.unwrap_or(0.0),
                spec,
                // Any repetition counts, as in the suite's results table,
                // and any host of a multi-host test, as this host does.
                interfered: (t.reps.iter())
                    .filter(|r| {
                        let hosts = r.doc.hosts.iter().map(|h| h.cpu.as_ref());
                        let mut cpus = hosts.chain([r.doc.cpu.local.as_ref()]);
                        cpus.any(|c| c.is_some_and(|c| c.interference.is_some()))
                    })
                    .map(|r| r.doc.interfered())
                    .reduce(|a, b| a || b),
                reps: t.reps.len(),
                rep: rep.map(|r| r.rep),
                mean_of_reps: t.selected_rep.is_none() && t.reps.len() > 1,
                spread_pct: t.spread_pct,
                ci95: t.ci95.clone(),
                notes: rep.map(|r| r.doc.notes.clone()).unwrap_or_default(),
            }
        })
        .collect();
    RunInfo {
        suite: run.run.suite.clone(),
        started_at: run.run.started_at.clone(),
        status: run.run.status,
        overridden: run
            .run
            .notes
            .iter()
            .find(|n| n.starts_with("durations overridden:"))
            .cloned(),
        cpu_threshold_pct: None,
        tests,
    }
}

/// Adds to `cfg`'s disclosure the peer's side of the network tests'
/// (interface, MTU, offloads, TCP settings), from the endpoints' sides of
/// the disclosures, as a `peer` object with its interfaces keyed by name,
/// so a changed peer MTU shows among the system differences.
fn add_peer<'a>(cfg: &mut ConfigData, remotes: impl Iterator<Item = &'a Value>) {
    let mut interfaces: Vec<Value> = Vec::new();
    let mut tcp: Option<Value> = None;
    for remote in remotes {
        if let Some(i) = remote.get("interface").filter(|i| i.is_object()) {
            let name = i["name"].as_str().unwrap_or("?");
            if !interfaces.iter().any(|x| x["name"].as_str() == Some(name)) {
                let mut i = i.clone();
                i["name"] = Value::String(name.to_string());
                interfaces.push(i);
            }
        }
        if tcp.is_none() {
            tcp = remote.get("tcp").filter(|t| t.is_object()).cloned();
        }
    }
    let mut peer = serde_json::Map::new();
    if !interfaces.is_empty() {
        peer.insert("interfaces".into(), Value::Array(interfaces));
    }
    peer.extend(tcp.map(|t| ("tcp".to_string(), t)));
    if peer.is_empty() {
        return;
    }
    match cfg.disclosure.as_mut() {
        Some(Value::Object(m)) => {
            m.insert("peer".into(), Value::Object(peer));
        }
        _ => cfg.disclosure = Some(serde_json::json!({ "peer": peer })),
    }
}

/// A stored run as a report configuration and its facts. The disclosure
/// gains the peer's side (`peer.…`) from the network tests.
pub fn load(run: &RunDetail) -> (ConfigData, RunInfo) {
    let mut cfg = ConfigData::from_run(run);
    let reps = run.tests.iter().flat_map(|t| &t.reps);
    add_peer(
        &mut cfg,
        reps.filter_map(|r| r.doc.disclosure.as_ref()?.remote()),
    );
    let mut info = from_run(run);
    // One answer for "same host" and "interfered" whoever looked.
    for t in &mut info.tests {
        if let Some(d) = cfg.test(&t.name) {
            if d.same_host_peer {
                t.same_host = Some(true);
            }
            if !d.interference.is_empty() {
                t.interfered = Some(true);
            }
        }
    }
    for d in &mut cfg.tests {
        d.same_host_peer |= info
            .test(&d.name)
            .is_some_and(|t| t.same_host == Some(true));
    }
    cfg.same_host_peer |= info.same_host();
    (cfg, info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{doc, run};
    use serde_json::json;

    fn net_doc(name: &str, mtu: u32) -> Value {
        serde_json::json!({
            "local": {"interface": {"name": "eth0", "mtu": 1500}},
            "remote": {"interface": {"name": name, "mtu": mtu, "address": "192.0.2.9"},
                       "tcp": {"tcp_congestion_control": "cubic"}}
        })
    }

    fn cfg(peer_mtu: u32) -> ConfigData {
        let mut c = ConfigData {
            disclosure: Some(serde_json::json!({"host": "a"})),
            ..crate::compare::test_data::cfg(&format!("mtu{peer_mtu}"), Vec::new())
        };
        let docs = [net_doc("eth1", peer_mtu), net_doc("eth1", peer_mtu)];
        add_peer(&mut c, docs.iter().map(|d| &d["remote"]));
        c
    }

    #[test]
    fn a_changed_peer_mtu_shows_among_the_differences() {
        let t = crate::disclosure::table(&[cfg(1500), cfg(9000)]);
        let row = t
            .iter()
            .find(|r| r.key == "peer.interfaces[eth1].mtu")
            .expect("the peer's MTU is disclosed");
        assert!(row.differs);
        assert_eq!(row.values, vec!["1500", "9000"]);
        let tcp = t
            .iter()
            .find(|r| r.key == "peer.tcp.tcp_congestion_control")
            .unwrap();
        assert!(!tcp.differs);
        assert!(!t.iter().find(|r| r.key == "host").unwrap().differs);
    }

    #[test]
    fn loopback_peers_are_this_host() {
        for (peer, want) in [
            ("127.0.0.1:7575", Some(true)),
            ("[::1]:7575", Some(true)),
            ("192.0.2.9:7575", None),
        ] {
            assert_eq!(
                loopback_peer(&serde_json::json!({ "peer": peer }).into()),
                want,
                "{peer}"
            );
        }
        assert_eq!(loopback_peer(&serde_json::json!({}).into()), None);
    }

    fn note(test: Option<&str>, text: &str) -> Note {
        Note {
            test: test.map(str::to_string),
            text: text.into(),
        }
    }

    /// The notes of the report of `r`, a run of one configuration.
    fn notes_of(r: &RunDetail) -> Vec<Note> {
        let (cfg, info) = load(r);
        let [n] = <[Vec<Note>; 1]>::try_from(notes(&[cfg], &[info])).unwrap();
        n
    }

    fn with_notes(notes: &[&str]) -> iotoll_model::ResultDoc {
        let mut d = doc("disk", json!({}), json!({"iops": 1.0}));
        d.notes = notes.iter().map(|n| n.to_string()).collect();
        d
    }

    /// A single measurement's run holds its result's notes: each is shown
    /// once, under the test; a run note no test said stays the run's.
    #[test]
    fn a_single_runs_notes_are_the_tests_once() {
        let same = "the endpoint is on this host (same kernel boot id 1)";
        let mut r = run(1, "lo", vec![("t", with_notes(&[same]))]);
        r.run.notes = vec![same.into(), "run only".into(), same.into()];
        assert_eq!(
            notes_of(&r),
            vec![note(None, "run only"), note(Some("t"), same)]
        );
    }

    /// A suite's run names every repetition's interference; the kept
    /// repetition's note is the test's, the others' are one line for the
    /// test, and a note that differs from the test's in any way is among
    /// them.
    #[test]
    fn a_suites_repetition_notes_are_kept_when_they_differ() {
        let (a, b) = ("interference: rustc 40 %", "interference: cc 30 %");
        let mut r = run(1, "nu", vec![("disk/spec=x", with_notes(&[a]))]);
        let mut rep2 = r.tests[0].reps[0].clone();
        rep2.rep = 2;
        rep2.doc.notes = vec![b.into()];
        r.tests[0].reps.push(rep2);
        r.run.notes = vec![
            "durations overridden: time 1s".into(),
            format!("disk/spec=x repetition 1: {a}"),
            format!("disk/spec=x repetition 2: {b}"),
            format!("disk/spec=x repetition 1: {a} (again)"),
        ];
        assert_eq!(
            notes_of(&r),
            vec![
                note(None, "durations overridden: time 1s"),
                note(Some("disk/spec=x repetition 1"), a),
                note(
                    Some("disk/spec=x"),
                    "interference in repetitions 2 (cc 30 %), 1 (rustc 40 % (again)); the figures are repetition 1's"
                ),
            ]
        );
    }

    /// A note every test says is one line ("the endpoint is on this
    /// host" was printed 27 times), one several say names them; each
    /// repetition's interference of a 27-test, 3-repetition run is one
    /// line per test, not 81. (Seen: 200+ lines of notes.)
    #[test]
    fn notes_many_tests_share_are_said_once() {
        let same = "the endpoint is on this host (same kernel boot id 1)";
        let names: Vec<String> = (1..=27).map(|i| format!("rr/conns={i}")).collect();
        let tests: Vec<(&str, iotoll_model::ResultDoc)> = names
            .iter()
            .map(|n| (n.as_str(), with_notes(&[same, "engine: psync"])))
            .collect();
        let mut r = run(1, "lo", tests);
        r.tests[0].reps[0].doc.notes.push("only the first".into());
        r.tests[1].reps[0].doc.notes = vec!["fallback".into()];
        r.tests[2].reps[0].doc.notes = vec!["fallback".into()];
        for t in &names {
            for rep in 2..=3 {
                let pct = 40 + rep;
                r.run.notes.push(format!(
                    "{t} repetition {rep}: interference: other processes used {pct}.0 % of this host's CPU in the window (threshold 5 %), and whole-host CPU counts it: rustc (pid 9) {pct}.0 %"
                ));
            }
        }
        let n = &notes_of(&r);
        assert_eq!(n.len(), 2 + 1 + 1 + 27, "{n:#?}");
        let of = |text: &str| n.iter().filter(|x| x.text == text).collect::<Vec<_>>();
        assert_eq!(of(same).len(), 1);
        assert_eq!(of(same)[0].test.as_deref(), Some("25 tests (rr/conns=1, rr/conns=4, rr/conns=5, rr/conns=6, rr/conns=7, rr/conns=8, rr/conns=9, rr/conns=10, rr/conns=11, rr/conns=12, rr/conns=13, rr/conns=14, rr/conns=15, rr/conns=16, rr/conns=17, rr/conns=18, rr/conns=19, rr/conns=20, rr/conns=21, rr/conns=22, rr/conns=23, rr/conns=24, rr/conns=25, rr/conns=26, rr/conns=27)"));
        assert_eq!(
            of("fallback")[0].test.as_deref(),
            Some("2 tests (rr/conns=2, rr/conns=3)")
        );
        assert_eq!(of("only the first")[0].test.as_deref(), Some("rr/conns=1"));
        let folded = n
            .iter()
            .find(|x| x.test.as_deref() == Some("rr/conns=7"))
            .expect("the test's other repetitions");
        assert_eq!(
            folded.text,
            "interference in repetitions 2 (other processes used 42.0 % of this host's CPU), 3 (other processes used 43.0 % of this host's CPU); the figures are repetition 1's"
        );
        // Beside the test's own note when it has one.
        let first = n.iter().position(|x| x.text == "only the first").unwrap();
        assert_eq!(n[first + 1].test.as_deref(), Some("rr/conns=1"), "{n:#?}");
        assert!(n[first + 1]
            .text
            .starts_with("interference in repetitions 2"));
    }

    /// A test whose figures are the mean of its repetitions: the note on
    /// its other repetitions' interference says so (it said "the figures
    /// are repetition 1's" of a mean of 3), and the test is flagged when
    /// any repetition was interfered, as the suite's table flags it (the
    /// report flagged only repetition 1's).
    #[test]
    fn a_mean_of_repetitions_is_said_and_flagged_by_any_of_them() {
        let clean = |pct: f64| {
            let mut d = doc("net-stream", json!({}), json!({"mbit_s": 700.0}));
            d.cpu.local = Some(iotoll_model::fixtures::cpu_with_others(2, 50.0, pct));
            d
        };
        let mut r = run(1, "lo", vec![("bidir", clean(1.0))]);
        let t = &mut r.tests[0];
        t.select = "mean:mbit_s".into();
        t.selected_rep = None;
        for rep in 2..=3 {
            t.reps.push(iotoll_store::RepRow {
                rep,
                status: iotoll_model::ResultStatus::Complete,
                doc: clean(if rep == 2 { 40.0 } else { 1.0 }),
            });
        }
        r.run.notes.push("bidir repetition 2: interference: other processes used 40.0 % of this host's CPU in the window (threshold 5 %)".into());
        let (cfg, info) = load(&r);
        assert_eq!(info.tests[0].interfered, Some(true));
        let n = &notes(&[cfg], &[info])[0];
        let folded = n
            .iter()
            .find(|x| x.text.starts_with("interference in"))
            .expect("{n:#?}");
        assert!(
            folded
                .text
                .ends_with("the figures are the mean of all 3 repetitions"),
            "{}",
            folded.text
        );
    }

    /// The processes busy before the start (one warning each, 7 lines
    /// seen) are one line.
    #[test]
    fn processes_busy_before_the_start_are_one_line() {
        let mut r = run(1, "lo", vec![("a", with_notes(&[]))]);
        r.run.notes = vec![
            "durations overridden: time 1s".into(),
            "another process was already using 21.0 % of the CPUs before the start: rustc (pid 7)"
                .into(),
            "another process was already using 13.0 % of the CPUs before the start: cc (pid 8)"
                .into(),
            "swap in use".into(),
        ];
        assert_eq!(
            notes_of(&r),
            vec![
                note(None, "durations overridden: time 1s"),
                note(
                    None,
                    "other processes were already using the CPUs before the start: rustc (pid 7) 21.0 %, cc (pid 8) 13.0 %"
                ),
                note(None, "swap in use"),
            ]
        );
    }

    /// Every test saying the same note: "all N tests".
    #[test]
    fn a_note_of_every_test_says_all() {
        let same = "the endpoint is on this host (same kernel boot id 1)";
        let d = with_notes(&[same]);
        let r = run(1, "lo", vec![("a", d.clone()), ("b", d)]);
        assert_eq!(notes_of(&r), vec![note(Some("all 2 tests"), same)]);
    }

    /// Runs that lack the metric compared offer the ones they share:
    /// in every configuration, for a test of the same name.
    #[test]
    fn the_metrics_every_configuration_has_are_offered() {
        let disk = |metrics| doc("disk", json!({}), metrics);
        let t = disk(json!({"mb_s": 1.0, "cpu_pct": 2.0}));
        let u = disk(json!({"lat_avg_us": 3.0}));
        let a = run(1, "a", vec![("t", t), ("u", u)]);
        let t = disk(json!({"mb_s": 1.5, "lat_avg_us": 4.0}));
        let b = run(2, "b", vec![("t", t)]);
        let configs = [load(&a).0, load(&b).0];
        let offered = comparable_metrics(&configs, Some("iops"));
        assert!(offered.contains(&"mb_s"), "{offered:?}");
        // One configuration only, or another test: not comparable.
        assert!(!offered.contains(&"cpu_pct") && !offered.contains(&"lat_avg_us"));
        let but_mb_s = comparable_metrics(&configs, Some("mb_s"));
        assert!(!but_mb_s.contains(&"mb_s"), "{but_mb_s:?}");
        assert!(comparable_metrics(&[], None).is_empty());
    }

    /// A run of two tests of two repetitions that all failed: stored with
    /// no repetition.
    fn all_failed() -> RunDetail {
        let d = doc("disk", json!({}), json!({"iops": 1.0}));
        let mut r = run(1, "iscsi", vec![("seq", d.clone()), ("rnd", d)]);
        r.run.status = iotoll_model::RunStatus::Failed;
        for t in &mut r.tests {
            t.reps.clear();
            t.selected_rep = None;
            t.summary = None;
            t.spread_pct = None;
            t.repeatable = None;
            for rep in 1..=2 {
                r.run.notes.push(format!(
                    "{} repetition {rep} failed: target iscsi://192.0.2.1/iqn.x/0: login refused",
                    t.name
                ));
            }
        }
        r
    }

    /// The report of a run whose tests all failed says so, and not that
    /// each test ran once (it said "each test ran once: repeatability was
    /// not checked" of a 2-repetition suite whose repetitions all failed).
    #[test]
    fn a_report_of_a_run_whose_tests_all_failed_says_so() {
        let (cfg, info) = load(&all_failed());
        let (configs, infos) = ([cfg], [info]);
        let c = crate::compare(&configs, None, true, None);
        let md = crate::markdown::render(&c, &configs, &infos);
        assert!(md.contains("Every test failed (2 tests)"), "{md}");
        assert!(!md.contains("ran once"), "{md}");
        let html = crate::html::render(&c, &configs, &infos, "report");
        assert!(html.contains("Every test failed (2 tests)"));
    }

    #[test]
    fn a_report_names_the_tests_that_failed() {
        let mut r = all_failed();
        let d = doc("disk", json!({}), json!({"iops": 5.0}));
        let ok = run(1, "x", vec![("ok", d)]);
        r.tests.extend(ok.tests);
        let (_, info) = load(&r);
        assert_eq!(
            info.failures_finding().as_deref(),
            Some("2 of 3 tests failed (no repetition completed, no figures): seq, rnd; the notes say why.")
        );
    }
}
