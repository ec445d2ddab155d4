//! Lab files: the TOML format, the built-ins, `--set KEY=VALUE` overrides
//! and validation (everything that can be checked without the kernel).

use crate::cpus::{format_list, CpuReq};
use crate::LabError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// The built-in labs: name and TOML text (embedded, documented examples).
pub(crate) const BUILTINS: &[(&str, &str)] = &[
    ("pair", include_str!("builtins/pair.toml")),
    ("pair-1g", include_str!("builtins/pair-1g.toml")),
    ("pair-10g", include_str!("builtins/pair-10g.toml")),
    (
        "pair-10g-tuned",
        include_str!("builtins/pair-10g-tuned.toml"),
    ),
    ("quad-100m", include_str!("builtins/quad-100m.toml")),
    ("iscsi-1g", include_str!("builtins/iscsi-1g.toml")),
];

/// The benchmarking range of RFC 2544: 198.18.0.0/15.
pub const BENCH_NET: Subnet = Subnet {
    addr: Ipv4Addr::new(198, 18, 0, 0),
    prefix: 15,
};

/// Longest lab name (namespace names `iotoll-<lab>-<host>`).
pub const MAX_LAB_NAME: usize = 24;
/// Longest host name (switch ports are named `<host>-<k>`, 15 bytes at most).
pub const MAX_HOST_NAME: usize = 12;
/// Most links (adapters) a host may have.
pub const MAX_LINKS: usize = 16;
/// Smallest MTU accepted (IPv4's minimum datagram every host must accept).
pub const MIN_MTU: u32 = 576;
/// Largest MTU accepted (below the 64 KiB IP datagram and veth's limit).
pub const MAX_MTU: u32 = 65000;
/// The MTU of a link that names none, in the file or lab-wide.
pub const DEFAULT_MTU: u32 = 1500;

/// On or off: `true`/`false` or `"on"`/`"off"` in a file, `on`/`off`/`true`/`false` with `--set`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct OnOff(pub bool);

impl<'de> Deserialize<'de> for OnOff {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            B(bool),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::B(b) => Ok(OnOff(b)),
            Raw::S(s) => match s.as_str() {
                "on" | "true" => Ok(OnOff(true)),
                "off" | "false" => Ok(OnOff(false)),
                _ => Err(serde::de::Error::custom(format!(
                    "'{s}' is not on or off (use true/false or \"on\"/\"off\")"
                ))),
            },
        }
    }
}

/// Offloads of an adapter: each on, off or (absent) the kernel's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offloads {
    /// TCP segmentation offload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tso: Option<OnOff>,
    /// Generic segmentation offload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gso: Option<OnOff>,
    /// Generic receive offload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gro: Option<OnOff>,
    /// Scatter-gather.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sg: Option<OnOff>,
    /// Receive checksum offload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx_checksum: Option<OnOff>,
    /// Transmit checksum offload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx_checksum: Option<OnOff>,
}

impl Offloads {
    /// `self`, with `base` filling what `self` leaves to the default.
    fn or(self, base: Offloads) -> Offloads {
        Offloads {
            tso: self.tso.or(base.tso),
            gso: self.gso.or(base.gso),
            gro: self.gro.or(base.gro),
            sg: self.sg.or(base.sg),
            rx_checksum: self.rx_checksum.or(base.rx_checksum),
            tx_checksum: self.tx_checksum.or(base.tx_checksum),
        }
    }

    /// The settings named, as (name, on).
    pub fn list(&self) -> Vec<(&'static str, bool)> {
        [
            ("sg", self.sg),
            ("tx_checksum", self.tx_checksum),
            ("rx_checksum", self.rx_checksum),
            ("tso", self.tso),
            ("gso", self.gso),
            ("gro", self.gro),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| (n, v.0)))
        .collect()
    }
}

