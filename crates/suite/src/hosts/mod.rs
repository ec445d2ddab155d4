//! Hosts and placement (docs/suites.md, "Hosts and placement"): the
//! `[hosts]` table of a suite file or of a hosts file (`--hosts FILE`), the
//! placement keys of a `[[test]]` (`on`, `pairs`, `clients`, `server`,
//! `pairs_per_client`), and the hosts a suite's jobs name, resolved for the
//! console. Read through the suite file's machinery (`file::Ctx`): serde
//! structs that refuse unknown keys, errors with file, line and key.

use crate::file::{as_str, as_u32, read, Checked, Ctx, Known, Node, Raw, Span, Suite, SuiteError};
use iotoll_model::Kind;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use toml::de::DeValue;
use toml::Value;

/// Where a host is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum HostAt {
    /// `"ADDR[:PORT]"` as written (the port defaults to the agent's,
    /// [`iotoll_net::DEFAULT_PORT`]).
    Address(String),
    /// A host of the lab given with `--lab`, by its name in the lab.
    Lab(String),
}

/// One host of a `[hosts]` table (or a lab host a job names).
#[derive(Debug, Clone, PartialEq)]
pub struct HostEntry {
    pub name: String,
    pub at: HostAt,
    /// Destination for the `--ssh` launcher (`user@host`).
    pub ssh: Option<String>,
    /// The host's adapters data connections are spread over. Empty: the
    /// address's IP, which for a name (or a lab host) is only known when
    /// the run starts.
    pub data: Vec<IpAddr>,
    /// Where it was defined, for errors: `FILE:LINE`, or `--lab`.
    pub origin: String,
}

/// Where a job runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Placement {
    /// On this host, as a suite without hosts always has.
    #[default]
    Local,
    /// A disk test on each of these hosts at once, each on its own targets.
    Disk { on: Vec<String> },
    /// A network test over these (client host, server host) pairs at once;
    /// `conns` is per pair.
    Net { pairs: Vec<(String, String)> },
}

impl Placement {
    /// The hosts it names, each once, in first-use order (a pair's client
    /// before its server).
    pub fn hosts(&self) -> Vec<&str> {
        let all: Vec<&str> = match self {
            Placement::Local => Vec::new(),
            Placement::Disk { on } => on.iter().map(String::as_str).collect(),
            Placement::Net { pairs } => pairs
                .iter()
                .flat_map(|(c, s)| [c.as_str(), s.as_str()])
                .collect(),
        };
        let mut seen = HashSet::new();
        all.into_iter().filter(|h| seen.insert(*h)).collect()
    }

    pub fn is_local(&self) -> bool {
        *self == Placement::Local
    }

    /// The key and value a job's parameters record it under (so it is
    /// stored with the results): `on = [..]` or `pairs = [[c, s], ..]`,
    /// expanded; nothing for a local job.
    pub fn param(&self) -> Option<(&'static str, serde_json::Value)> {
        match self {
            Placement::Local => None,
            Placement::Disk { on } => Some(("on", on.clone().into())),
            Placement::Net { pairs } => {
                let p: Vec<serde_json::Value> = (pairs.iter())
                    .map(|(c, s)| serde_json::json!([c, s]))
                    .collect();
                Some(("pairs", p.into()))
            }
        }
    }

    /// One line for `suite show`: `on h1, h2` or `16 pairs: c1>server, ...`.
    pub fn label(&self) -> String {
        match self {
            Placement::Local => "local".into(),
            Placement::Disk { on } => format!("on {}", on.join(", ")),
            Placement::Net { pairs } => {
                let p: Vec<String> = pairs.iter().map(|(c, s)| format!("{c}>{s}")).collect();
                let n = iotoll_model::text::count(pairs.len(), "pair");
                format!("{n}: {}", p.join(", "))
            }
        }
    }
}

/// Longest host name: it is shown in tables and results.
pub const MAX_HOST_NAME: usize = 32;

/// Most (client, server) pairs one test may have: beyond it
/// `pairs_per_client` is surely a mistake, and expanding it would take
/// memory before anything runs (Chariot's largest tests had a few
/// thousand endpoint pairs).
pub const MAX_PAIRS: usize = 10_000;

