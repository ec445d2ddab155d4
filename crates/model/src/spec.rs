//! The typed parts of a result document: the `spec` of each kind and the
//! disclosures (docs/json.md). The engines build these; the JSON Schema is
//! generated from them ([`crate::schema`]).
//!
//! [`ResultDoc`](crate::ResultDoc) holds them as [`Spec`] and
//! [`Disclosure`], typed by the document's `kind` when it is read. They
//! also hold what imports state (a partial spec plus `imported_from` and
//! `format`) and, kept as written, what another version wrote; the
//! endpoint's own disclosure is the peer's word and travels free-form so
//! that endpoints of other versions interoperate.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `spec` of a disk run: every parameter used, defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DiskSpec {
    /// The built-in access specification, or null for a custom one.
    pub spec: Option<String>,
    /// The first target (`targets` lists them all).
    pub target: String,
    #[schemars(extend("enum" = TARGET_KINDS))]
    pub target_kind: String,
    /// Size of the first target's file or device, bytes.
    #[schemars(range(min = 1))]
    pub target_size: u64,
    /// Every target, in the order given. Absent in documents made before
    /// iotoll took several targets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetSpec>,
    /// How many targets, written only when more than one (so that a
    /// single-target test keeps its name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 2))]
    pub ntargets: Option<u32>,
    /// Transfer size, bytes: the single line's (absent for a mixed spec;
    /// see `lines`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub bs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 100))]
    pub read_pct: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 100))]
    pub random_pct: Option<u32>,
    /// The access specification's lines (one for a simple spec). Absent in
    /// documents made before iotoll took mixed specs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LineSpec>,
    /// A mixed spec in one word for test names: the built-in's name, or
    /// its lines written out. Absent for a single-line spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<String>,
    /// Outstanding I/Os per worker and target (Iometer counts them per target).
    #[schemars(range(min = 1))]
    pub qd: u32,
    /// The I/Os all workers asked to keep in flight: `qd` on each of a
    /// worker's targets, or one per worker for a synchronous engine
    /// (psync). What `qd_achieved` is measured against. Absent from older
    /// documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qd_requested: Option<u32>,
    /// Workers per target, or in all with `spread`.
    #[schemars(range(min = 1))]
    pub workers: u32,
    /// Every worker works on every target (round-robin), instead of a
    /// worker per target. Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spread: bool,
    /// CPUs the workers were pinned to, round-robin; absent: not pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<u32>>,
    /// The region tested on each target: its length and offset, bytes.
    #[schemars(range(min = 1))]
    pub size: u64,
    pub offset: u64,
    /// The single line's alignment (absent for a mixed spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub align: Option<u64>,
    #[schemars(range(min = 1))]
    pub logical_block_size: u64,
    /// Iometer's transfer delay and burst length of the single line
    /// (absent for a mixed spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub burst_delay_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub burst_len: Option<u32>,
    /// The engine that ran, and what was asked.
    #[schemars(extend("enum" = ["io_uring", "io_uring_sqpoll", "psync", "null", "iscsi"]))]
    pub engine: String,
    #[schemars(extend("enum" = ["auto", "io_uring", "io_uring_sqpoll", "psync", "null", "iscsi"]))]
    pub engine_requested: String,
    /// O_DIRECT (false with `--buffered`).
    pub direct: bool,
    #[schemars(range(min = 0.0))]
    pub ramp_s: f64,
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub time_s: f64,
}

/// `spec` of an imported result (`results import`): what the source
/// states, in the native spec's keys, and where it came from. A published
/// table states nothing but its origin; fio and iperf3 state part of the
/// workload. It is its own shape, never a native spec with fields missing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ImportSpec {
    /// The `--format` it was imported with.
    #[schemars(extend("enum" = IMPORT_FORMATS))]
    pub format: String,
    /// The file it was imported from, as given.
    pub imported_from: String,
    /// fio: transfer size, bytes (absent when fio's job names no single size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub bs: Option<u64>,
    /// fio: the mix its `rw` names (absent for one it does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 100))]
    pub read_pct: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 100))]
    pub random_pct: Option<u64>,
    /// fio: `iodepth` (1 for a synchronous engine) and `numjobs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qd: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u64>,
    /// fio: `size`, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// fio: `fio ENGINE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// fio: `direct=1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<bool>,
    /// iperf3: `tx`, `rx` (`-R`) or `bidir`; its streams and block size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["tx", "rx", "bidir"]))]
    pub dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<u64>,
    /// The window and the ramp-up the source left out (fio's `runtime`
    /// and `ramp_time`, iperf3's `-t` and `--omit`), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_s: Option<f64>,
}

