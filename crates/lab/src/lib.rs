//! Lab topologies: reproducible networks of "hosts" in Linux network
//! namespaces, each with one or more veth adapters on a Linux bridge (the
//! switch, in a namespace of its own), shaped with tbf or htb, with MTU,
//! offloads and TCP settings per host; everything created is recorded in
//! a write-ahead state file so `down` removes exactly that, also after a
//! crash. No measurement here. Format and behaviour: docs/lab.md.

pub mod cpus;
mod def;
mod state;
mod sys;
mod sysctl;

pub use cpus::cpu_drift;
pub use def::{
    format_rate, parse_rate, HostDef, LabDef, LinkDef, Offloads, OnOff, Shaper, Subnet,
    TcpSettings, BENCH_NET, MAX_HOST_NAME, MAX_LAB_NAME, MAX_LINKS, MAX_MTU, MIN_MTU,
};
pub use state::{state_dir, HostState, LabState, LinkState};
pub use sysctl::host_in_force;

use std::collections::BTreeSet;
use std::fs::File;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// What went wrong with a lab.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// Bad lab name, file, key or value, or `--set`: the user's to fix.
    #[error("{0}")]
    Usage(String),
    /// The lab asks for something this kernel lacks (netem, a congestion control).
    #[error("{0}")]
    Unsupported(String),
    /// `up` of a lab that is up (or was left half up).
    #[error("lab '{name}' is already up{}: run `iotoll lab down {name}` first, or `lab up ... --replace`", if *.complete { "" } else { " (incompletely: its `up` did not finish)" })]
    AlreadyUp { name: String, complete: bool },
    /// `down`/`exec` of a lab that is not up.
    #[error("lab '{name}' is not up (no state file {})", .path.display())]
    NotUp { name: String, path: PathBuf },
    /// No CAP_NET_ADMIN.
    #[error("{0}")]
    Permission(String),
    /// A command or system call failed.
    #[error("{0}")]
    System(String),
}

impl LabError {
    /// The user's to fix on the command line or in the file (exit 2);
    /// otherwise a system failure (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            LabError::Usage(_) | LabError::Unsupported(_) | LabError::AlreadyUp { .. }
        )
    }
}

/// The built-in labs' names, in the order of their table.
pub fn builtin_names() -> Vec<&'static str> {
    def::BUILTINS.iter().map(|(n, _)| *n).collect()
}

/// A built-in lab's TOML text.
pub fn builtin_text(name: &str) -> Option<&'static str> {
    def::BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
}

/// A built-in lab's one-line description.
pub fn builtin_description(name: &str) -> Option<String> {
    let t = builtin_text(name)?;
    def::parse(t, name, &[]).ok()?.description
}

/// A lab by built-in name or TOML file path, with `--set KEY=VALUE`
/// overrides applied, fully validated (kernel features are checked by
/// [`up`] and [`check_kernel`]).
pub fn load(name_or_file: &str, sets: &[String]) -> Result<LabDef, LabError> {
    if let Some(t) = builtin_text(name_or_file) {
        return def::parse(t, name_or_file, sets);
    }
    let looks_like_file = name_or_file.contains('/') || name_or_file.ends_with(".toml");
    match std::fs::read_to_string(name_or_file) {
        Ok(t) => def::parse(&t, name_or_file, sets),
        Err(e) if looks_like_file || e.kind() != std::io::ErrorKind::NotFound => Err(
            LabError::Usage(format!("cannot read lab file {name_or_file}: {e}")),
        ),
        Err(_) => Err(LabError::Usage(format!(
            "'{name_or_file}' is neither a built-in lab ({}) nor a lab file",
            builtin_names().join(", ")
        ))),
    }
}

/// The namespace file of a host: `/run/netns/<netns>`.
pub fn netns_path(state: &HostState) -> Result<PathBuf, LabError> {
    netns_file(&state.netns)
}

/// `/run/netns/<ns>` for a plain name only: an absolute or path-like name
/// (`/proc/1/ns/net`, `../x`) would otherwise be taken as given.
fn netns_file(ns: &str) -> Result<PathBuf, LabError> {
    let plain =
        !ns.is_empty() && ns != "." && ns != ".." && ns.len() <= 255 && !ns.contains(['/', '\0']);
    if !plain {
        return Err(LabError::System(format!(
            "namespace name '{}' is not a plain name under /run/netns: refused",
            ns.escape_debug()
        )));
    }
    Ok(Path::new("/run/netns").join(ns))
}