/// A host name: 1-32 characters of `A-Z a-z 0-9 _ . -`.
pub fn check_host_name(name: &str) -> Result<(), String> {
    let ok = (1..=MAX_HOST_NAME).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    ok.then_some(()).ok_or_else(|| {
        format!("'{name}' is not a host name: 1-{MAX_HOST_NAME} characters of A-Z, a-z, 0-9, '_', '.', '-'")
    })
}

/// `"ADDR[:PORT]"` checked (not resolved: that is the console's, when the
/// run starts): the host in lower case with its port (the agent's by
/// default), to find two entries for one agent, and the IP if the address
/// is one.
fn check_address(s: &str) -> Result<((String, u16), Option<IpAddr>), String> {
    let bad = |why: &str| format!("'{s}' is not ADDR[:PORT] ({why})");
    let port = |p: &str| match p.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(bad("the port must be 1-65535")),
    };
    let (host, p) = if let Ok(ip) = s.parse::<IpAddr>() {
        // A bare IPv6 address has colons of its own, and no port.
        (ip.to_string(), None)
    } else if let Some(rest) = s.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or_else(|| bad("no ']' after an IPv6 address"))?;
        let ip: std::net::Ipv6Addr = inside.parse().map_err(|_| bad("not an IPv6 address"))?;
        let p = match after {
            "" => None,
            a => Some(port(
                a.strip_prefix(':')
                    .ok_or_else(|| bad("':PORT' after ']'"))?,
            )?),
        };
        (ip.to_string(), p)
    } else {
        let (h, p) = match s.split_once(':') {
            Some((h, p)) => (h, Some(port(p)?)),
            None => (s, None),
        };
        let name_ok = !h.is_empty()
            && !h.starts_with(['-', '.'])
            && h.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
        if !name_ok {
            return Err(bad("expected an IP address or a host name"));
        }
        (h.to_ascii_lowercase(), p)
    };
    let ip = host.parse().ok();
    Ok(((host, p.unwrap_or(iotoll_net::DEFAULT_PORT)), ip))
}

/// An `ssh` destination, `[user@]host`, passed to ssh as one argument: a
/// leading '-' would be read as an option (`-oProxyCommand=...`).
fn check_ssh(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && !s.starts_with('-')
        && !s.contains(|c: char| c.is_whitespace() || c.is_control())
        && s.matches('@').count() <= 1
        && !s.ends_with('@');
    ok.then(|| s.to_string()).ok_or_else(|| {
        format!("'{s}' is not an ssh destination (user@host, no spaces, not starting with '-')")
    })
}

fn check_data(v: &Value) -> Result<Vec<IpAddr>, String> {
    let ip = |i: &Value| {
        let s = as_str(i)?;
        s.parse().map_err(|_| format!("'{s}' is not an IP address"))
    };
    let shape = "expected a list of IP addresses: data = [\"10.0.1.5\", ...]";
    unique_list(v, shape, ip, |ip| format!("{ip} is listed twice"))
}

/// A list of at least one item (else `shape`), each read by `one`, none
/// given twice (`twice` says which).
fn unique_list<T: PartialEq>(
    v: &Value,
    shape: &str,
    one: impl Fn(&Value) -> Result<T, String>,
    twice: impl Fn(&T) -> String,
) -> Result<Vec<T>, String> {
    let items = match v {
        Value::Array(a) if !a.is_empty() => a,
        _ => return Err(shape.into()),
    };
    let mut out: Vec<T> = Vec::with_capacity(items.len());
    for i in items {
        let x = one(i)?;
        if out.contains(&x) {
            return Err(twice(&x));
        }
        out.push(x);
    }
    Ok(out)
}

/// A `[hosts]` entry given as a table.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryKeys {
    address: Option<Raw>,
    ssh: Option<Raw>,
    data: Option<Raw>,
    lab: Option<Raw>,
}

/// A hosts file: a `[hosts]` table and nothing else.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct HostsFileKeys {
    hosts: Known,
}

/// Parses a hosts file (`--hosts FILE`); `file` names it in errors.
pub fn parse_hosts_file(text: &str, file: &str) -> Result<Vec<HostEntry>, SuiteError> {
    let cx = Ctx::new(file, text);
    let root = cx.root()?;
    let _: HostsFileKeys = read(&root).map_err(|e| {
        cx.de_err(e, |_| {
            "a hosts file has only a [hosts] table (name = \"ADDR[:PORT]\" or { ... })".into()
        })
    })?;
    let hosts = hosts_table(&cx, &root)?;
    if hosts.is_empty() {
        return Err(cx.err(None, None, "the hosts file defines no host ([hosts] table)"));
    }
    Ok(hosts)
}