/// The lab file as written (every key optional but `name` and hosts).
/// (No `#[serde(flatten)]`: it cannot be combined with deny_unknown_fields.
/// TOML has no null: a `None` is left out when written, absent when read.)
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLab {
    name: String,
    description: Option<String>,
    subnet: Option<String>,
    rate: Option<String>,
    mtu: Option<u32>,
    shaper: Option<String>,
    offloads: Option<Offloads>,
    delay: Option<String>,
    loss: Option<String>,
    congestion_control: Option<String>,
    tcp_rmem: Option<String>,
    tcp_wmem: Option<String>,
    #[serde(default, rename = "host")]
    hosts: Vec<FileHost>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHost {
    name: String,
    congestion_control: Option<String>,
    tcp_rmem: Option<String>,
    tcp_wmem: Option<String>,
    /// `net.*` sysctls of the host's namespace (`[host.sysctl]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    sysctl: BTreeMap<String, crate::sysctl::SysctlValue>,
    /// `"0-3"`, `"auto"`; absent: the CPUs no host has (docs/lab.md).
    cpus: Option<String>,
    /// Whether this host's explicit `cpus` may overlap another's.
    shared: Option<bool>,
    #[serde(default, rename = "link", skip_serializing_if = "Vec::is_empty")]
    links: Vec<FileLink>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLink {
    address: Option<String>,
    rate: Option<String>,
    mtu: Option<u32>,
    shaper: Option<String>,
    offloads: Option<Offloads>,
    delay: Option<String>,
    loss: Option<String>,
}

/// The keys that are the lab-wide defaults of every link.
const LINK_KEYS: &[&str] = &["rate", "mtu", "shaper", "delay", "loss"];
/// The keys that are the lab-wide defaults of every host's TCP settings.
const TCP_KEYS: &[&str] = &["congestion_control", "tcp_rmem", "tcp_wmem"];
const OFFLOAD_KEYS: &[&str] = &["tso", "gso", "gro", "sg", "rx_checksum", "tx_checksum"];

/// An IPv4 subnet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    pub addr: Ipv4Addr,
    pub prefix: u8,
}

impl Subnet {
    fn mask(&self) -> u32 {
        if self.prefix == 0 {
            0
        } else {
            u32::MAX << (32 - self.prefix)
        }
    }
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & self.mask() == u32::from(self.addr)
    }
    pub fn overlaps(&self, o: &Subnet) -> bool {
        self.contains(o.addr) || o.contains(self.addr)
    }
    /// The first address after the network's.
    pub fn first(&self) -> u32 {
        u32::from(self.addr) + 1
    }
    /// The broadcast address.
    pub fn broadcast(&self) -> u32 {
        u32::from(self.addr) | !self.mask()
    }
    pub fn parse(s: &str) -> Result<Subnet, String> {
        let (a, p) = s
            .split_once('/')
            .ok_or_else(|| format!("subnet '{s}' is not ADDRESS/PREFIX (e.g. 198.18.7.0/24)"))?;
        let addr: Ipv4Addr = a
            .parse()
            .map_err(|_| format!("subnet '{s}': '{a}' is not an IPv4 address"))?;
        let prefix: u8 = p
            .parse()
            .ok()
            .filter(|p| (16..=30).contains(p))
            .ok_or_else(|| format!("subnet '{s}': the prefix must be 16 to 30"))?;
        let n = Subnet { addr, prefix };
        if u32::from(addr) & n.mask() != u32::from(addr) {
            return Err(format!(
                "subnet '{s}' has host bits set (did you mean {}/{prefix}?)",
                Ipv4Addr::from(u32::from(addr) & n.mask())
            ));
        }
        if !BENCH_NET.contains(addr) {
            return Err(format!(
                "subnet '{s}' is outside the benchmarking range 198.18.0.0/15 (RFC 2544)"
            ));
        }
        Ok(n)
    }
}

impl std::fmt::Display for Subnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// How a shaped link is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shaper {
    Tbf,
    Htb,
}

impl Shaper {
    pub fn name(self) -> &'static str {
        match self {
            Shaper::Tbf => "tbf",
            Shaper::Htb => "htb",
        }
    }
}

/// Per-host TCP settings (per network namespace).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion_control: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_rmem: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_wmem: Option<String>,
}

impl TcpSettings {
    /// The settings given, as (TCP_KEYS name, value).
    pub fn given(&self) -> impl Iterator<Item = (&'static str, &str)> {
        let (cc, r, w) = (&self.congestion_control, &self.tcp_rmem, &self.tcp_wmem);
        let all = [("congestion_control", cc), ("tcp_rmem", r), ("tcp_wmem", w)];
        all.into_iter()
            .filter_map(|(k, v)| Some((k, v.as_deref()?)))
    }
}