/// What a lab's own definition names: its namespaces (the switch's and
/// one per host) and, per host, its links' interface and switch-port
/// names. Taken from the effective definition the state file carries;
/// from the recorded hosts' names when that does not parse (a damaged
/// file must still be removable). Lab and host names are checked, so
/// every name here is `iotoll-<lab>-...` and plain.
struct OwnNames {
    namespaces: BTreeSet<String>,
    hosts: Vec<OwnHost>,
}

/// (host, its netns, [(ifname, switch port)] in link order).
type OwnHost = (String, String, Vec<(String, String)>);

fn own_names(st: &LabState) -> Result<OwnNames, LabError> {
    def::check_name("lab", &st.name, MAX_LAB_NAME).map_err(LabError::System)?;
    let hosts: Vec<(String, usize)> =
        match def::parse(&st.definition, &format!("lab '{}' state", st.name), &[]) {
            Ok(d) if d.name == st.name => d
                .hosts
                .iter()
                .map(|h| (h.name.clone(), h.links.len()))
                .collect(),
            Ok(d) => {
                return Err(LabError::System(format!(
                    "the state file of lab '{}' holds the definition of lab '{}': refused",
                    st.name, d.name
                )))
            }
            Err(_) => st
                .hosts
                .iter()
                .filter(|h| {
                    h.name != "sw" && def::check_name("host", &h.name, MAX_HOST_NAME).is_ok()
                })
                .map(|h| (h.name.clone(), h.links.len().min(MAX_LINKS)))
                .collect(),
        };
    let mut namespaces = BTreeSet::from([switch_netns(&st.name)]);
    let hosts: Vec<_> = hosts
        .into_iter()
        .map(|(h, n)| {
            let ns = host_netns(&st.name, &h);
            namespaces.insert(ns.clone());
            let links = (0..n)
                .map(|k| (format!("eth{k}"), format!("{h}-{k}")))
                .collect();
            (h, ns, links)
        })
        .collect();
    Ok(OwnNames { namespaces, hosts })
}

/// Checks that a state file names only what lab `name`'s definition
/// produces: its own name, the switch's and each host's namespace, the
/// hosts' interfaces and switch ports, and recorded namespaces among
/// those. Whatever reads a state file to act on it goes through here.
fn check_state(st: &LabState, name: &str) -> Result<(), LabError> {
    let p = state::path(name);
    let bad = |m: String| {
        LabError::System(format!(
            "state file {} {m}, which lab '{name}' does not produce: refused (was it edited? `iotoll lab down {name}` removes only the lab's own namespaces)",
            p.display()
        ))
    };
    if st.name != name {
        return Err(bad(format!("names lab '{}'", st.name.escape_debug())));
    }
    let own = own_names(st)?;
    if st.switch != switch_netns(name) {
        return Err(bad(format!(
            "names switch namespace '{}'",
            st.switch.escape_debug()
        )));
    }
    if st.hosts.len() != own.hosts.len() {
        return Err(bad(format!("has {} hosts", st.hosts.len())));
    }
    for (h, (oname, ons, olinks)) in st.hosts.iter().zip(&own.hosts) {
        if h.name != *oname || h.netns != *ons {
            return Err(bad(format!(
                "names host '{}' in namespace '{}'",
                h.name.escape_debug(),
                h.netns.escape_debug()
            )));
        }
        if h.links.len() != olinks.len() {
            return Err(bad(format!(
                "gives host '{}' {} links",
                h.name,
                h.links.len()
            )));
        }
        for (l, (ifname, port)) in h.links.iter().zip(olinks) {
            if l.ifname != *ifname || l.switch_port != *port {
                return Err(bad(format!(
                    "names link '{}' (switch port '{}') of host '{}'",
                    l.ifname.escape_debug(),
                    l.switch_port.escape_debug(),
                    h.name
                )));
            }
        }
    }
    if let Some(ns) = st.namespaces.iter().find(|n| !own.namespaces.contains(*n)) {
        return Err(bad(format!("records namespace '{}'", ns.escape_debug())));
    }
    Ok(())
}

/// The namespace name of a lab's host (`iotoll-<lab>-<host>`).
pub fn host_netns(lab: &str, host: &str) -> String {
    format!("iotoll-{lab}-{host}")
}