/// The file's `[hosts]` table, each entry checked, in the file's order.
pub(crate) fn hosts_table(cx: &Ctx, root: &Node) -> Checked<Vec<HostEntry>> {
    let Some(node) = root.get_ref().as_table().and_then(|t| t.get("hosts")) else {
        return Ok(Vec::new());
    };
    let DeValue::Table(table) = node.get_ref() else {
        let msg = "expected a [hosts] table: name = \"ADDR[:PORT]\" or { address = ..., ssh = ..., data = [...] } or { lab = \"HOST\" }";
        return Err(cx.err(Some(node.span()), Some("hosts"), msg));
    };
    let mut entries: Vec<(&toml::Spanned<std::borrow::Cow<str>>, &Node)> = table.iter().collect();
    // In the file's order, whatever order the map keeps.
    entries.sort_by_key(|(k, _)| k.span().start);
    let mut out: Vec<HostEntry> = Vec::with_capacity(entries.len());
    let mut spans: Vec<Span> = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let name = key.get_ref().to_string();
        check_host_name(&name).map_err(|m| cx.err(Some(key.span()), Some(&name), m))?;
        let origin = format!("{}:{}", cx.file, cx.line_of(key.span().start));
        out.push(HostEntry {
            origin,
            ..entry(cx, &name, value)?
        });
        spans.push(key.span());
    }
    if let Some((a, b)) = same_place(&out) {
        let msg = format!(
            "hosts '{}' and '{}' are the same agent ({})",
            out[a].name,
            out[b].name,
            place_label(&out[b].at)
        );
        return Err(cx.err(Some(spans[b].clone()), Some(&out[b].name), msg));
    }
    Ok(out)
}

/// One entry: `"ADDR[:PORT]"`, `{ address, ssh, data }` or `{ lab }`.
fn entry(cx: &Ctx, name: &str, value: &Node) -> Checked<HostEntry> {
    let new = |at, ssh, data| HostEntry {
        name: name.to_string(),
        at,
        ssh,
        data,
        origin: String::new(),
    };
    let expected = format!(
        "host '{name}': expected \"ADDR[:PORT]\", {{ address = \"ADDR[:PORT]\", ssh = \"user@host\", data = [\"IP\", ...] }} or {{ lab = \"HOST\" }}"
    );
    match value.get_ref() {
        DeValue::String(s) => {
            let (_, ip) =
                check_address(s).map_err(|m| cx.err(Some(value.span()), Some(name), m))?;
            Ok(new(
                HostAt::Address(s.to_string()),
                None,
                ip.into_iter().collect(),
            ))
        }
        DeValue::Table(_) => {
            let keys: EntryKeys = read(value).map_err(|e| {
                cx.de_err(e, |_| {
                    format!("unknown key for host '{name}'; known: address, ssh, data, or lab")
                })
            })?;
            let in_host = |k: &str| format!("{name}.{k}");
            let address = cx.check(keys.address.as_ref(), &in_host("address"), |v| {
                let s = as_str(v)?;
                Ok((s.to_string(), check_address(s)?.1))
            })?;
            let ssh = cx.check(keys.ssh.as_ref(), &in_host("ssh"), |v| {
                check_ssh(as_str(v)?)
            })?;
            let data = cx.check(keys.data.as_ref(), &in_host("data"), check_data)?;
            let lab = cx.check(keys.lab.as_ref(), &in_host("lab"), one_host)?;
            match (address, lab) {
                (Some((a, ip)), None) => {
                    let data = data.unwrap_or_else(|| ip.into_iter().collect());
                    Ok(new(HostAt::Address(a), ssh, data))
                }
                (None, Some(l)) => {
                    if let Some(v) = &keys.ssh {
                        let msg = format!(
                            "host '{name}' is a lab host, reached in its namespace: ssh does not apply"
                        );
                        return Err(cx.at(v, &in_host("ssh"), msg));
                    }
                    Ok(new(HostAt::Lab(l), None, data.unwrap_or_default()))
                }
                (Some(_), Some(_)) => {
                    let msg = format!("host '{name}' has both address and lab: give one");
                    let at = keys.lab.as_ref().map(Raw::span);
                    Err(cx.err(at, Some(&in_host("lab")), msg))
                }
                (None, None) => {
                    let msg = format!(
                        "host '{name}' has no address: give address = \"ADDR[:PORT]\" or lab = \"HOST\""
                    );
                    Err(cx.err(Some(value.span()), Some(name), msg))
                }
            }
        }
        _ => Err(cx.err(Some(value.span()), Some(name), expected)),
    }
}