/// What `results import --format` takes.
pub const IMPORT_FORMATS: [&str; 3] = ["table", "fio-json", "iperf3-json"];

/// The `spec` a result of some kind holds: the kind's own (a run of
/// iotoll's) or an import's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "{T}OrImport")]
pub enum SpecOf<T> {
    /// A run of iotoll's: every parameter used.
    Native(T),
    /// An import: what the source states.
    Import(Box<ImportSpec>),
}

/// What a target can be.
pub const TARGET_KINDS: [&str; 5] = [
    "temp-file",
    "created-file",
    "existing-file",
    "block-device",
    "iscsi-lun",
];

/// One target of a disk run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TargetSpec {
    pub path: String,
    #[schemars(extend("enum" = TARGET_KINDS))]
    pub kind: String,
    /// Size of the file or device, bytes.
    #[schemars(range(min = 1))]
    pub size: u64,
    #[schemars(range(min = 1))]
    pub logical_block_size: u64,
}

/// One line of an access specification (Iometer's "% of access" and the
/// transfer parameters it applies to).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LineSpec {
    /// Share of the I/Os this line makes, percent; the lines add up to 100.
    #[schemars(range(min = 1, max = 100))]
    pub share_pct: u32,
    #[schemars(range(min = 1))]
    pub bs: u64,
    #[schemars(range(max = 100))]
    pub read_pct: u32,
    #[schemars(range(max = 100))]
    pub random_pct: u32,
    #[schemars(range(min = 0.0))]
    pub burst_delay_s: f64,
    #[schemars(range(min = 1))]
    pub burst_len: u32,
    /// Offset alignment, bytes.
    #[schemars(range(min = 1))]
    pub align: u64,
}

/// `disclosure` of a disk run: where its workers ran and where the
/// interrupts of its devices go.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DiskDisclosure {
    /// The block devices behind the targets (a file's filesystem's device).
    pub devices: Vec<String>,
    /// Interrupt lines of those devices and of the network interfaces
    /// (`/proc/interrupts`), with their CPU affinity.
    pub irqs: Vec<IrqAffinity>,
    /// Why devices or IRQs could not be read, if they could not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The iSCSI LUNs iotoll's own initiator drove, with what their
    /// sessions negotiated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iscsi: Vec<IscsiDisclosure>,
}

/// One iSCSI target of a disk run, as its probe session found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct IscsiDisclosure {
    /// `iscsi://HOST:PORT/IQN/LUN`.
    pub url: String,
    /// Target portal, `HOST:PORT`.
    pub portal: String,
    pub target: String,
    pub lun: u64,
    /// InitiatorName iotoll logged in with.
    pub initiator: String,
    /// `None`, `CHAP` or `CHAP (mutual)`.
    pub auth: String,
    /// `None` or `CRC32C`.
    pub header_digest: String,
    pub data_digest: String,
    /// INQUIRY vendor, product and revision.
    pub vendor: String,
    pub product: String,
    pub revision: String,
    #[schemars(range(min = 1))]
    pub block_size: u32,
    pub capacity_bytes: u64,
    /// Every operational key and its negotiated value (e.g.
    /// `MaxRecvDataSegmentLength`, `ImmediateData`, `InitialR2T`).
    pub negotiated: std::collections::BTreeMap<String, String>,
}

/// One interrupt line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct IrqAffinity {
    /// Its number (or name, for the architecture's own lines).
    pub irq: String,
    /// The name `/proc/interrupts` gives its handler (e.g. `nvme0q1`).
    pub name: String,
    /// `/proc/irq/N/smp_affinity_list`, e.g. `0-3`; absent if unreadable.
    pub affinity: Option<String>,
    /// Interrupts taken so far, per CPU (`/proc/interrupts` columns).
    pub per_cpu: Vec<u64>,
}