/// The namespace name of a lab's switch (`iotoll-<lab>-sw`).
pub fn switch_netns(lab: &str) -> String {
    format!("iotoll-{lab}-sw")
}

/// The calling thread inside a host's network namespace; dropping it
/// moves the thread back to where it was. Not `Send`: it belongs to the
/// thread that entered.
pub struct NetnsGuard {
    previous: File,
    /// The host's CPUs and namespace, the thread's CPUs before it took
    /// them, and the host CPUs its CPU windows measured (restored on drop).
    previous_cpus: Option<Entered>,
    _not_send: std::marker::PhantomData<*const ()>,
}

struct Entered {
    cpus: Vec<u32>,
    netns: u64,
    before: Vec<u32>,
    measured: Option<Vec<u32>>,
}

impl Drop for NetnsGuard {
    fn drop(&mut self) {
        if let Some(e) = self.previous_cpus.take() {
            // Best effort: the thread keeps running either way.
            let _ = cpus::pin_thread(&e.before);
            iotoll_probe::leave_host_cpus(e.netns, &e.cpus, e.measured);
        }
        if let Err(e) = sys::setns(&self.previous) {
            // Nothing sane to continue with on this thread.
            panic!("cannot return to the previous network namespace: {e}");
        }
    }
}

/// Moves the calling thread (only) into `host`'s network namespace
/// (setns CLONE_NEWNET); sockets it opens then live there. Children it
/// spawns inherit it (but /sys stays the caller's: use `ip netns exec`
/// for commands that read /sys/class/net). A host with its own CPUs also
/// pins the thread (and so its children and the threads it starts) to
/// them until the guard drops, and CPU windows opened by those threads
/// measure them.
pub fn enter(host: &HostState) -> Result<NetnsGuard, LabError> {
    use std::os::unix::fs::MetadataExt;
    let previous = sys::current_netns()
        .map_err(|e| LabError::System(format!("cannot open this thread's namespace: {e}")))?;
    let p = netns_path(host)?;
    let ns = File::open(&p).map_err(|e| {
        LabError::System(format!(
            "host '{}': cannot open {}: {e} (is the lab up?)",
            host.name,
            p.display()
        ))
    })?;
    let netns = (ns.metadata())
        .map_err(|e| LabError::System(format!("cannot stat {}: {e}", p.display())))?
        .ino();
    let previous_cpus = match &host.cpus {
        Some(c) => {
            let before = cpus::allowed()?;
            cpus::pin_thread(c)?;
            let measured = iotoll_probe::enter_host_cpus(netns, c.clone());
            Some(Entered {
                cpus: c.clone(),
                netns,
                before,
                measured,
            })
        }
        None => None,
    };
    let guard = NetnsGuard {
        previous,
        previous_cpus,
        _not_send: std::marker::PhantomData,
    };
    // On failure the guard's drop unpins the thread (and setns back to
    // where it is is harmless).
    sys::setns(&ns).map_err(|e| LabError::System(format!("setns into {}: {e}", p.display())))?;
    Ok(guard)
}

/// The lab's state if it is up (complete or not), checked to name only
/// what the lab's definition produces. No lab can be up under a name
/// that is not a lab name (a file path, say): `Ok(None)`.
pub fn status(name: &str) -> Result<Option<LabState>, LabError> {
    if def::check_name("lab", name, MAX_LAB_NAME).is_err() {
        return Ok(None);
    }
    let st = state::read(&state::path(name))?;
    if let Some(st) = &st {
        check_state(st, name)?;
    }
    Ok(st)
}

/// Every lab that is up (its state file exists), by name.
pub fn running() -> Result<Vec<LabState>, LabError> {
    state::list()
}

/// An error unless this process has the capability `need` names ("labs
/// need CAP_NET_ADMIN"), so the user reads that instead of `ip`'s error.
fn need(has: bool, need: &str) -> Result<(), LabError> {
    has.then_some(()).ok_or_else(|| {
        LabError::Permission(format!(
            "{need} (run as root): this process does not have it"
        ))
    })
}