/// One link (adapter) of a host, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkDef {
    pub address: Option<Ipv4Addr>,
    /// Bits per second; `None` unshaped.
    pub rate: Option<u64>,
    pub mtu: u32,
    pub shaper: Shaper,
    pub offloads: Offloads,
    pub delay: Option<String>,
    pub loss: Option<String>,
}

/// One host, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct HostDef {
    pub name: String,
    pub tcp: TcpSettings,
    /// `net.*` sysctls set in its namespace, by full name: checked here
    /// for form only; whether the kernel keeps each per namespace and
    /// takes the value is [`crate::check_kernel`]'s.
    pub sysctl: BTreeMap<String, String>,
    pub cpus: CpuReq,
    pub shared: bool,
    pub links: Vec<LinkDef>,
}

/// A lab, validated and resolved: every link with its own values.
#[derive(Debug, Clone, PartialEq)]
pub struct LabDef {
    pub name: String,
    pub description: Option<String>,
    /// The built-in's name or the file's path.
    pub source: String,
    /// The `--set KEY=VALUE` overrides applied, in order.
    pub sets: Vec<String>,
    /// The subnet the file asks for; `None`: a free /24 at `up`.
    pub subnet: Option<Subnet>,
    pub hosts: Vec<HostDef>,
}

impl LabDef {
    /// Whether a link asks for netem (delay or loss).
    pub fn wants_netem(&self) -> bool {
        self.links().any(|l| l.delay.is_some() || l.loss.is_some())
    }
    pub fn links(&self) -> impl Iterator<Item = &LinkDef> {
        self.hosts.iter().flat_map(|h| h.links.iter())
    }

    /// The effective lab as TOML: every link with every value, and the
    /// subnet and addresses when given.
    pub fn to_toml(&self, subnet: Option<Subnet>, addresses: Option<&[Vec<Ipv4Addr>]>) -> String {
        let file = FileLab {
            name: self.name.clone(),
            description: self.description.clone(),
            subnet: subnet.or(self.subnet).map(|s| s.to_string()),
            hosts: self
                .hosts
                .iter()
                .enumerate()
                .map(|(i, h)| FileHost {
                    name: h.name.clone(),
                    congestion_control: h.tcp.congestion_control.clone(),
                    tcp_rmem: h.tcp.tcp_rmem.clone(),
                    tcp_wmem: h.tcp.tcp_wmem.clone(),
                    sysctl: (h.sysctl.iter())
                        .map(|(k, v)| (k.clone(), crate::sysctl::SysctlValue::Text(v.clone())))
                        .collect(),
                    cpus: match &h.cpus {
                        CpuReq::Rest => None,
                        CpuReq::Auto => Some("auto".into()),
                        CpuReq::List(l) => Some(format_list(l)),
                    },
                    shared: h.shared.then_some(true),
                    links: h
                        .links
                        .iter()
                        .enumerate()
                        .map(|(k, l)| FileLink {
                            address: addresses
                                .map(|a| a[i][k])
                                .or(l.address)
                                .map(|a| a.to_string()),
                            rate: Some(l.rate.map_or("none".into(), format_rate)),
                            mtu: Some(l.mtu),
                            shaper: l.rate.map(|_| l.shaper.name().into()),
                            offloads: (l.offloads != Offloads::default()).then_some(l.offloads),
                            delay: l.delay.clone(),
                            loss: l.loss.clone(),
                        })
                        .collect(),
                })
                .collect(),
            ..Default::default()
        };
        toml::to_string(&file).unwrap_or_else(|e| format!("# not serializable: {e}\n"))
    }
}

/// A rate in bits per second from `100mbit`, `1gbit`, `2.5gbit`, `10gbit`,
/// `500kbit`, `64000bit` (SI multiples, as tc), or `none` (unshaped).
pub fn parse_rate(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim().to_ascii_lowercase();
    if t == "none" {
        return Ok(None);
    }
    let units: &[(&str, f64)] = &[
        ("tbit", 1e12),
        ("gbit", 1e9),
        ("mbit", 1e6),
        ("kbit", 1e3),
        ("bit", 1.0),
    ];
    let bad = || {
        format!("rate '{s}' is not a rate: use e.g. 100mbit, 1gbit, 10gbit (or none for unshaped)")
    };
    let (num, mult) = units
        .iter()
        .find_map(|(u, m)| t.strip_suffix(u).map(|n| (n, *m)))
        .ok_or_else(bad)?;
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("rate '{s}' must be more than 0"));
    }
    let bps = (v * mult).round();
    if bps < 8000.0 {
        return Err(format!("rate '{s}' is below the smallest, 8kbit"));
    }
    if bps > 400e9 {
        return Err(format!("rate '{s}' is above the largest, 400gbit"));
    }
    Ok(Some(bps as u64))
}