/// What `spec` holds for every network kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NetSpec {
    /// The endpoint's address and port.
    pub peer: String,
    /// Connections (per direction for bidir).
    #[schemars(range(min = 1))]
    pub conns: u32,
    /// SO_SNDBUF/SO_RCVBUF; null: the kernel's autotuning.
    #[schemars(range(min = 1))]
    pub sockbuf: Option<u64>,
    pub nodelay: bool,
    /// Local addresses used round-robin.
    pub bind: Vec<String>,
    #[schemars(range(min = 0.0))]
    pub ramp_s: f64,
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub time_s: f64,
    /// Engine threads.
    #[schemars(range(min = 1))]
    pub threads: usize,
    /// Whether the key was proved.
    pub auth: bool,
    /// TLS 1.3 on every data connection (`--tls`): the cipher, e.g.
    /// `aes-128-gcm`; absent for cleartext.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["aes-128-gcm", "aes-256-gcm", "chacha20-poly1305"]))]
    pub tls: Option<String>,
    /// Receivers checked every byte against the senders' pattern
    /// (`--verify`); absent when not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify: bool,
}

/// `spec` of a `net-stream` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StreamSpec {
    #[serde(flatten)]
    pub net: NetSpec,
    #[schemars(extend("enum" = ["tx", "rx", "bidir"]))]
    pub dir: String,
    /// Write size, bytes.
    #[schemars(range(min = 1))]
    pub msg: u64,
}

/// `spec` of a `net-rr` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RrSpec {
    #[serde(flatten)]
    pub net: NetSpec,
    /// Request and response sizes, bytes.
    #[schemars(range(min = 1))]
    pub req: u64,
    #[schemars(range(min = 1))]
    pub resp: u64,
    /// Outstanding transactions per connection.
    #[schemars(range(min = 1))]
    pub burst: u32,
}

/// `spec` of a `net-crr` or `net-cc` run: `conns` concurrent clients,
/// each opening one connection after another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CrrSpec {
    #[serde(flatten)]
    pub net: NetSpec,
    /// Request and response sizes, bytes (0 for cc: no data).
    pub req: u64,
    pub resp: u64,
    /// Closed with a reset (SO_LINGER 0): no TIME_WAIT.
    pub linger0: bool,
}

/// `spec` of a `net-udp` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UdpSpec {
    #[serde(flatten)]
    pub net: NetSpec,
    #[schemars(extend("enum" = ["tx", "rx", "bidir"]))]
    pub dir: String,
    /// Datagram payload, bytes (iotoll's 32-byte header included).
    #[schemars(range(min = 32, max = 65507))]
    pub size: u64,
    /// Offered rate per direction, bits per second of UDP payload over all
    /// flows (`--rate`); null: unlimited.
    #[schemars(range(min = 1))]
    pub rate: Option<u64>,
}

/// `disclosure` of a network run: this end, and the endpoint's as it
/// reported it (the same shape, from the peer: kept as sent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NetDisclosure {
    pub local: NetSide,
    #[schemars(with = "NetSide")]
    pub remote: serde_json::Value,
    /// What the TLS handshakes agreed on; absent for cleartext.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsDisclosure>,
}

/// How the data connections of a `--tls` test were protected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TlsDisclosure {
    /// `TLS 1.3`.
    pub protocol: String,
    /// The negotiated suite, e.g. `TLS13_AES_128_GCM_SHA256`.
    pub cipher_suite: String,
    /// The key exchange group, e.g. `X25519`.
    pub key_exchange: Option<String>,
    /// Who ran the handshake and who the record layer (library versions).
    pub implementation: String,
    /// How the endpoint was authenticated.
    pub certificate: String,
    /// Wall time of this end's handshakes, all connections at once, s.
    pub handshake_s: f64,
    /// Whether this host's CPU has AES instructions (the AES-GCM suites'
    /// speed depends on them); absent if unknown.
    pub cpu_aes: Option<bool>,
}