/// `lab exec`: this process becomes `command` run in host `host` of lab
/// `name` through `ip netns exec`, which also remounts /sys for the
/// namespace, so the command's exit status (or signal) is the caller's.
/// `warn` hears of a lab whose `up` did not finish. Returns only the
/// reason it could not.
pub fn exec(name: &str, host: &str, command: &[String], warn: &mut dyn FnMut(&str)) -> LabError {
    use std::os::unix::process::CommandExt;
    // setns, which `ip netns exec` does.
    if let Err(e) = need(
        sys::has_sys_admin(),
        "entering a lab host needs CAP_SYS_ADMIN",
    ) {
        return e;
    }
    let st = match status(name) {
        Ok(Some(st)) => st,
        Ok(None) => return LabError::System(format!("lab '{name}' is not up")),
        Err(e) => return e,
    };
    let Some(h) = st.host(host) else {
        let names: Vec<&str> = st.hosts.iter().map(|h| h.name.as_str()).collect();
        return LabError::Usage(format!(
            "lab '{name}' has no host '{host}' (hosts: {})",
            names.join(", ")
        ));
    };
    if !st.complete {
        warn(&format!(
            "lab {name} is incomplete (its `up` did not finish)"
        ));
    }
    if let Err(e) = confine_process(h) {
        return e;
    }
    let mut cmd = std::process::Command::new("ip");
    if let Some(c) = &h.cpus {
        // An iotoll run inside measures the host's CPUs.
        cmd.env(iotoll_probe::HOST_CPUS_ENV, cpus::format_list(c));
    }
    let e = cmd.args(["netns", "exec", &h.netns]).args(command).exec();
    LabError::System(format!("cannot run ip netns exec: {e}"))
}

/// Holds this process (and what it execs) to `host`'s CPUs: its cgroup
/// when it has one, and its affinity.
fn confine_process(host: &HostState) -> Result<(), LabError> {
    let Some(c) = &host.cpus else { return Ok(()) };
    if let Some(dir) = &host.cgroup {
        cpus::join_cgroup(dir)?;
    }
    cpus::pin_thread(c)
}

/// Each host's CPUs for `def` on this machine, checked (online, allowed
/// to this process, no overlap, enough for `auto`) before anything exists.
pub fn cpu_assignment(def: &LabDef) -> Result<cpus::Assignment, LabError> {
    let reqs: Vec<cpus::HostReq> = def
        .hosts
        .iter()
        .map(|h| (h.name.as_str(), &h.cpus, h.shared))
        .collect();
    if reqs.iter().all(|r| *r.1 == cpus::CpuReq::Rest) {
        return Ok(cpus::Assignment {
            cpus: vec![None; reqs.len()],
            notes: Vec::new(),
        });
    }
    let builtin = builtin_text(&def.source).is_some();
    let online = iotoll_probe::affinity::online_cpus();
    cpus::assign_or_share(builtin, &reqs, &online, &cpus::allowed()?)
        .map_err(|e| LabError::Usage(format!("{}: {e}", def.source)))
}

/// Creating or removing a lab's namespaces and links needs CAP_NET_ADMIN.
fn need_net_admin() -> Result<(), LabError> {
    need(sys::has_net_admin(), "labs need CAP_NET_ADMIN")
}

/// Checks what the lab needs from the kernel before anything is created:
/// CAP_NET_ADMIN, the congestion controls, and the qdiscs (tbf, htb, and
/// netem for `delay`/`loss`), each tried in a throwaway namespace.
pub fn check_kernel(def: &LabDef) -> Result<(), LabError> {
    need_net_admin()?;
    let list = |what: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/tcp_{what}_congestion_control"))
            .unwrap_or_default()
    };
    let (avail, allowed) = (list("available"), list("allowed"));
    for h in &def.hosts {
        if let Some(cc) = &h.tcp.congestion_control {
            if !avail.split_whitespace().any(|a| a == cc) {
                return Err(LabError::Unsupported(format!(
                    "host '{}': congestion control '{cc}' is not available in this kernel (available: {})",
                    h.name,
                    avail.trim()
                )));
            }
            // Outside the root namespace the kernel lets a namespace default
            // only to an allowed algorithm (EPERM otherwise).
            if !allowed.split_whitespace().any(|a| a == cc) {
                return Err(LabError::Unsupported(format!(
                    "host '{}': congestion control '{cc}' is available but not allowed in a network namespace (net.ipv4.tcp_allowed_congestion_control: {}); allow it in the root namespace first (sysctl -w net.ipv4.tcp_allowed_congestion_control=\"{} {cc}\") or choose one of those",
                    h.name,
                    allowed.trim(),
                    allowed.trim()
                )));
            }
        }
    }
    sysctl::check_kernel(def)?;
    let mut probes: Vec<(&str, &str)> = Vec::new();
    if def.wants_netem() {
        probes.push(("netem", "netem delay 1ms"));
    }
    for (shaper, probe) in [
        (Shaper::Tbf, "tbf rate 1gbit burst 100k limit 200k"),
        (Shaper::Htb, "htb default 1"),
    ] {
        if def.links().any(|l| l.rate.is_some() && l.shaper == shaper) {
            probes.push((shaper.name(), probe));
        }
    }
    for (kind, ok) in sys::probe_qdiscs(&probes)? {
        if !ok {
            let why = if kind == "netem" {
                "the lab asks for delay or loss, which need the netem qdisc (sch_netem); this kernel has no netem: remove delay/loss from the lab"
            } else {
                "a shaped link needs it"
            };
            return Err(LabError::Unsupported(format!(
                "this kernel lacks the {kind} qdisc: {why}"
            )));
        }
    }
    Ok(())
}