/// `1gbit`, `100mbit`, `2500mbit`: the shortest exact form.
pub fn format_rate(bps: u64) -> String {
    for (u, m) in [("tbit", 1e12), ("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)] {
        let m = m as u64;
        if bps % m == 0 {
            return format!("{}{u}", bps / m);
        }
    }
    format!("{bps}bit")
}

pub(crate) fn check_name(what: &str, name: &str, max: usize) -> Result<(), String> {
    if iotoll_model::text::is_label(name, max) {
        return Ok(());
    }
    Err(format!(
        "{what} name '{name}' must be 1 to {max} characters of a-z, 0-9 and '-' (not first or last)"
    ))
}

/// "min default max" bytes, as the kernel's tcp_rmem/tcp_wmem.
pub(crate) fn check_mem(key: &str, v: &str) -> Result<(), String> {
    let n: Vec<u64> = v
        .split_whitespace()
        .map(|x| x.parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("{key} '{v}' is not three byte counts \"MIN DEFAULT MAX\""))?;
    match n[..] {
        [a, b, c] if a > 0 && a <= b && b <= c && c <= i32::MAX as u64 => Ok(()),
        _ => Err(format!(
            "{key} '{v}' must be three byte counts \"MIN DEFAULT MAX\" with 0 < MIN <= DEFAULT <= MAX"
        )),
    }
}

fn check_cc(v: &str) -> Result<(), String> {
    if v.is_empty() || v.len() > 15 || !v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!(
            "congestion_control '{v}' is not a congestion control name"
        ));
    }
    Ok(())
}

/// A `--set` value: TOML when it parses as a TOML value (`9000`, `true`),
/// else the text as a string (`1gbit`, `off`).
fn set_value(v: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {v}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(v.to_string()))
}

/// Sets `key` in `t`'s table `name` (made when absent); `None` when
/// `name` is there but not a table.
pub(crate) fn set_in(t: &mut toml::Table, name: &str, key: &str, v: toml::Value) -> Option<()> {
    let sub = t
        .entry(name)
        .or_insert_with(|| toml::Value::Table(Default::default()));
    sub.as_table_mut()?.insert(key.into(), v);
    Some(())
}

/// Host `name`'s table in the file's `[[host]]` array (the first of two
/// named alike, which [`resolve`] refuses).
pub(crate) fn host_table<'a>(t: &'a mut toml::Table, name: &str) -> Option<&'a mut toml::Table> {
    let hs = t.get_mut("host")?.as_array_mut()?;
    (hs.iter_mut().filter_map(|h| h.as_table_mut()))
        .find(|h| h.get("name").and_then(|n| n.as_str()) == Some(name))
}