impl NetDisclosure {
    /// The endpoint's side, when it has this version's shape.
    pub fn remote_side(&self) -> Option<NetSide> {
        NetSide::deserialize(&self.remote).ok()
    }
}

/// One end of a network path: what affects results there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NetSide {
    pub interface: Interface,
    /// sysctl name → value (null when unreadable).
    pub tcp: BTreeMap<String, Option<String>>,
    /// Absent from an older endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Identity")]
    pub identity: Option<Identity>,
}

/// The interface a test's traffic used. When no local interface holds the
/// address, only `name` (null) and `address` are known, and the rest is
/// absent rather than null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Interface {
    pub name: Option<String>,
    pub address: String,
    #[serde(flatten)]
    pub link: Option<Link>,
}

/// What sysfs and ethtool say about a known interface.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Link {
    #[schemars(range(min = 1))]
    pub mtu: Option<u64>,
    #[schemars(range(min = 1))]
    pub speed_mbit: Option<u64>,
    /// The sysfs `device/driver` link, else the ethtool driver-info ioctl.
    pub driver: Option<String>,
    pub driver_version: Option<String>,
    pub firmware: Option<String>,
    pub bus_info: Option<String>,
    /// Null when the ethtool ioctls cannot be made. Required when present,
    /// so that an interface without these details reads back without them.
    #[serde(deserialize_with = "Option::deserialize")]
    pub offloads: Option<Offloads>,
    /// Interrupt coalescing (`ethtool -c`); absent where the driver has
    /// none (veth, loopback) and in results of versions before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalescing: Option<Coalescing>,
}

/// Interrupt coalescing as ETHTOOL_GCOALESCE reports it: how long (µs) and
/// how many frames a NIC waits before interrupting, per direction, and
/// whether it adapts them to the load. Changes CPU per packet and latency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Coalescing {
    pub rx_usecs: u32,
    pub rx_frames: u32,
    pub tx_usecs: u32,
    pub tx_frames: u32,
    pub adaptive_rx: bool,
    pub adaptive_tx: bool,
}

/// The ethtool feature flags; null where the driver does not answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Offloads {
    pub tso: Option<bool>,
    pub gso: Option<bool>,
    pub gro: Option<bool>,
    pub lro: Option<bool>,
    pub rx_checksum: Option<bool>,
    pub tx_checksum: Option<bool>,
}

impl Offloads {
    /// Each flag by its name, in the order `ethtool -k` shows them.
    pub fn flags(&self) -> [(&'static str, Option<bool>); 6] {
        [
            ("tso", self.tso),
            ("gso", self.gso),
            ("gro", self.gro),
            ("lro", self.lro),
            ("rx_checksum", self.rx_checksum),
            ("tx_checksum", self.tx_checksum),
        ]
    }
}

/// Who an end of a test is: its kernel's boot id and its process id
/// (equal boot ids mean the same host).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Identity {
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: Option<String>,
    pub pid: Option<i32>,
    /// When that process started (clock ticks after boot, field 22 of
    /// /proc/PID/stat): with the boot id and pid it names one process, so
    /// a pid from another PID namespace (a container) is never taken for an
    /// unrelated process of this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub start_ticks: Option<u64>,
}

impl Identity {
    /// Reads a peer's identity from its disclosure. It is the peer's word:
    /// anything missing or malformed (a boot id that is not a short string
    /// of hex digits and dashes, a pid that is not a positive 32-bit
    /// integer) is absent, never an error.
    pub fn from_disclosure(d: &serde_json::Value) -> Identity {
        let id = &d["identity"];
        let boot_id = id["boot_id"]
            .as_str()
            .filter(|s| {
                !s.is_empty()
                    && s.len() <= 64
                    && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
            })
            .map(str::to_string);
        let pid = id["pid"]
            .as_i64()
            .and_then(|p| i32::try_from(p).ok())
            .filter(|p| *p > 0);
        Identity {
            boot_id,
            pid,
            start_ticks: id["start_ticks"].as_u64(),
        }
    }