/// Progress of [`up_with_progress`]: hosts done, of how many.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

/// Brings the lab up; see [`up_with_progress`].
pub fn up(def: &LabDef, replace: bool) -> Result<LabState, LabError> {
    up_with_progress(def, replace, &mut |_, _, _| {})
}

/// Brings the lab up: checks (kernel, not already up, no namespace of its
/// names exists, subnet free), then creates the switch and the hosts,
/// recording each namespace in the state file before creating it. A lab
/// already up is refused unless `replace` (then it is taken down first).
/// On a failure, what was created is removed again.
pub fn up_with_progress(
    def: &LabDef,
    replace: bool,
    progress: Progress,
) -> Result<LabState, LabError> {
    check_kernel(def)?;
    let assignment = cpu_assignment(def)?;
    let mut st = {
        let _lock = state::lock()?;
        if let Some(old) = status(&def.name)? {
            if !replace {
                return Err(LabError::AlreadyUp {
                    name: def.name.clone(),
                    complete: old.complete,
                });
            }
            down_locked(&old)?.into_result(&old.name)?;
        }
        let mut names = vec![switch_netns(&def.name)];
        names.extend(def.hosts.iter().map(|h| host_netns(&def.name, &h.name)));
        if let Some(n) = names
            .iter()
            .find(|n| netns_file(n).is_ok_and(|p| p.exists()))
        {
            return Err(LabError::System(format!(
                "namespace {n} exists but is not recorded by a lab in {}: it is not iotoll's to remove (`ip netns del {n}` if it is a leftover)",
                state_dir().display()
            )));
        }
        let others: Vec<(String, Subnet)> = running()?
            .into_iter()
            .filter_map(|s| Some((s.name.clone(), Subnet::parse(&s.subnet).ok()?)))
            .collect();
        let need = def.links().count() as u32;
        let subnet = match def.subnet {
            Some(sn) => {
                if let Some((o, osn)) = others.iter().find(|(_, o)| o.overlaps(&sn)) {
                    return Err(LabError::Usage(format!(
                        "{}: subnet {sn} overlaps lab '{o}' ({osn}), which is up",
                        def.source
                    )));
                }
                sn
            }
            None => allocate(need, &others)?,
        };
        let addrs = assign(def, subnet)?;
        let st = state::plan(def, subnet, &addrs, &assignment);
        state::write(&st)?;
        st
    };
    match build(def, &mut st, progress) {
        Ok(()) => {
            st.complete = true;
            state::write(&st)?;
            Ok(st)
        }
        Err(e) => {
            let _lock = state::lock();
            match down_locked(&st).and_then(|d| d.into_result(&st.name)) {
                Ok(()) => Err(e),
                Err(e2) => Err(LabError::System(format!(
                    "{e}; removing what was created failed too: {e2} (run `iotoll lab down {}`)",
                    def.name
                ))),
            }
        }
    }
}

/// The first /24 (or larger block for big labs) of 198.18.0.0/15 free of
/// the running labs' subnets.
fn allocate(need: u32, others: &[(String, Subnet)]) -> Result<Subnet, LabError> {
    let mut prefix = 24u8;
    while prefix > 16 && (1u32 << (32 - prefix)) - 2 < need {
        prefix -= 1;
    }
    let step = 1u32 << (32 - prefix);
    let mut a = u32::from(BENCH_NET.addr);
    while BENCH_NET.contains(Ipv4Addr::from(a)) {
        let sn = Subnet {
            addr: Ipv4Addr::from(a),
            prefix,
        };
        if !others.iter().any(|(_, o)| o.overlaps(&sn)) {
            return Ok(sn);
        }
        a += step;
    }
    Err(LabError::System(
        "no free subnet left in 198.18.0.0/15 (too many labs up)".into(),
    ))
}