/// Applies `KEY=VALUE` to the file's table: lab-wide default and every
/// host or link that names the key itself.
fn apply_set(t: &mut toml::Table, set: &str) -> Result<(), String> {
    let (k, v) = set
        .split_once('=')
        .ok_or_else(|| format!("--set '{set}' is not KEY=VALUE"))?;
    // A CPU list stays text (`0` would otherwise become an integer).
    let raw = v.trim().trim_matches('"').to_string();
    let (k, v) = (k.trim(), set_value(v.trim()));
    // `f` on each host's table (the array rewritten with its tables only).
    let each_host = |t: &mut toml::Table, f: &dyn Fn(&mut toml::Table)| {
        let mut hs: Vec<toml::Table> = match t.get("host") {
            Some(toml::Value::Array(a)) => a.iter().filter_map(|h| h.as_table().cloned()).collect(),
            _ => vec![],
        };
        hs.iter_mut().for_each(f);
        let hs = hs.into_iter().map(toml::Value::Table).collect();
        t.insert("host".into(), toml::Value::Array(hs));
    };
    let each_link = |h: &mut toml::Table, f: &dyn Fn(&mut toml::Table)| {
        if let Some(toml::Value::Array(ls)) = h.get_mut("link") {
            ls.iter_mut().filter_map(|l| l.as_table_mut()).for_each(f);
        }
    };
    if ["name", "description", "subnet"].contains(&k) {
        t.insert(k.into(), v);
    } else if LINK_KEYS.contains(&k) {
        t.insert(k.into(), v);
        each_host(t, &|h| {
            each_link(h, &|l| {
                l.remove(k);
            })
        });
    } else if TCP_KEYS.contains(&k) {
        t.insert(k.into(), v);
        each_host(t, &|h| {
            h.remove(k);
        });
    } else if let Some(host) = k.strip_prefix("cpus.") {
        let h = host_table(t, host).ok_or(format!("--set {k}: the lab has no host '{host}'"))?;
        h.insert("cpus".into(), toml::Value::String(raw));
    } else if let Some(o) = k.strip_prefix("offloads.") {
        if !OFFLOAD_KEYS.contains(&o) {
            return Err(format!(
                "--set {k}: unknown offload '{o}' (one of {})",
                OFFLOAD_KEYS.join(", ")
            ));
        }
        set_in(t, "offloads", o, v).ok_or("offloads is not a table")?;
        each_host(t, &|h| {
            each_link(h, &|l| {
                if let Some(off) = l.get_mut("offloads").and_then(|x| x.as_table_mut()) {
                    off.remove(o);
                }
            })
        });
    } else if let Some(hk) = k.strip_prefix("sysctl.") {
        crate::sysctl::set(t, hk, v)?;
    } else {
        return Err(format!(
            "--set: unknown key '{k}' (one of name, description, subnet, {}, {}, offloads.{{{}}}, sysctl.HOST.KEY, cpus.HOST)",
            LINK_KEYS.join(", "),
            TCP_KEYS.join(", "),
            OFFLOAD_KEYS.join(",")
        ));
    }
    Ok(())
}

/// Parses, overrides and validates a lab; `source` names it in errors.
pub(crate) fn parse(text: &str, source: &str, sets: &[String]) -> Result<LabDef, LabError> {
    let usage = |m: String| LabError::Usage(format!("{source}: {m}"));
    let mut table: toml::Table = toml::from_str(text).map_err(|e| usage(e.to_string()))?;
    for s in sets {
        apply_set(&mut table, s).map_err(LabError::Usage)?;
    }
    let file: FileLab = if sets.is_empty() {
        // From the text itself, so an error has its line.
        toml::from_str(text).map_err(|e| {
            let line = e.span().map(|r| text[..r.start].matches('\n').count() + 1);
            let at = line.map(|l| format!("line {l}: ")).unwrap_or_default();
            usage(format!("{at}{}", e.message().trim()))
        })?
    } else {
        // Errors after --set have no line: say which input it was.
        FileLab::deserialize(toml::Value::Table(table)).map_err(|e| {
            let m = e
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            usage(format!("--set {}: {m}", sets.join(" --set ")))
        })?
    };
    resolve(file, source, sets).map_err(usage)
}

fn resolve(mut f: FileLab, source: &str, sets: &[String]) -> Result<LabDef, String> {
    check_name("lab", &f.name, MAX_LAB_NAME)?;
    let subnet = f.subnet.as_deref().map(Subnet::parse).transpose()?;
    if f.hosts.is_empty() {
        return Err("a lab needs at least one [[host]]".into());
    }
    let file_hosts = std::mem::take(&mut f.hosts);
    let mut base = Base {
        rate: f.rate.as_deref().map(parse_rate).transpose()?.flatten(),
        shaper: f.shaper.as_deref().map(parse_shaper).transpose()?,
        offloads: f.offloads.unwrap_or_default(),
        subnet,
        file: &f,
        seen_addr: Vec::new(),
    };
    let mut hosts: Vec<HostDef> = Vec::new();
    for h in file_hosts {
        check_name("host", &h.name, MAX_HOST_NAME)?;
        if h.name == "sw" {
            return Err("host name 'sw' is the switch's: choose another".into());
        }
        if hosts.iter().any(|x| x.name == h.name) {
            return Err(format!("duplicate host '{}'", h.name));
        }
        hosts.push(base.host(h)?);
    }
    let def = LabDef {
        name: f.name,
        description: f.description,
        source: source.to_string(),
        sets: sets.to_vec(),
        subnet,
        hosts,
    };
    if let Some(sn) = subnet {
        let room = sn.broadcast() - sn.first();
        let n = def.links().count() as u32;
        if n > room {
            return Err(format!(
                "subnet {sn} has room for {room} addresses; the lab needs {n}"
            ));
        }
    }
    Ok(def)
}