    /// Whether `peer` runs on the same kernel as `self`: None unless both
    /// boot ids are known.
    pub fn same_host(&self, peer: &Identity) -> Option<bool> {
        let (a, b) = (self.boot_id.as_ref()?, peer.boot_id.as_ref()?);
        Some(a.eq_ignore_ascii_case(b))
    }
}

/// A typed spec or disclosure as the JSON object a document holds.
pub fn to_json<T: Serialize>(v: &T) -> serde_json::Value {
    // These types are plain data with string keys: serializing them into
    // a Value cannot fail.
    serde_json::to_value(v).unwrap_or_default()
}

/// The word a unit enum serializes to (`temp-file`, `io_uring`): the
/// engines' own enums name themselves in the document this way.
pub fn word<T: Serialize>(v: &T) -> String {
    to_json(v).as_str().unwrap_or_default().to_string()
}

/// `spec` of a result document: the kind's own (a run of iotoll's, or one
/// of another shape that still reads as its kind's: [`Typed`]), an
/// import's, or, for one that does not (too old, none at all), the JSON as
/// it was written. A document is typed by its `kind` when it is read
/// ([`Spec::of`]); whatever its variant, a document read and written again
/// is the same document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, from = "serde_json::Value")]
pub enum Spec {
    Disk(Typed<DiskSpec>),
    Stream(Typed<StreamSpec>),
    Rr(Typed<RrSpec>),
    Udp(Typed<UdpSpec>),
    Crr(Typed<CrrSpec>),
    Import(Box<ImportSpec>),
    Other(serde_json::Value),
}

/// A kind's part as readers get it, and, when the document held it in
/// another shape than this version writes (another version's, one edited
/// by hand: a key more, a null for an absent field), that JSON: readers
/// get the type, as serde reads it (keys it does not know are passed
/// over); the document is written back exactly as it was.
#[derive(Debug, Clone, PartialEq)]
pub struct Typed<T> {
    pub typed: Box<T>,
    pub as_written: Option<serde_json::Value>,
}

/// One this version builds, written as its type writes it.
impl<T> From<T> for Typed<T> {
    fn from(typed: T) -> Typed<T> {
        Typed {
            typed: Box::new(typed),
            as_written: None,
        }
    }
}

impl<T: Serialize> Serialize for Typed<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.as_written {
            Some(v) => v.serialize(s),
            None => self.typed.serialize(s),
        }
    }
}

/// None: written as null (a multi-host test no host ran).
impl Default for Spec {
    fn default() -> Spec {
        Spec::Other(serde_json::Value::Null)
    }
}

/// A spec as written, untyped: read alone, a spec is kept so, for only its
/// document knows its kind ([`Spec::of`] types it).
impl From<serde_json::Value> for Spec {
    fn from(v: serde_json::Value) -> Spec {
        Spec::Other(v)
    }
}

/// Read alone, as written ([`Disclosure::of`] types it).
impl From<serde_json::Value> for Disclosure {
    fn from(v: serde_json::Value) -> Disclosure {
        Disclosure::Other(v)
    }
}

/// `v` read as a `T`, kept as written unless `T` writes back exactly `v`.
fn typed<T: Serialize + serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<Typed<T>> {
    let typed = T::deserialize(v).ok()?;
    let as_written = (to_json(&typed) != *v).then(|| v.clone());
    Some(Typed {
        typed: Box::new(typed),
        as_written,
    })
}

impl Spec {
    /// The spec a document of `kind` holds, typed. (An import's never reads
    /// as a kind's: it has no `target` or `peer`.)
    pub fn of(kind: crate::Kind, v: serde_json::Value) -> Spec {
        use crate::Kind;
        let native = match kind {
            Kind::Disk => typed(&v).map(Spec::Disk),
            Kind::NetStream => typed(&v).map(Spec::Stream),
            Kind::NetRr => typed(&v).map(Spec::Rr),
            Kind::NetUdp => typed(&v).map(Spec::Udp),
            Kind::NetCrr | Kind::NetCc => typed(&v).map(Spec::Crr),
        };
        let import = || typed(&v).filter(|i| i.as_written.is_none());
        (native.or_else(|| import().map(|i| Spec::Import(i.typed)))).unwrap_or(Spec::Other(v))
    }