/// Every link's address: the explicit ones, then the subnet's addresses
/// in order for the rest (host by host, link by link).
fn assign(def: &LabDef, subnet: Subnet) -> Result<Vec<Vec<Ipv4Addr>>, LabError> {
    let taken: Vec<Ipv4Addr> = def.links().filter_map(|l| l.address).collect();
    let mut next = subnet.first();
    let mut out = Vec::new();
    for h in &def.hosts {
        let mut v = Vec::new();
        for l in &h.links {
            if let Some(a) = l.address {
                v.push(a);
                continue;
            }
            while taken.contains(&Ipv4Addr::from(next)) {
                next += 1;
            }
            if next >= subnet.broadcast() {
                return Err(LabError::Usage(format!(
                    "{}: subnet {subnet} is too small for the lab's links",
                    def.source
                )));
            }
            v.push(Ipv4Addr::from(next));
            next += 1;
        }
        out.push(v);
    }
    Ok(out)
}

/// What an Ethernet frame costs on the wire beyond what the kernel
/// counts (its 14-byte header): preamble and start delimiter 8, FCS 4,
/// inter-frame gap 12 bytes.
const ETH_OVERHEAD: u64 = 24;

/// The rate tc is given for a link of nominal `rate` and `mtu`: scaled by
/// (mtu + 14) / (mtu + 38), so a full-size frame takes the time it takes on
/// an Ethernet wire (TCP with timestamps at MTU 1500: 1448 / 1538 = 94.1 %
/// of the rate). tc's own `overhead` cannot do this: it is charged once per
/// packet, and a TSO/GSO packet of 44 frames is one packet to the qdisc.
fn tc_rate(rate: u64, mtu: u32) -> u64 {
    let frame = mtu as u64 + 14;
    ((rate as u128 * frame as u128) / (frame + ETH_OVERHEAD) as u128) as u64
}

/// tbf's bucket: 2 ms at the rate, and never less than a 64 KiB GSO
/// packet plus two frames (tbf would segment larger packets).
fn tbf_burst(rate: u64, mtu: u32) -> u64 {
    (rate / 8 / 500).max(65536 + 2 * (mtu as u64 + 14))
}

/// The tc lines that shape `dev` at the link's rate (and add netem).
fn shaping(dev: &str, l: &LinkDef) -> Vec<String> {
    let mut v = Vec::new();
    let mut netem_parent = "root".to_string();
    if let Some(rate) = l.rate {
        let rate = tc_rate(rate, l.mtu);
        let burst = tbf_burst(rate, l.mtu);
        // Queue: the bucket plus 10 ms at the rate.
        let limit = burst + rate / 8 / 100;
        match l.shaper {
            Shaper::Tbf => v.push(format!(
                "qdisc replace dev {dev} root handle 1: tbf rate {rate}bit burst {burst} limit {limit}"
            )),
            Shaper::Htb => {
                let quantum = (l.mtu as u64 + 14).max(rate / 8 / 1000).min(200_000);
                v.push(format!(
                    "qdisc replace dev {dev} root handle 1: htb default 1"
                ));
                v.push(format!(
                    "class add dev {dev} parent 1: classid 1:1 htb rate {rate}bit ceil {rate}bit burst {burst} cburst {burst} quantum {quantum}"
                ));
            }
        }
        netem_parent = "parent 1:1".into();
    }
    if l.delay.is_some() || l.loss.is_some() {
        let mut n = format!("qdisc add dev {dev} {netem_parent} handle 10: netem");
        if let Some(d) = &l.delay {
            n += &format!(" delay {d}");
        }
        if let Some(p) = &l.loss {
            n += &format!(" loss {p}");
        }
        v.push(n);
    }
    v
}