/// What a host or link that says nothing takes from the lab, and the
/// addresses taken so far.
struct Base<'a> {
    file: &'a FileLab,
    rate: Option<u64>,
    shaper: Option<Shaper>,
    offloads: Offloads,
    subnet: Option<Subnet>,
    /// Explicit addresses, each with the link that has it.
    seen_addr: Vec<(Ipv4Addr, String)>,
}

impl Base<'_> {
    fn host(&mut self, h: FileHost) -> Result<HostDef, String> {
        let f = self.file;
        let tcp = TcpSettings {
            congestion_control: h.congestion_control.or(f.congestion_control.clone()),
            tcp_rmem: h.tcp_rmem.or(f.tcp_rmem.clone()),
            tcp_wmem: h.tcp_wmem.or(f.tcp_wmem.clone()),
        };
        for (key, v) in tcp.given() {
            match key {
                "congestion_control" => check_cc(v)?,
                _ => check_mem(key, v)?,
            }
        }
        let mut sysctl = BTreeMap::new();
        for (k, v) in &h.sysctl {
            let v = v.text();
            crate::sysctl::check_form(&h.name, k, &v, &tcp)?;
            sysctl.insert(k.clone(), v);
        }
        let cpus = match &h.cpus {
            Some(c) => CpuReq::parse(c).map_err(|e| format!("host '{}': {e}", h.name))?,
            None => CpuReq::Rest,
        };
        let file_links = if h.links.is_empty() {
            vec![FileLink::default()]
        } else {
            h.links
        };
        if file_links.len() > MAX_LINKS {
            return Err(format!(
                "host '{}' has {} links; at most {MAX_LINKS}",
                h.name,
                file_links.len()
            ));
        }
        let mut links = Vec::new();
        for (k, l) in file_links.into_iter().enumerate() {
            links.push(self.link(l, format!("host '{}' link {k}", h.name))?);
        }
        Ok(HostDef {
            name: h.name,
            tcp,
            sysctl,
            cpus,
            shared: h.shared.unwrap_or(false),
            links,
        })
    }

    /// Link `at` ("host 'a' link 0"), with the lab's settings where it
    /// has none.
    fn link(&mut self, l: FileLink, at: String) -> Result<LinkDef, String> {
        let d = self.file;
        let here = |e: String| format!("{at}: {e}");
        let rate = match &l.rate {
            Some(r) => parse_rate(r).map_err(here)?,
            None => self.rate,
        };
        let mtu = l.mtu.or(d.mtu).unwrap_or(DEFAULT_MTU);
        if !(MIN_MTU..=MAX_MTU).contains(&mtu) {
            return Err(format!(
                "{at}: MTU {mtu} is out of range ({MIN_MTU} to {MAX_MTU})"
            ));
        }
        let shaper = match &l.shaper {
            Some(s) => parse_shaper(s).map_err(here)?,
            None => self.shaper.unwrap_or(Shaper::Tbf),
        };
        let address = (l.address.as_deref())
            .map(|a| self.address(a, &at))
            .transpose()?;
        let delay = l.delay.or(d.delay.clone());
        let loss = l.loss.or(d.loss.clone());
        if let Some(v) = &delay {
            check_delay(v).map_err(here)?;
        }
        if let Some(v) = &loss {
            check_loss(v).map_err(here)?;
        }
        Ok(LinkDef {
            address,
            rate,
            mtu,
            shaper,
            offloads: l.offloads.unwrap_or_default().or(self.offloads),
            delay,
            loss,
        })
    }

    /// An explicit address: IPv4, a host address of the lab's subnet in
    /// the benchmarking range, and no other link's.
    fn address(&mut self, a: &str, at: &str) -> Result<Ipv4Addr, String> {
        let a: Ipv4Addr = a
            .parse()
            .map_err(|_| format!("{at}: address '{a}' is not an IPv4 address"))?;
        if !BENCH_NET.contains(a) {
            return Err(format!(
                "{at}: address {a} is outside the benchmarking range 198.18.0.0/15"
            ));
        }
        let Some(sn) = self.subnet else {
            return Err(format!(
                "{at}: an explicit address needs the lab's subnet = \"...\""
            ));
        };
        let n = u32::from(a);
        if !sn.contains(a) || n == u32::from(sn.addr) || n == sn.broadcast() {
            return Err(format!(
                "{at}: address {a} is not a host address of the lab's subnet {sn}"
            ));
        }
        if let Some((_, other)) = self.seen_addr.iter().find(|(x, _)| *x == a) {
            return Err(format!("{at}: address {a} is also {other}'s"));
        }
        self.seen_addr.push((a, at.to_string()));
        Ok(a)
    }
}