/// Where a host is, as one agent: (host, port) of an address, or the lab
/// host's name.
fn place(at: &HostAt) -> (String, u16) {
    match at {
        // Checked when the entry was read; an unreadable one (never seen)
        // compares as written.
        HostAt::Address(a) => check_address(a).map_or_else(|_| (a.clone(), 0), |(p, _)| p),
        HostAt::Lab(l) => (format!("lab host {l}"), 0),
    }
}

fn place_label(at: &HostAt) -> String {
    match place(at) {
        (h, 0) => h,
        (h, p) if h.contains(':') => format!("[{h}]:{p}"),
        (h, p) => format!("{h}:{p}"),
    }
}

/// The first two entries (indices) that are one agent.
fn same_place(hosts: &[HostEntry]) -> Option<(usize, usize)> {
    let mut seen: HashMap<(String, u16), usize> = HashMap::new();
    for (i, h) in hosts.iter().enumerate() {
        if let Some(first) = seen.insert(place(&h.at), i) {
            return Some((first, i));
        }
    }
    None
}

/// A test's placement keys (refused on the wrong kind, never swept).
#[derive(serde::Deserialize)]
pub(crate) struct PlaceKeys {
    on: Option<Raw>,
    pairs: Option<Raw>,
    clients: Option<Raw>,
    server: Option<Raw>,
    pairs_per_client: Option<Raw>,
}

/// Placement keys a kind takes, for the "known" list of unknown-key errors.
pub(crate) fn placement_keys(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Disk => &["on"],
        Kind::NetStream | Kind::NetRr | Kind::NetUdp | Kind::NetCrr | Kind::NetCc => {
            &["pairs", "clients", "server", "pairs_per_client"]
        }
    }
}

fn host_list(v: &Value, what: &str) -> Result<Vec<String>, String> {
    let shape = format!("expected a list of host names: {what} = [\"h1\", ...]");
    unique_list(v, &shape, one_host, |h| {
        format!("host '{h}' is named twice")
    })
}

fn one_host(v: &Value) -> Result<String, String> {
    let h = as_str(v)?;
    check_host_name(h)?;
    Ok(h.to_string())
}