/// Creates the lab recorded in `st` (planned by [`state::plan`]).
fn build(def: &LabDef, st: &mut LabState, progress: Progress) -> Result<(), LabError> {
    let sw = st.switch.clone();
    create_netns(st, &sw)?;
    sys::batch(
        "ip",
        &sw,
        &[
            "link set lo up".into(),
            "link add br0 type bridge stp_state 0 forward_delay 0".into(),
            "link set br0 up".into(),
        ],
    )?;
    let total = def.hosts.len();
    let prefix = Subnet::parse(&st.subnet).map_err(LabError::System)?.prefix;
    // For tests of a crash mid-way (builds with the `test-hooks` feature
    // only): a pause before each host.
    let pause = (cfg!(feature = "test-hooks"))
        .then(|| std::env::var("IOTOLL_LAB_TEST_PAUSE_MS").ok())
        .flatten()
        .and_then(|v| v.parse::<u64>().ok())
        .map(std::time::Duration::from_millis);
    for (i, h) in def.hosts.iter().enumerate() {
        if let Some(p) = pause {
            std::thread::sleep(p);
        }
        let hs = st.hosts[i].clone();
        create_netns(st, &hs.netns)?;
        let multi = h.links.len() > 1;
        let mut ip = vec!["link set lo up".to_string()];
        let mut swl = Vec::new();
        for (k, l) in hs.links.iter().enumerate() {
            ip.push(format!(
                "link add {} mtu {} type veth peer name {} mtu {} netns {sw}",
                l.ifname, l.mtu, l.switch_port, l.mtu
            ));
            ip.push(format!("addr add {}/{prefix} dev {}", l.address, l.ifname));
            ip.push(format!("link set {} up", l.ifname));
            if multi {
                let table = 100 + k;
                ip.push(format!(
                    "rule add from {} table {table} pref {}",
                    l.address,
                    1000 + k
                ));
                ip.push(format!(
                    "route add {} dev {} src {} table {table}",
                    st.subnet, l.ifname, l.address
                ));
            }
            swl.push(format!("link set {} master br0", l.switch_port));
            swl.push(format!("link set {} up", l.switch_port));
        }
        sys::batch("ip", &hs.netns, &ip)?;
        sys::batch("ip", &sw, &swl)?;
        let mut tc_host = Vec::new();
        let mut tc_sw = Vec::new();
        for (l, ls) in h.links.iter().zip(&hs.links) {
            tc_host.extend(shaping(&ls.ifname, l));
            tc_sw.extend(shaping(&ls.switch_port, l));
        }
        sys::batch("tc", &hs.netns, &tc_host)?;
        sys::batch("tc", &sw, &tc_sw)?;
        sys::in_netns(&netns_file(&hs.netns)?, || {
            if multi {
                // Multi-homing: each adapter answers ARP for its own
                // address only and announces it as the source.
                sys::sysctl("net.ipv4.conf.all.arp_ignore", "1")?;
                sys::sysctl("net.ipv4.conf.all.arp_announce", "2")?;
                sys::sysctl("net.ipv4.conf.all.rp_filter", "0")?;
            }
            for (key, v) in h.tcp.given() {
                // The lab file's keys are the sysctls' names (tcp_rmem) or
                // their last part (congestion_control).
                let key = key.strip_prefix("tcp_").unwrap_or(key);
                sys::sysctl(&format!("net.ipv4.tcp_{key}"), v)?;
            }
            // After the lab's own, so the table has the last word.
            for (key, v) in &h.sysctl {
                sys::sysctl(key, v)
                    .map_err(|e| LabError::System(format!("host '{}': {e}", h.name)))?;
            }
            for (l, ls) in h.links.iter().zip(&hs.links) {
                sys::set_offloads(&h.name, &ls.ifname, &l.offloads.list())?;
            }
            Ok(())
        })?;
        cpus::confine_host(st, i)?;
        progress(i + 1, total, &h.name);
    }
    Ok(())
}

/// Records `ns` in the state file (fsynced), then creates it.
fn create_netns(st: &mut LabState, ns: &str) -> Result<(), LabError> {
    st.namespaces.push(ns.to_string());
    state::write(st)?;
    if let Err(e) = sys::run("ip", &["netns", "add", ns]) {
        // Not created by us: never to be removed by `down`.
        st.namespaces.pop();
        state::write(st)?;
        return Err(e);
    }
    Ok(())
}