    pub fn disk(&self) -> Option<&DiskSpec> {
        let Spec::Disk(s) = self else { return None };
        Some(&s.typed)
    }

    pub fn stream(&self) -> Option<&StreamSpec> {
        let Spec::Stream(s) = self else { return None };
        Some(&s.typed)
    }

    pub fn rr(&self) -> Option<&RrSpec> {
        let Spec::Rr(s) = self else { return None };
        Some(&s.typed)
    }

    pub fn crr(&self) -> Option<&CrrSpec> {
        let Spec::Crr(s) = self else { return None };
        Some(&s.typed)
    }

    pub fn udp(&self) -> Option<&UdpSpec> {
        let Spec::Udp(s) = self else { return None };
        Some(&s.typed)
    }

    /// What every network kind's spec holds.
    pub fn net(&self) -> Option<&NetSpec> {
        (self.stream().map(|s| &s.net))
            .or(self.rr().map(|s| &s.net))
            .or(self.udp().map(|s| &s.net))
    }

    /// The JSON a document holds (the parameter tables and test names go
    /// by the specs' keys).
    pub fn to_value(&self) -> serde_json::Value {
        to_json(self)
    }

    /// What it states that readers of every kind ask about. Each key is
    /// read alone: one of another type than [`Stated`]'s is not stated.
    pub fn stated(&self) -> Stated {
        let mut v = self.to_value();
        if let Some(o) = v.as_object_mut() {
            o.retain(|k, x| Stated::deserialize(serde_json::json!({ k.clone(): x })).is_ok());
        }
        Stated::deserialize(v).unwrap_or_default()
    }
}

/// What a spec states that readers of any kind ask about, read alike from
/// a kind's spec, an import's and one of another version: absent where it
/// does not say (or says it in another type). Each field is a key of the
/// spec types (a test checks it).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Stated {
    /// A disk run's built-in access specification.
    #[serde(rename = "spec")]
    pub spec_name: Option<String>,
    pub peer: Option<String>,
    pub ramp_s: Option<f64>,
    pub target: Option<String>,
    pub target_kind: Option<String>,
    pub engine: Option<String>,
    pub direct: Option<bool>,
    /// Written by every native network spec: a network spec without it
    /// is an import's.
    pub auth: Option<bool>,
    pub tls: Option<String>,
    pub verify: Option<bool>,
    pub bs: Option<f64>,
    /// The transfer sizes of a mixed spec's lines.
    pub lines: Option<Vec<StatedLine>>,
    pub msg: Option<f64>,
    pub req: Option<f64>,
    pub resp: Option<f64>,
    pub burst: Option<f64>,
    pub logical_block_size: Option<f64>,
    pub workers: Option<f64>,
    pub offset: Option<f64>,
    pub size: Option<f64>,
    pub qd: Option<f64>,
    pub rate: Option<f64>,
}

/// One line of a [`Stated`] spec.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StatedLine {
    #[serde(default, deserialize_with = "lenient")]
    pub bs: Option<f64>,
}

/// A value of another type than asked is not stated (in a line of a
/// spec, which [`Spec::stated`] reads whole).
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(T::deserialize(v).ok())
}

/// `disclosure` of a result document, typed by its `kind` as [`Spec`] is:
/// a disk run's, a network run's, or one of another shape kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, from = "serde_json::Value")]
pub enum Disclosure {
    Disk(Typed<DiskDisclosure>),
    Net(Typed<NetDisclosure>),
    Other(serde_json::Value),
}

impl Disclosure {
    /// The disclosure a document of `kind` holds, typed.
    pub fn of(kind: crate::Kind, v: serde_json::Value) -> Disclosure {
        let typed = match kind {
            crate::Kind::Disk => typed(&v).map(Disclosure::Disk),
            crate::Kind::NetStream
            | crate::Kind::NetRr
            | crate::Kind::NetUdp
            | crate::Kind::NetCrr
            | crate::Kind::NetCc => typed(&v).map(Disclosure::Net),
        };
        typed.unwrap_or(Disclosure::Other(v))
    }