/// A test's placement from its keys, checked for its kind.
pub(crate) fn placement(cx: &Ctx, kind: Kind, t: &Node, header: &Span) -> Checked<Placement> {
    let k: PlaceKeys = read(t).map_err(|e| cx.de_err(e, str::to_string))?;
    let net = [
        ("pairs", &k.pairs),
        ("clients", &k.clients),
        ("server", &k.server),
        ("pairs_per_client", &k.pairs_per_client),
    ];
    fn given<'k>(keys: &[(&'static str, &'k Option<Raw>)]) -> Option<(&'static str, &'k Raw)> {
        keys.iter().find_map(|(name, v)| Some((*name, v.as_ref()?)))
    }
    if kind == Kind::Disk {
        if let Some((key, v)) = given(&net) {
            let msg = format!(
                "{key} places a network test; a disk test runs on hosts with on = [\"h1\", ...]"
            );
            return Err(cx.at(v, key, msg));
        }
        let on = cx.check(k.on.as_ref(), "on", |v| host_list(v, "on"))?;
        return Ok(on.map_or(Placement::Local, |on| Placement::Disk { on }));
    }
    if let Some(v) = &k.on {
        let msg = format!("on places a disk test; a {kind} test is placed with pairs = [[\"client\", \"server\"], ...] or clients, server and pairs_per_client");
        return Err(cx.at(v, "on", msg));
    }
    let both_ways = given(&net[1..]).filter(|_| k.pairs.is_some());
    if let Some((key, v)) = both_ways {
        let msg = format!("pairs and {key} both give the test's pairs: use pairs = [[client, server], ...], or clients, server and pairs_per_client");
        return Err(cx.at(v, key, msg));
    }
    let pairs = match (&k.pairs, &k.clients, &k.server) {
        (Some(raw), ..) => cx.check(Some(raw), "pairs", pair_list)?,
        (None, Some(c), Some(s)) => {
            let clients = cx.check(Some(c), "clients", |v| host_list(v, "clients"))?;
            let server = cx.check(Some(s), "server", one_host)?;
            let n = cx.check(k.pairs_per_client.as_ref(), "pairs_per_client", |v| {
                Some(as_u32(v)?)
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| "expected a whole number of at least 1".into())
            })?;
            let (clients, server) = (clients.unwrap_or_default(), server.unwrap_or_default());
            if clients.contains(&server) {
                let msg = format!(
                    "host '{server}' is both a client and the server: a pair needs two hosts"
                );
                return Err(cx.at(c, "clients", msg));
            }
            let n = n.unwrap_or(1) as usize;
            if clients.len().saturating_mul(n) > MAX_PAIRS {
                let msg = format!(
                    "{} clients x {n} pairs each is more than {MAX_PAIRS} pairs",
                    clients.len()
                );
                let at = k.pairs_per_client.as_ref().unwrap_or(c);
                return Err(cx.at(at, "pairs_per_client", msg));
            }
            // Each client's pairs together: c1, c1, .., c2, ..
            let pairs = (clients.iter())
                .flat_map(|c| std::iter::repeat_n((c.clone(), server.clone()), n))
                .collect();
            Some(pairs)
        }
        (None, Some(_), None) => {
            let msg = "clients without server: give server = \"HOST\" too";
            return Err(cx.err(Some(header.clone()), Some("server"), msg));
        }
        (None, None, Some(_)) => {
            let msg = "server without clients: give clients = [\"HOST\", ...] too";
            return Err(cx.err(Some(header.clone()), Some("clients"), msg));
        }
        (None, None, None) => {
            if let Some(v) = &k.pairs_per_client {
                let msg = "pairs_per_client needs clients = [...] and server = \"HOST\"";
                return Err(cx.at(v, "pairs_per_client", msg));
            }
            None
        }
    };
    if kind == Kind::NetUdp && pairs.is_some() {
        udp_dir(cx, t)?;
    }
    Ok(pairs.map_or(Placement::Local, |pairs| Placement::Net { pairs }))
}

/// A UDP test on hosts sends from each pair's client to its server: its
/// `dir`, if given, is "tx" (the receiver counts the loss, on the server).
fn udp_dir(cx: &Ctx, t: &Node) -> Checked<()> {
    let Some(v) = t.get_ref().as_table().and_then(|t| t.get("dir")) else {
        return Ok(());
    };
    if matches!(v.get_ref(), DeValue::String(d) if d == "tx") {
        return Ok(());
    }
    let msg = "a net-udp test placed on hosts sends from each pair's client to its server (dir = \"tx\"): for the other way, swap the pair's hosts; for both ways, give a pair each way";
    Err(cx.err(Some(v.span()), Some("dir"), msg))
}

/// `pairs = [["c1", "srv"], ...]`: each a client host and a server host.
fn pair_list(v: &Value) -> Result<Vec<(String, String)>, String> {
    let shape = "expected a list of [client, server] pairs: pairs = [[\"c1\", \"srv\"], ...]";
    let items = match v {
        Value::Array(a) if !a.is_empty() => a,
        _ => return Err(shape.into()),
    };
    if items.len() > MAX_PAIRS {
        return Err(format!("{} pairs is more than {MAX_PAIRS}", items.len()));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, p) in items.iter().enumerate() {
        let n = i + 1;
        let [c, s] = p.as_array().map(Vec::as_slice).unwrap_or_default() else {
            return Err(format!("pair {n}: {shape}"));
        };
        let host = |v| one_host(v).map_err(|m| format!("pair {n}: {m}"));
        let (c, s) = (host(c)?, host(s)?);
        if c == s {
            return Err(format!(
                "pair {n} has '{c}' as both client and server: a pair needs two hosts"
            ));
        }
        out.push((c, s));
    }
    Ok(out)
}