/// Takes the lab down: removes the namespaces its state file records
/// (with their veths, bridge and qdiscs; processes still running in them
/// are killed) and the state file. Returns what was removed. Only the
/// namespaces the lab's own definition produces are touched: any other
/// name in the state file (edited, or planted) is left alone and makes
/// this an error naming it, after the lab's own are removed.
pub fn down(name: &str) -> Result<LabState, LabError> {
    def::check_name("lab", name, MAX_LAB_NAME).map_err(LabError::Usage)?;
    need_net_admin()?;
    let _lock = state::lock()?;
    let path = state::path(name);
    let st = state::read(&path)?.ok_or_else(|| LabError::NotUp {
        name: name.to_string(),
        path: path.clone(),
    })?;
    if st.name != name {
        return Err(LabError::System(format!(
            "state file {} names lab '{}', not '{name}': refused, nothing removed",
            path.display(),
            st.name.escape_debug()
        )));
    }
    down_locked(&st)?.into_result(name)?;
    Ok(st)
}

/// What [`down_locked`] left alone.
#[must_use]
struct Skipped(Vec<String>);

impl Skipped {
    fn into_result(self, lab: &str) -> Result<(), LabError> {
        if self.0.is_empty() {
            return Ok(());
        }
        Err(LabError::System(format!(
            "lab '{lab}' is down, but its state file ({}) also named {}: left alone, never removed (was the state file edited?)",
            state::path(lab).display(),
            self.0.join(", ")
        )))
    }
}

fn down_locked(st: &LabState) -> Result<Skipped, LabError> {
    let own = own_names(st)?;
    // A namespace another lab records is that lab's, whatever this
    // lab's names would allow (lab `a`'s host `b-sw` is lab `a-b`'s switch).
    let others: BTreeSet<String> = running()
        .unwrap_or_default()
        .into_iter()
        .filter(|o| o.name != st.name)
        .flat_map(|o| o.namespaces)
        .collect();
    let mut skipped = Vec::new();
    let mut errors = Vec::new();
    for ns in st.namespaces.iter().rev() {
        if !own.namespaces.contains(ns) {
            skipped.push(format!(
                "namespace '{}' (not one of the lab's: {})",
                ns.escape_debug(),
                own.namespaces
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            continue;
        }
        if others.contains(ns) {
            skipped.push(format!("namespace '{ns}' (recorded by another lab)"));
            continue;
        }
        if !netns_file(ns)?.exists() {
            continue;
        }
        // Processes left in the namespace (a `lab exec` still running)
        // would keep it alive after its name is gone.
        if let Ok(pids) = sys::run("ip", &["netns", "pids", ns]) {
            for pid in pids
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                // SAFETY: a signal to a process inside our namespace.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        if let Err(e) = sys::run("ip", &["netns", "del", ns]) {
            errors.push(e.to_string());
        }
    }
    for h in &st.hosts {
        let Some(dir) = &h.cgroup else { continue };
        // Only a cgroup the lab's own naming gives (named after one of
        // its namespaces); anything else is left alone. Judged on the
        // directory itself: an edited `netns` beside it must not leave
        // the lab's cgroup behind.
        let named = dir.file_name().and_then(|n| n.to_str());
        let is_cgroup = !dir.exists() || dir.join("cgroup.procs").is_file();
        if !named.is_some_and(|n| own.namespaces.contains(n)) || !is_cgroup {
            skipped.push(format!("cgroup '{}'", dir.display()));
            continue;
        }
        if dir.exists() {
            // Its processes died with the namespace; an empty cgroup
            // is removed with rmdir.
            if let Err(e) = std::fs::remove_dir(dir) {
                errors.push(format!("cgroup {}: {e}", dir.display()));
            }
        }
    }
    if !errors.is_empty() {
        return Err(LabError::System(errors.join("; ")));
    }
    state::remove_file(&state::path(&st.name))?;
    Ok(Skipped(skipped))
}

/// The offloads of a host's link as the kernel has them now (for
/// disclosure): every offload, on or off.
pub fn link_offloads(
    host: &HostState,
    ifname: &str,
) -> Result<Vec<(&'static str, bool)>, LabError> {
    sys::in_netns(&netns_path(host)?, || sys::offloads(ifname))
}

/// Every interface's byte and packet counters in a host's namespace now.
pub fn host_counters(host: &HostState) -> Result<Vec<iotoll_model::IfaceFigures>, LabError> {
    sys::in_netns(&netns_path(host)?, || {
        Ok(iotoll_probe::sysinfo::iface_counters())
    })
}

/// A sysctl of a host's namespace as the kernel has it now (`net.ipv4.tcp_rmem`).
pub fn host_sysctl(host: &HostState, key: &str) -> Result<Option<String>, LabError> {
    sys::in_netns(&netns_path(host)?, || Ok(sys::sysctl_get(key)))
}
