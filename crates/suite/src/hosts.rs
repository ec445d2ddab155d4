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
                let n = pairs.len();
                format!(
                    "{n} pair{}: {}",
                    if n == 1 { "" } else { "s" },
                    p.join(", ")
                )
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
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{name}' is not a host name: 1-{MAX_HOST_NAME} characters of A-Z, a-z, 0-9, '_', '.', '-'"
        ))
    }
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
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "'{s}' is not an ssh destination (user@host, no spaces, not starting with '-')"
        ))
    }
}

fn check_data(v: &Value) -> Result<Vec<IpAddr>, String> {
    let items = match v {
        Value::Array(a) if !a.is_empty() => a,
        _ => return Err("expected a list of IP addresses: data = [\"10.0.1.5\", ...]".into()),
    };
    let mut out: Vec<IpAddr> = Vec::with_capacity(items.len());
    for i in items {
        let s = as_str(i)?;
        let ip: IpAddr = (s.parse()).map_err(|_| format!("'{s}' is not an IP address"))?;
        if out.contains(&ip) {
            return Err(format!("{ip} is listed twice"));
        }
        out.push(ip);
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
        let at_key = Some(key.span());
        check_host_name(&name).map_err(|m| cx.err(at_key.clone(), Some(&name), m))?;
        let e = entry(cx, &name, value)?;
        let line = cx.line_of(key.span().start);
        out.push(HostEntry {
            origin: format!("{}:{line}", cx.file),
            ..e
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
            let lab = cx.check(keys.lab.as_ref(), &in_host("lab"), |v| {
                let s = as_str(v)?;
                check_host_name(s)?;
                Ok(s.to_string())
            })?;
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
        Kind::NetStream | Kind::NetRr => &["pairs", "clients", "server", "pairs_per_client"],
    }
}

fn host_list(v: &Value, what: &str) -> Result<Vec<String>, String> {
    let items = match v {
        Value::Array(a) if !a.is_empty() => a,
        _ => {
            return Err(format!(
                "expected a list of host names: {what} = [\"h1\", ...]"
            ))
        }
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for i in items {
        let h = as_str(i)?;
        check_host_name(h)?;
        if out.iter().any(|o| o == h) {
            return Err(format!("host '{h}' is named twice"));
        }
        out.push(h.to_string());
    }
    Ok(out)
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
    Ok(pairs.map_or(Placement::Local, |pairs| Placement::Net { pairs }))
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
        let (c, s) = (one_host(c), one_host(s));
        let (c, s) = (
            c.map_err(|m| format!("pair {n}: {m}"))?,
            s.map_err(|m| format!("pair {n}: {m}"))?,
        );
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
mod tests {
    use super::*;
    use crate::parse;

    fn err(text: &str) -> SuiteError {
        parse(text, "s.toml").unwrap_err()
    }

    fn file_err(text: &str) -> SuiteError {
        parse_hosts_file(text, "h.toml").unwrap_err()
    }

    const NET: &str = "name='t'\n[[test]]\nname='bidir'\nkind='net-stream'\n";
    const DISK: &str = "name='t'\n[[test]]\nname='d'\nkind='disk'\n";

    #[test]
    fn host_tables_of_every_form() {
        let text = r#"name = "t"
[hosts]
srv = "10.0.0.1"
c1 = "client1.lab:7600"
c2 = { address = "[fd00::2]:7700", ssh = "bench@c2", data = ["10.0.1.2", "10.0.2.2"] }
c3 = { lab = "c3" }
c4 = { address = "10.0.0.4" }
[hosts.c5]
address = "c5.lab"

[[test]]
name = "d"
kind = "disk"
"#;
        let s = parse(text, "s.toml").unwrap_or_else(|e| panic!("{e}"));
        let h = &s.hosts;
        let names: Vec<&str> = h.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["srv", "c1", "c2", "c3", "c4", "c5"]);
        assert_eq!(h[0].at, HostAt::Address("10.0.0.1".into()));
        assert_eq!(h[0].data, ["10.0.0.1".parse::<IpAddr>().unwrap()]);
        assert_eq!(h[0].origin, "s.toml:3");
        assert_eq!(h[1].at, HostAt::Address("client1.lab:7600".into()));
        assert!(
            h[1].data.is_empty(),
            "a name's IP is known only at run time"
        );
        assert_eq!(h[2].ssh.as_deref(), Some("bench@c2"));
        assert_eq!(h[2].data.len(), 2);
        assert_eq!(h[3].at, HostAt::Lab("c3".into()));
        assert_eq!(h[4].data, ["10.0.0.4".parse::<IpAddr>().unwrap()]);
        assert_eq!(
            (h[5].at.clone(), h[5].origin.as_str()),
            (HostAt::Address("c5.lab".into()), "s.toml:8")
        );
    }

    #[test]
    fn bad_host_entries_name_the_host_and_key() {
        let e = err("name='t'\n[hosts]\nc1 = { address = '10.0.0.1', colour = 'red' }\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(3), Some("colour")), "{e}");
        assert_eq!(
            e.msg,
            "unknown key for host 'c1'; known: address, ssh, data, or lab"
        );
        let e = err("name='t'\n[hosts]\n'bad name' = '10.0.0.1'\n");
        assert!(e.msg.contains("'bad name' is not a host name"), "{e}");
        let long = "h".repeat(33);
        let e = err(&format!("name='t'\n[hosts]\n{long} = '10.0.0.1'\n"));
        assert!(e.msg.contains("1-32 characters"), "{e}");
        let e = err("name='t'\n[hosts]\nc1 = '10.0.0.1:99999'\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(3), Some("c1")), "{e}");
        assert_eq!(
            e.msg,
            "'10.0.0.1:99999' is not ADDR[:PORT] (the port must be 1-65535)"
        );
        let e = err("name='t'\n[hosts]\nc1 = 'a b'\n");
        assert!(
            e.msg.contains("expected an IP address or a host name"),
            "{e}"
        );
        let e = err("name='t'\n[hosts]\nc1 = 7\n");
        assert!(
            e.msg.starts_with("host 'c1': expected \"ADDR[:PORT]\""),
            "{e}"
        );
        let e = err("name='t'\n[hosts]\nc1 = { ssh = 'u@c1' }\n");
        assert_eq!(
            e.msg,
            "host 'c1' has no address: give address = \"ADDR[:PORT]\" or lab = \"HOST\""
        );
        let e = err("name='t'\n[hosts]\nc1 = { address = 'x', lab = 'c1' }\n");
        assert_eq!(
            (e.key.as_deref(), e.msg.as_str()),
            (
                Some("c1.lab"),
                "host 'c1' has both address and lab: give one"
            )
        );
        let e = err("name='t'\n[hosts]\nc1 = { lab = 'c1', ssh = 'u@x' }\n");
        assert!(e.msg.contains("ssh does not apply"), "{e}");
        let e = err("name='t'\n[hosts]\nc1 = { address = 'x', ssh = '-oProxyCommand=sh' }\n");
        assert_eq!(e.key.as_deref(), Some("c1.ssh"), "{e}");
        assert!(e.msg.contains("not starting with '-'"), "{e}");
        let e = err("name='t'\n[hosts]\nc1 = { address = 'x', data = ['10.0.0.1', 'eth0'] }\n");
        assert_eq!(
            (e.key.as_deref(), e.msg.as_str()),
            (Some("c1.data"), "'eth0' is not an IP address")
        );
        let e = err("name='t'\n[hosts]\nc1 = { address = 'x', data = [] }\n");
        assert!(e.msg.starts_with("expected a list of IP addresses"), "{e}");
        let e = err("name='t'\nhosts = 3\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(2), Some("hosts")), "{e}");
    }

    #[test]
    fn a_host_listed_twice_names_the_host_and_its_line() {
        let e = err("name='t'\n[hosts]\nc1 = '10.0.0.1'\nc2 = '10.0.0.2'\nc1 = '10.0.0.3'\n");
        assert_eq!(
            (e.line, e.msg.as_str()),
            (Some(5), "host 'c1' is listed twice"),
            "{e}"
        );
        let e = file_err("[hosts]\nc1 = '10.0.0.1'\n\n[hosts.c1]\naddress = '10.0.0.3'\n");
        assert_eq!(
            (e.line, e.msg.as_str()),
            (Some(4), "host 'c1' is listed twice"),
            "{e}"
        );
        assert_eq!(e.to_string(), "h.toml:4: host 'c1' is listed twice");
        // Other duplicate keys say which key.
        let e = err("name='t'\nname='u'\n");
        assert_eq!(
            (e.line, e.msg.as_str()),
            (Some(2), "duplicate key 'name'"),
            "{e}"
        );
    }

    #[test]
    fn two_hosts_at_one_address_name_both() {
        let e = file_err("[hosts]\na = '10.0.0.1'\nb = { address = '10.0.0.1:7575' }\n");
        assert_eq!(e.line, Some(3), "{e}");
        assert_eq!(
            e.msg,
            "hosts 'a' and 'b' are the same agent (10.0.0.1:7575)"
        );
        let e = file_err("[hosts]\na = 'Srv.Lab'\nb = 'srv.lab:7575'\n");
        assert!(
            e.msg.starts_with("hosts 'a' and 'b' are the same agent"),
            "{e}"
        );
        let e = file_err("[hosts]\na = '::1'\nb = '[::1]'\n");
        assert_eq!(e.msg, "hosts 'a' and 'b' are the same agent ([::1]:7575)");
        // Another port is another agent.
        assert_eq!(
            parse_hosts_file("[hosts]\na = '10.0.0.1'\nb = '10.0.0.1:7576'\n", "h")
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn hosts_files_hold_hosts_only() {
        let e = file_err("name = 'x'\n[hosts]\na = '10.0.0.1'\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(1), Some("name")), "{e}");
        assert!(
            e.msg.starts_with("a hosts file has only a [hosts] table"),
            "{e}"
        );
        let e = file_err("# nothing\n");
        assert_eq!(e.msg, "the hosts file defines no host ([hosts] table)");
        let e = file_err("[hosts]\na = '10.0.0.1\n");
        assert_eq!((e.file.as_str(), e.line), ("h.toml", Some(2)), "{e}");
        let h = parse_hosts_file("[hosts]\nsrv = '10.0.0.1'\n", "h.toml").unwrap();
        assert_eq!(h[0].origin, "h.toml:2");
    }

    #[test]
    fn clients_and_server_expand_into_pairs_in_client_order() {
        let s = parse(
            &format!("{NET}clients = ['c1', 'c2']\nserver = 'srv'\npairs_per_client = 3\nconns = [1, 4]\n"),
            "s",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.jobs.len(), 2, "placement is not swept");
        let p = |c: &str| (c.to_string(), "srv".to_string());
        let want = vec![p("c1"), p("c1"), p("c1"), p("c2"), p("c2"), p("c2")];
        for j in &s.jobs {
            assert_eq!(
                j.placement,
                Placement::Net {
                    pairs: want.clone()
                }
            );
            assert_eq!(j.params["pairs"][3], serde_json::json!(["c2", "srv"]));
        }
        assert_eq!(s.jobs[1].name, "bidir/conns=4");
        assert_eq!(s.jobs[0].placement.hosts(), ["c1", "srv", "c2"]);
        // pairs_per_client defaults to 1.
        let s = parse(
            &format!("{NET}clients = ['c1', 'c2']\nserver = 'srv'\n"),
            "s",
        )
        .unwrap();
        assert_eq!(s.jobs[0].placement.label(), "2 pairs: c1>srv, c2>srv");
        let s = parse(
            &format!("{NET}pairs = [['c1', 's1'], ['c2', 's1'], ['c1', 's2']]\n"),
            "s",
        )
        .unwrap();
        assert_eq!(s.jobs[0].placement.hosts(), ["c1", "s1", "c2", "s2"]);
        let s = parse(&format!("{DISK}on = ['h1', 'h2']\n"), "s").unwrap();
        assert_eq!(
            s.jobs[0].placement,
            Placement::Disk {
                on: vec!["h1".into(), "h2".into()]
            }
        );
        assert_eq!(s.jobs[0].params["on"], serde_json::json!(["h1", "h2"]));
        assert_eq!(s.jobs[0].placement.label(), "on h1, h2");
        let s = parse(DISK, "s").unwrap();
        assert!(s.jobs[0].placement.is_local() && s.jobs[0].params.get("on").is_none());
    }

    #[test]
    fn bad_placements_name_the_key() {
        let e = err(&format!("{NET}on = ['h1']\n"));
        assert_eq!((e.line, e.key.as_deref()), (Some(5), Some("on")), "{e}");
        assert!(
            e.msg
                .starts_with("on places a disk test; a net-stream test is placed with pairs"),
            "{e}"
        );
        let e = err(&format!("{DISK}pairs = [['a', 'b']]\n"));
        assert_eq!((e.line, e.key.as_deref()), (Some(5), Some("pairs")), "{e}");
        assert_eq!(
            e.msg,
            "pairs places a network test; a disk test runs on hosts with on = [\"h1\", ...]"
        );
        let e = err(&format!("{DISK}server = 'b'\n"));
        assert_eq!(e.key.as_deref(), Some("server"), "{e}");
        let e = err(&format!(
            "{NET}pairs = [['a', 'b']]\nclients = ['c']\nserver = 's'\n"
        ));
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(6), Some("clients")),
            "{e}"
        );
        assert!(
            e.msg
                .starts_with("pairs and clients both give the test's pairs"),
            "{e}"
        );
        let e = err(&format!("{NET}pairs = [['a', 'b'], ['c', 'c']]\n"));
        assert_eq!(e.key.as_deref(), Some("pairs"), "{e}");
        assert_eq!(
            e.msg,
            "pair 2 has 'c' as both client and server: a pair needs two hosts"
        );
        let e = err(&format!("{NET}pairs = [['a', 'b', 'c']]\n"));
        assert!(
            e.msg
                .starts_with("pair 1: expected a list of [client, server] pairs"),
            "{e}"
        );
        let e = err(&format!("{NET}pairs = []\n"));
        assert!(
            e.msg
                .starts_with("expected a list of [client, server] pairs"),
            "{e}"
        );
        let e = err(&format!("{NET}clients = ['a', 's']\nserver = 's'\n"));
        assert_eq!(
            (e.key.as_deref(), e.msg.as_str()),
            (
                Some("clients"),
                "host 's' is both a client and the server: a pair needs two hosts"
            )
        );
        let e = err(&format!("{NET}clients = ['a']\n"));
        assert_eq!((e.line, e.key.as_deref()), (Some(2), Some("server")), "{e}");
        let e = err(&format!("{NET}server = 's'\n"));
        assert_eq!(e.key.as_deref(), Some("clients"), "{e}");
        let e = err(&format!("{NET}pairs_per_client = 2\n"));
        assert_eq!(e.key.as_deref(), Some("pairs_per_client"), "{e}");
        let e = err(&format!(
            "{NET}clients = ['a']\nserver = 's'\npairs_per_client = 0\n"
        ));
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(7), Some("pairs_per_client")),
            "{e}"
        );
        let e = err(&format!(
            "{NET}clients = ['a', 'b']\nserver = 's'\npairs_per_client = 4000000000\n"
        ));
        assert!(e.msg.contains("more than 10000 pairs"), "{e}");
        let e = err(&format!("{DISK}on = ['h1', 'h1']\n"));
        assert_eq!(
            (e.key.as_deref(), e.msg.as_str()),
            (Some("on"), "host 'h1' is named twice")
        );
        let e = err(&format!("{DISK}on = 'h1'\n"));
        assert!(
            e.msg.starts_with("expected a list of host names: on = "),
            "{e}"
        );
        let e = err(&format!("{DISK}on = ['no way']\n"));
        assert!(e.msg.contains("is not a host name"), "{e}");
        // The known keys of a kind include its placement keys.
        let e = err(&format!("{DISK}bogus = 1\n"));
        assert!(e.msg.ends_with("and to place it on hosts: on"), "{e}");
    }

    fn suite(text: &str) -> Suite {
        parse(text, "s.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    const PAIRS: &str = "name='t'\n[hosts]\nc1 = '10.0.0.1'\nsrv = { address = '10.0.0.9', ssh = 'me@srv' }\n[[test]]\nname='bidir'\nkind='net-stream'\npairs = [['c1', 'srv'], ['c2', 'srv'], ['c9', 'srv']]\n[[test]]\nname='d'\nkind='disk'\non = ['c2', 'c1']\n";

    #[test]
    fn hosts_files_override_the_suite_and_only_used_hosts_return() {
        let s = suite(PAIRS);
        let file = parse_hosts_file(
            "[hosts]\nsrv = '10.1.0.9'\nc2 = '10.1.0.2'\nc9 = '10.1.0.3'\nunused = '10.1.0.4'\n",
            "h.toml",
        )
        .unwrap();
        let r = resolve_hosts(&s, &file, None).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = r.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["c1", "srv", "c2", "c9"], "first-use order");
        assert_eq!(
            r[0].origin, "s.toml:3",
            "the suite's where the file has none"
        );
        assert_eq!(
            (r[1].at.clone(), r[1].ssh.clone(), r[1].origin.as_str()),
            (HostAt::Address("10.1.0.9".into()), None, "h.toml:2"),
            "the file's entry replaces the suite's whole"
        );
    }

    #[test]
    fn unknown_hosts_name_test_pair_and_host() {
        let s = suite(PAIRS);
        let file = parse_hosts_file("[hosts]\nc2 = '10.1.0.2'\n", "h.toml").unwrap();
        let e = resolve_hosts(&s, &file, None).unwrap_err();
        assert_eq!(
            e,
            "test 'bidir': pair 3 names host 'c9', which is not in the hosts file or the suite's [hosts] (known: c1, srv, c2)"
        );
        let e = resolve_hosts(
            &suite(
                "name='t'\n[[test]]\nname='bidir'\nkind='net-stream'\npairs = [['c1', 'srv']]\n",
            ),
            &[],
            None,
        )
        .unwrap_err();
        assert_eq!(
            e,
            "test 'bidir': pair 1 names host 'c1', which is not in any [hosts] table (known: none)"
        );
        let file =
            parse_hosts_file("[hosts]\nc1 = '10.1.0.2'\nsrv = '10.1.0.3'\n", "h.toml").unwrap();
        let e =
            resolve_hosts(&suite(&format!("{DISK}on = ['c1', 'c9']\n")), &file, None).unwrap_err();
        assert_eq!(
            e,
            "test 'd': on names host 'c9', which is not in the hosts file (known: c1, srv)"
        );
        // Two names for one agent, across the suite and the file.
        let file =
            parse_hosts_file("[hosts]\nc2 = '10.0.0.1'\nc9 = '10.0.0.3'\n", "h.toml").unwrap();
        let e = resolve_hosts(&s, &file, None).unwrap_err();
        assert_eq!(
            e,
            "hosts 'c1' (s.toml:3) and 'c2' (h.toml:2) are the same agent (10.0.0.1:7575)"
        );
    }

    #[test]
    fn lab_hosts_fill_in_undefined_names() {
        let lab: Vec<String> = ["server", "c1", "c2"].map(String::from).to_vec();
        let s = suite(&format!("{NET}clients = ['c1', 'c2']\nserver = 'server'\n"));
        let r = resolve_hosts(&s, &[], Some(&lab)).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(
            (r[0].at.clone(), r[0].origin.as_str()),
            (HostAt::Lab("c1".into()), "--lab")
        );
        // A defined name wins over the lab's.
        let file = parse_hosts_file("[hosts]\nc2 = '10.0.0.2'\n", "h.toml").unwrap();
        let r = resolve_hosts(&s, &file, Some(&lab)).unwrap();
        assert_eq!(r[2].at, HostAt::Address("10.0.0.2".into()));
        let s = suite(&format!("{NET}clients = ['c1', 'c7']\nserver = 'server'\n"));
        let e = resolve_hosts(&s, &[], Some(&lab)).unwrap_err();
        assert_eq!(e, "test 'bidir': pair 2 names host 'c7', which is neither in any [hosts] table (known: none) nor a host of the lab (its hosts: server, c1, c2)");
        // { lab = ... } needs --lab, and a host the lab has.
        let s = suite(&format!("name='t'\n[hosts]\nbig = {{ lab = 'server' }}\nsmall = {{ lab = 'c9' }}\n{}on = ['big', 'small']\n", &DISK[9..]));
        let e = resolve_hosts(&s, &[], None).unwrap_err();
        assert_eq!(e, "test 'd': on names host 'big', which is { lab = \"server\" } (s.toml:3): give --lab NAME");
        let e = resolve_hosts(&s, &[], Some(&lab)).unwrap_err();
        assert_eq!(e, "test 'd': on names host 'small', which is { lab = \"c9\" } (s.toml:4), but the lab has no host 'c9' (its hosts: server, c1, c2)");
        // One lab host under two names is one agent.
        let s = suite(&format!(
            "name='t'\n[hosts]\nbig = {{ lab = 'c1' }}\n{}on = ['big', 'c1']\n",
            &DISK[9..]
        ));
        let e = resolve_hosts(&s, &[], Some(&lab)).unwrap_err();
        assert!(
            e.starts_with("hosts 'big' (s.toml:3) and 'c1' (--lab) are the same agent"),
            "{e}"
        );
    }

    #[test]
    fn the_bidirectional_study_runs_in_quad_100m() {
        let s = parse(
            crate::builtin::find("bidirectional-transfer-study").unwrap(),
            "b",
        )
        .unwrap();
        let j = &s.jobs[0];
        let Placement::Net { pairs } = &j.placement else {
            panic!("{:?}", j.placement)
        };
        assert_eq!(pairs.len(), 16);
        assert_eq!(pairs[15], ("c16".to_string(), "server".to_string()));
        let crate::JobSpec::Net(c) = &j.spec else {
            panic!()
        };
        assert_eq!(
            (c.conns, c.dir, c.time),
            (
                1,
                iotoll_net::Dir::Bidir,
                std::time::Duration::from_secs(120)
            )
        );
        assert_eq!((j.reps, j.rule.label()), (3, "mean".to_string()));
        let lab = iotoll_lab::load("quad-100m", &[]).unwrap();
        let names: Vec<String> = lab.hosts.iter().map(|h| h.name.clone()).collect();
        let r = resolve_hosts(&s, &[], Some(&names)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.len(), 17);
        assert!(r.iter().all(|h| matches!(h.at, HostAt::Lab(_))));
    }

    /// An .icf written here holds this host's workers: a placed test is
    /// refused, not exported without its hosts.
    #[test]
    fn export_icf_refuses_placed_tests() {
        let s = suite(&format!("{DISK}on = ['h1', 'h2']\n"));
        let o = crate::icf::ExportOptions {
            test: None,
            targets: Vec::new(),
            manager: "HOST".into(),
            cpus: 2,
        };
        let e = crate::icf::export(&s, &o).unwrap_err();
        assert_eq!(e, "test 'd' runs on hosts (h1, h2): an .icf written by iotoll holds this host's workers only; export a test without `on`");
    }

    #[test]
    fn addresses() {
        for (a, host, port) in [
            ("10.0.0.1", "10.0.0.1", 7575),
            ("10.0.0.1:9", "10.0.0.1", 9),
            ("::1", "::1", 7575),
            ("[::1]:80", "::1", 80),
            ("Host.Lab", "host.lab", 7575),
            ("host:1", "host", 1),
        ] {
            assert_eq!(check_address(a).unwrap().0, (host.to_string(), port), "{a}");
        }
        for a in [
            "", ":80", "h:0", "h:x", "[::1", "[nope]:1", "[::1]80", "-h", "a b", "h:1:2",
        ] {
            assert!(check_address(a).is_err(), "{a}");
        }
    }
}