/// Name lists in errors: `a, b, c`, or `(none)`.
fn names<'a>(it: impl IntoIterator<Item = &'a str>) -> String {
    let v: Vec<&str> = it.into_iter().collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Where in a test's placement a host is named: "on", "pair 3".
fn named_in(p: &Placement, host: &str) -> String {
    match p {
        Placement::Net { pairs } => {
            let i = pairs.iter().position(|(c, s)| c == host || s == host);
            format!("pair {}", i.map_or(0, |i| i + 1))
        }
        _ => "on".into(),
    }
}

/// The hosts the suite's jobs name, resolved: suite [hosts] overridden by
/// the hosts file; with `lab_hosts` (the lab's host names, from --lab) a
/// name not defined anywhere is that lab host (HostAt::Lab). Errors
/// (naming test and host): a job naming a host defined nowhere, a
/// `{lab=..}` host without --lab, a lab host the lab does not have, two
/// hosts that are one agent. Only the hosts some job uses are returned,
/// in first-use order.
pub fn resolve_hosts(
    suite: &Suite,
    file_hosts: &[HostEntry],
    lab_hosts: Option<&[String]>,
) -> Result<Vec<HostEntry>, String> {
    // The suite's, each replaced by the hosts file's of its name.
    let mut defined: Vec<&HostEntry> = suite.hosts.iter().collect();
    for f in file_hosts {
        match defined.iter_mut().find(|d| d.name == f.name) {
            Some(d) => *d = f,
            None => defined.push(f),
        }
    }
    let from = match (file_hosts.is_empty(), suite.hosts.is_empty()) {
        (false, false) => "the hosts file or the suite's [hosts]",
        (false, true) => "the hosts file",
        (true, false) => "the suite's [hosts]",
        (true, true) => "any [hosts] table",
    };
    let known = || names(defined.iter().map(|d| d.name.as_str()));
    let lab_list = |l: &[String]| names(l.iter().map(String::as_str));
    let mut out: Vec<HostEntry> = Vec::new();
    let mut done_tests = HashSet::new();
    for job in &suite.jobs {
        // Placement is per test, whatever it sweeps: each test once.
        let test = job.name.split('/').next().unwrap_or(&job.name);
        if !done_tests.insert(test) {
            continue;
        }
        for host in job.placement.hosts() {
            if out.iter().any(|h| h.name == host) {
                continue;
            }
            let whence = || {
                format!(
                    "test '{test}': {} names host '{host}'",
                    named_in(&job.placement, host)
                )
            };
            let entry = match (defined.iter().find(|d| d.name == host), lab_hosts) {
                (Some(d), lab) => {
                    if let HostAt::Lab(l) = &d.at {
                        match lab {
                            None => {
                                return Err(format!(
                                    "{}, which is {{ lab = \"{l}\" }} ({}): give --lab NAME",
                                    whence(),
                                    d.origin
                                ))
                            }
                            Some(lh) if !lh.contains(l) => {
                                return Err(format!(
                                    "{}, which is {{ lab = \"{l}\" }} ({}), but the lab has no host '{l}' (its hosts: {})",
                                    whence(),
                                    d.origin,
                                    lab_list(lh)
                                ))
                            }
                            Some(_) => {}
                        }
                    }
                    (*d).clone()
                }
                (None, Some(lh)) if lh.iter().any(|l| l == host) => HostEntry {
                    name: host.to_string(),
                    at: HostAt::Lab(host.to_string()),
                    ssh: None,
                    data: Vec::new(),
                    origin: "--lab".into(),
                },
                (None, Some(lh)) => {
                    return Err(format!(
                        "{}, which is neither in {from} (known: {}) nor a host of the lab (its hosts: {})",
                        whence(),
                        known(),
                        lab_list(lh)
                    ))
                }
                (None, None) => {
                    return Err(format!("{}, which is not in {from} (known: {})", whence(), known()))
                }
            };
            out.push(entry);
        }
    }
    if let Some((a, b)) = same_place(&out) {
        return Err(format!(
            "hosts '{}' ({}) and '{}' ({}) are the same agent ({})",
            out[a].name,
            out[a].origin,
            out[b].name,
            out[b].origin,
            place_label(&out[b].at)
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