fn parse_shaper(s: &str) -> Result<Shaper, String> {
    let by_name = [Shaper::Tbf, Shaper::Htb]
        .into_iter()
        .find(|x| x.name() == s);
    by_name.ok_or_else(|| format!("shaper '{s}' is not tbf or htb"))
}

fn check_delay(s: &str) -> Result<(), String> {
    let t = s.trim();
    let num = t
        .strip_suffix("ms")
        .or_else(|| t.strip_suffix("us"))
        .or_else(|| t.strip_suffix('s'));
    match num.and_then(|n| n.trim().parse::<f64>().ok()) {
        Some(v) if v >= 0.0 && v.is_finite() => Ok(()),
        _ => Err(format!("delay '{s}' is not a delay (e.g. 1ms, 250us)")),
    }
}

fn check_loss(s: &str) -> Result<(), String> {
    match s
        .trim()
        .strip_suffix('%')
        .and_then(|n| n.trim().parse::<f64>().ok())
    {
        Some(v) if (0.0..=100.0).contains(&v) => Ok(()),
        _ => Err(format!("loss '{s}' is not a percentage (e.g. 0.1%)")),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Lab file `text` parsed with `sets` (in tests of `sysctl` too).
    pub(crate) fn p(text: &str, sets: &[&str]) -> Result<LabDef, LabError> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        parse(text, "t.toml", &sets)
    }

    const PAIR: &str = "name = \"x\"\nrate = \"1gbit\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\nlink = [{ mtu = 9000 }]\n";

    #[test]
    fn builtins_parse() {
        for (n, t) in BUILTINS {
            let d = parse(t, n, &[]).unwrap();
            assert_eq!(&d.name, n);
        }
        let quad = BUILTINS.iter().find(|(n, _)| *n == "quad-100m").unwrap();
        let q = parse(quad.1, "quad-100m", &[]).unwrap();
        assert_eq!(q.hosts.len(), 17);
        assert_eq!(q.hosts[0].links.len(), 4);
        assert_eq!(q.hosts[16].name, "c16");
        assert!(q.links().all(|l| l.rate == Some(100_000_000)));
        let t = parse(include_str!("builtins/pair-10g-tuned.toml"), "t", &[]).unwrap();
        assert!(t.hosts.iter().all(|h| h.sysctl["net.ipv4.tcp_sack"] == "0"));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("1gbit").unwrap(), Some(1_000_000_000));
        assert_eq!(parse_rate("2.5Gbit").unwrap(), Some(2_500_000_000));
        assert_eq!(parse_rate("none").unwrap(), None);
        assert!(parse_rate("0mbit").unwrap_err().contains("more than 0"));
        assert!(parse_rate("fast").is_err());
        assert_eq!(format_rate(100_000_000), "100mbit");
        assert_eq!(format_rate(2_500_000_000), "2500mbit");
    }

    #[test]
    fn sets_override_every_link() {
        let d = p(PAIR, &["mtu=1400", "offloads.gro=off", "rate=100mbit"]).unwrap();
        assert!(d
            .links()
            .all(|l| l.mtu == 1400 && l.rate == Some(100_000_000)));
        assert!(d.links().all(|l| l.offloads.gro == Some(OnOff(false))));
        let d = p(PAIR, &[]).unwrap();
        assert_eq!(d.hosts[1].links[0].mtu, 9000);
        assert_eq!(d.hosts[0].links[0].mtu, 1500);
        let d = p(PAIR, &["name=y", "congestion_control=reno"]).unwrap();
        assert_eq!(d.name, "y");
        assert_eq!(d.hosts[0].tcp.congestion_control.as_deref(), Some("reno"));
        let e = p(PAIR, &["colour=red"]).unwrap_err().to_string();
        assert!(e.contains("colour"), "{e}");
        let e = p(PAIR, &["offloads.foo=on"]).unwrap_err().to_string();
        assert!(e.contains("foo"), "{e}");
        let e = p(PAIR, &["mtu=100"]).unwrap_err().to_string();
        assert!(e.contains("MTU 100 "), "{e}");
    }

    #[test]
    fn cpus_from_file_and_set() {
        let f = "name = \"x\"\n[[host]]\nname = \"a\"\ncpus = \"0-1\"\n[[host]]\nname = \"b\"\ncpus = \"auto\"\nshared = true\n";
        let d = p(f, &[]).unwrap();
        assert_eq!(d.hosts[0].cpus, CpuReq::List(vec![0, 1]));
        assert_eq!((&d.hosts[1].cpus, d.hosts[1].shared), (&CpuReq::Auto, true));
        let d = p(PAIR, &["cpus.a=0", "cpus.b=auto"]).unwrap();
        assert_eq!(d.hosts[0].cpus, CpuReq::List(vec![0]));
        assert_eq!(d.hosts[1].cpus, CpuReq::Auto);
        assert_eq!(p(PAIR, &[]).unwrap().hosts[0].cpus, CpuReq::Rest);
        let e = p(PAIR, &["cpus.z=0"]).unwrap_err().to_string();
        assert!(e.contains("no host 'z'"), "{e}");
        let e = p(PAIR, &["cpus.a=0-x"]).unwrap_err().to_string();
        assert!(e.contains("host 'a'") && e.contains("0-x"), "{e}");
        // The effective definition keeps the request.
        let d = p(PAIR, &["cpus.a=0-1"]).unwrap();
        assert!(d.to_toml(None, None).contains("cpus = \"0-1\""));
    }

    #[test]
    fn errors_name_the_problem() {
        let cases = [
            ("name = \"x\"\nspeed = 1\n[[host]]\nname = \"a\"\n", "speed"),
            ("name = \"x\"\n[[host]]\nname = \"a\"\ncolour = 1\n", "colour"),
            ("name = \"x\"\n[[host]]\nname = \"a\"\nlink = [{ mtux = 1 }]\n", "mtux"),
            ("name = \"x\"\nrate = \"0gbit\"\n[[host]]\nname = \"a\"\n", "rate"),
            ("name = \"x\"\nmtu = 100\n[[host]]\nname = \"a\"\n", "MTU 100 "),
            ("name = \"x\"\nmtu = 100000\n[[host]]\nname = \"a\"\n", "MTU 100000"),
            ("name = \"x\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"a\"\n", "duplicate host 'a'"),
            ("name = \"X\"\n[[host]]\nname = \"a\"\n", "lab name"),
            ("name = \"x\"\n[[host]]\nname = \"averyveryverylongname\"\n", "host name"),
            ("name = \"x\"\n[[host]]\nname = \"a\"\nlink = [{ address = \"198.18.0.5\" }]\n", "needs the lab's subnet"),
            ("name = \"x\"\nsubnet = \"198.18.1.0/24\"\n[[host]]\nname = \"a\"\nlink = [{ address = \"198.18.2.5\" }]\n", "not a host address"),
            ("name = \"x\"\nsubnet = \"198.18.1.0/24\"\n[[host]]\nname = \"a\"\nlink = [{ address = \"10.0.0.5\" }]\n", "outside the benchmarking range"),
            ("name = \"x\"\nsubnet = \"10.0.0.0/24\"\n[[host]]\nname = \"a\"\n", "outside the benchmarking range"),
            ("name = \"x\"\nsubnet = \"198.18.1.0/24\"\n[[host]]\nname = \"a\"\nlink = [{ address = \"198.18.1.5\" }, { address = \"198.18.1.5\" }]\n", "198.18.1.5 is also"),
            ("name = \"x\"\n[[host]]\nname = \"a\"\ntcp_rmem = \"1 2\"\n", "tcp_rmem"),
            ("name = \"x\"\nshaper = \"cbq\"\n[[host]]\nname = \"a\"\n", "shaper 'cbq'"),
            ("name = \"x\"\n", "at least one"),
        ];
        for (text, needle) in cases {
            let e = p(text, &[]).unwrap_err();
            assert!(e.is_usage());
            assert!(e.to_string().contains(needle), "{needle:?} not in {e}");
        }
    }

    #[test]
    fn definition_round_trips() {
        let d = p(PAIR, &["offloads.tso=off"]).unwrap();
        let t = d.to_toml(None, None);
        let again = parse(&t, "t.toml", &[]).unwrap();
        assert_eq!(again.hosts, d.hosts);
    }
}