    pub fn disk(&self) -> Option<&DiskDisclosure> {
        let Disclosure::Disk(d) = self else {
            return None;
        };
        Some(&d.typed)
    }

    pub fn net(&self) -> Option<&NetDisclosure> {
        let Disclosure::Net(d) = self else {
            return None;
        };
        Some(&d.typed)
    }

    /// A network run's endpoint side: the peer's word, in whatever shape
    /// its version (or this document's) wrote it.
    pub fn remote(&self) -> Option<&serde_json::Value> {
        match self {
            Disclosure::Net(d) => Some(&d.typed.remote),
            Disclosure::Other(v) => v.get("remote"),
            Disclosure::Disk(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An interface read back is written as it was: details absent when no
    /// interface held the address, present (nulls too) when one did.
    #[test]
    fn interfaces_round_trip_with_and_without_details() {
        let bare = json!({"name": null, "address": "192.0.2.1"});
        let full = json!({"name": "lo", "address": "127.0.0.1", "mtu": 65536, "speed_mbit": null,
            "driver": null, "driver_version": null, "firmware": null, "bus_info": null, "offloads": null});
        // A NIC with interrupt coalescing (absent above: older results and veth).
        let mut nic = full.clone();
        nic["coalescing"] = json!({"rx_usecs": 50, "rx_frames": 0, "tx_usecs": 50,
            "tx_frames": 0, "adaptive_rx": true, "adaptive_tx": false});
        for v in [bare, full, nic] {
            let i: Interface = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(i.link.is_some(), v.get("mtu").is_some());
            assert_eq!(to_json(&i), v);
        }
    }

    /// Every key `Stated` reads is a field of some spec type.
    #[test]
    fn stated_keys_are_fields_of_the_spec_types() {
        let schemas = [
            schemars::schema_for!(DiskSpec),
            schemars::schema_for!(StreamSpec),
            schemars::schema_for!(RrSpec),
            schemars::schema_for!(UdpSpec),
            schemars::schema_for!(ImportSpec),
        ];
        let full = json!({"spec": "s", "peer": "a", "ramp_s": 1, "target": "t", "target_kind": "k",
            "engine": "e", "direct": true, "auth": true, "tls": "x", "verify": true, "bs": 1,
            "lines": [{"bs": 2}], "msg": 1, "req": 1, "resp": 1, "burst": 1,
            "logical_block_size": 1, "workers": 1, "offset": 1, "size": 1, "qd": 1, "rate": 1});
        let keys: Vec<&String> = full.as_object().unwrap().keys().collect();
        let s = format!("{:?}", Stated::deserialize(&full).unwrap());
        assert!(!s.contains("None"), "every key read: {s}");
        for k in keys {
            assert!(
                (schemas.iter()).any(|sc| sc.as_value()["properties"].get(k).is_some()),
                "{k}"
            );
        }
    }

    /// A spec that does not read as its kind's is kept as written.
    #[test]
    fn specs_of_another_shape_are_kept_as_written() {
        use crate::Kind;
        let partial = json!({"dir": "tx", "msg": 65536, "peer": "h:1"});
        let s = Spec::of(Kind::NetStream, partial.clone());
        assert!(matches!(s, Spec::Other(_)));
        assert_eq!(s.to_value(), partial);
        assert_eq!(s.stated().peer.as_deref(), Some("h:1"));
        // A key of another type is not stated; the others still are.
        let odd = Spec::Other(json!({"peer": 5, "qd": null, "bs": 4096, "lines": [{"bs": "x"}]}));
        let st = odd.stated();
        assert_eq!((st.peer, st.qd, st.bs), (None, None, Some(4096.0)));
        assert!(st.lines.is_some_and(|l| l.len() == 1 && l[0].bs.is_none()));
        let import = json!({"format": "table", "imported_from": "t.csv"});
        assert!(matches!(Spec::of(Kind::Disk, import), Spec::Import(_)));
        assert_eq!(Spec::default().to_value(), serde_json::Value::Null);
    }
}
