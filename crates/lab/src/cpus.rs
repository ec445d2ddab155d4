//! CPU sets per lab host: the `cpus` lists, the `auto` rule, validation
//! against the CPUs online and allowed to this process, confinement (a
//! cgroup v2 cpuset where the kernel offers one, CPU affinity otherwise)
//! and the RPS/XPS masks of a host's interfaces. Format: docs/lab.md.

use crate::{state, sys, LabError, LabState};
use iotoll_probe::affinity;
use std::path::{Path, PathBuf};

/// What a host asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CpuReq {
    /// No `cpus`: the CPUs no host has, with the other such hosts.
    #[default]
    Rest,
    /// `cpus = "auto"`: a share of the CPUs no explicit set takes.
    Auto,
    /// `cpus = "0-3,6"`.
    List(Vec<u32>),
}

impl CpuReq {
    pub fn parse(s: &str) -> Result<CpuReq, String> {
        match s.trim() {
            "auto" => Ok(CpuReq::Auto),
            // A built-in's `auto` turned off (`--set cpus.a=none`).
            "none" => Ok(CpuReq::Rest),
            t => parse_list(t).map(CpuReq::List),
        }
    }
}

/// A CPU list as the kernel writes them (`0-3,6`), sorted.
pub fn parse_list(s: &str) -> Result<Vec<u32>, String> {
    let mut l = affinity::parse_list(s)
        .map_err(|e| format!("cpus '{s}' is not a CPU list like \"0-3,6\" or \"auto\": {e}"))?;
    l.sort_unstable();
    Ok(l)
}

pub use affinity::format_cpu_list as format_list;

/// The CPUs as a sysfs cpumask (`rps_cpus`, `xps_cpus`): hex, in 32-bit
/// groups separated by commas, most significant first.
pub fn mask_hex(cpus: &[u32]) -> String {
    let groups = cpus.iter().max().map_or(1, |m| *m as usize / 32 + 1);
    let mut words = vec![0u32; groups];
    for c in cpus {
        words[*c as usize / 32] |= 1 << (c % 32);
    }
    let mut s: Vec<String> = words.iter().rev().map(|w| format!("{w:08x}")).collect();
    // The kernel prints the top group without leading zeros but reads both.
    s[0] = format!("{:x}", words[groups - 1]);
    s.join(",")
}

/// A sysfs cpumask read back, as CPUs (`rps_cpus` prints `00000003` or
/// `00000000,00000003` depending on the machine's CPU count).
pub fn parse_mask(s: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for (g, w) in s.trim().rsplit(',').enumerate() {
        let w = u32::from_str_radix(w, 16).map_err(|_| format!("'{s}' is not a CPU mask"))?;
        cpus.extend(
            (0..32)
                .filter(|b| w & (1 << b) != 0)
                .map(|b| g as u32 * 32 + b),
        );
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// Each host's CPUs (`None`: the machine's, shared as without CPU sets)
/// and what a user should hear about the assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub cpus: Vec<Option<Vec<u32>>>,
    pub notes: Vec<String>,
}

/// One host's request: name, what it asks for, `shared = true`.
pub type HostReq<'a> = (&'a str, &'a CpuReq, bool);

/// The rule: explicit lists are checked (online, allowed to this process,
/// no overlap unless either host says `shared = true`); the usable CPUs
/// (online and allowed) no explicit list takes are split among the `auto`
/// hosts in file order, in contiguous blocks, earlier hosts taking the
/// odd CPU (so a lab lists servers and targets first); hosts without
/// `cpus` get what is left, or, when nothing is, every usable CPU (said
/// in a note). Without any host asking, every host is `None`.
pub fn assign(hosts: &[HostReq], online: &[u32], allowed: &[u32]) -> Result<Assignment, String> {
    let usable: Vec<u32> = online
        .iter()
        .copied()
        .filter(|c| allowed.contains(c))
        .collect();
    let mut out = vec![None; hosts.len()];
    let mut notes = Vec::new();
    if hosts.iter().all(|(_, r, _)| **r == CpuReq::Rest) {
        return Ok(Assignment { cpus: out, notes });
    }
    let mut taken: Vec<(u32, &str, bool)> = Vec::new();
    for (i, (name, req, shared)) in hosts.iter().enumerate() {
        let CpuReq::List(l) = req else { continue };
        for c in l {
            if !online.contains(c) {
                return Err(format!(
                    "host '{name}': CPU {c} is not online (online: {})",
                    format_list(online)
                ));
            }
            if !allowed.contains(c) {
                return Err(format!(
                    "host '{name}': CPU {c} is outside this process's allowed CPUs ({})",
                    format_list(allowed)
                ));
            }
            if let Some((_, other, oshared)) = taken.iter().find(|(x, _, _)| x == c) {
                if !(*shared || *oshared) {
                    return Err(format!(
                        "host '{name}': CPU {c} is also host '{other}''s (say shared = true on one of them to allow it)"
                    ));
                }
            }
            taken.push((*c, name, *shared));
        }
        out[i] = Some(l.clone());
    }
    let mut free: Vec<u32> = usable
        .iter()
        .copied()
        .filter(|c| !taken.iter().any(|(x, _, _)| x == c))
        .collect();
    let autos: Vec<usize> = (0..hosts.len())
        .filter(|i| *hosts[*i].1 == CpuReq::Auto)
        .collect();
    let rest_hosts = hosts.iter().filter(|h| *h.1 == CpuReq::Rest).count();
    if !autos.is_empty() {
        if autos.len() > free.len() {
            let names: Vec<&str> = autos.iter().map(|i| hosts[*i].0).collect();
            return Err(format!(
                "{} hosts ask for cpus = \"auto\" ({}) but only {} CPU(s) are free ({})",
                autos.len(),
                names.join(", "),
                free.len(),
                format_list(&free)
            ));
        }
        // Hosts without `cpus` keep one CPU of their own when there are
        // enough, so the auto hosts are not disturbed by them.
        let keep = usize::from(rest_hosts > 0 && free.len() > autos.len());
        let n = free.len() - keep;
        let (each, extra) = (n / autos.len(), n % autos.len());
        let mut at = 0;
        for (k, i) in autos.iter().enumerate() {
            let len = each + usize::from(k < extra);
            out[*i] = Some(free[at..at + len].to_vec());
            at += len;
        }
        free.drain(..at);
    }
    if rest_hosts > 0 {
        let rest = if free.is_empty() {
            notes.push(format!(
                "no CPU is left for the hosts without cpus: they share all of {}",
                format_list(&usable)
            ));
            usable.clone()
        } else {
            free
        };
        for (i, h) in hosts.iter().enumerate() {
            if *h.1 == CpuReq::Rest {
                out[i] = Some(rest.clone());
            }
        }
    }
    Ok(Assignment { cpus: out, notes })
}

/// [`assign`], except that a built-in lab asking for `auto` only runs
/// shared on a machine with too few CPUs, as before CPU sets, and says so.
pub fn assign_or_share(
    builtin: bool,
    hosts: &[HostReq],
    online: &[u32],
    allowed: &[u32],
) -> Result<Assignment, String> {
    match assign(hosts, online, allowed) {
        Err(e) if builtin && !hosts.iter().any(|h| matches!(h.1, CpuReq::List(_))) => {
            Ok(Assignment {
                cpus: vec![None; hosts.len()],
                notes: vec![format!("CPUs shared by every host: {e}")],
            })
        }
        r => r,
    }
}

/// The CPUs this thread may run on.
pub fn allowed() -> Result<Vec<u32>, LabError> {
    affinity::allowed_cpus()
        .ok_or_else(|| LabError::System("sched_getaffinity: the kernel will not say".into()))
}

/// Confines the calling thread (and what it spawns from now on) to `cpus`.
pub fn pin_thread(cpus: &[u32]) -> Result<(), LabError> {
    affinity::pin_current_thread_to(cpus).map_err(|e| {
        LabError::System(format!(
            "sched_setaffinity to CPUs {}: {e}",
            format_list(cpus)
        ))
    })
}

/// How a lab's hosts are held to their CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// A cpuset cgroup per host under this cgroup v2 directory.
    CgroupV2(PathBuf),
    /// CPU affinity, inherited by children; why the cgroup could not be used.
    Affinity(String),
}

impl Confinement {
    /// Its name in the state file and a run's disclosure.
    pub fn name(&self) -> &'static str {
        match self {
            Confinement::CgroupV2(_) => "cgroup-v2-cpuset",
            Confinement::Affinity(_) => "affinity",
        }
    }
}

/// The cgroup v2 mount point from `/proc/mounts` text.
fn cgroup2_mount(mounts: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == "cgroup2").then(|| PathBuf::from(f[1]))
    })
}

/// The decision, from what the files say: a cpuset cgroup when a cgroup2
/// mount lists `cpuset` in its root's `cgroup.controllers`.
pub fn choose(mounts: &str, controllers: impl Fn(&Path) -> Option<String>) -> Confinement {
    let Some(root) = cgroup2_mount(mounts) else {
        return Confinement::Affinity("no cgroup v2 mount".into());
    };
    match controllers(&root.join("cgroup.controllers")) {
        Some(c) if c.split_whitespace().any(|x| x == "cpuset") => Confinement::CgroupV2(root),
        _ => Confinement::Affinity(format!(
            "the cgroup v2 hierarchy at {} has no cpuset controller",
            root.display()
        )),
    }
}

/// The writes that make a host's cpuset cgroup (`ROOT/NETNS`), in order:
/// the controller enabled for the root's children, then the host's CPUs.
pub fn cgroup_writes(root: &Path, netns: &str, cpus: &[u32]) -> Vec<(PathBuf, String)> {
    vec![
        (root.join("cgroup.subtree_control"), "+cpuset".into()),
        (root.join(netns).join("cpuset.cpus"), format_list(cpus)),
    ]
}

/// Creates a host's cpuset cgroup.
pub fn make_cgroup(root: &Path, netns: &str, cpus: &[u32]) -> Result<PathBuf, LabError> {
    let dir = root.join(netns);
    let fail = |p: &Path, e: std::io::Error| LabError::System(format!("{}: {e}", p.display()));
    std::fs::create_dir(&dir).map_err(|e| fail(&dir, e))?;
    for (p, v) in cgroup_writes(root, netns, cpus) {
        std::fs::write(&p, v).map_err(|e| fail(&p, e))?;
    }
    Ok(dir)
}

/// Moves this process into a host's cgroup (for `lab exec`).
pub fn join_cgroup(dir: &Path) -> Result<(), LabError> {
    let p = dir.join("cgroup.procs");
    std::fs::write(&p, std::process::id().to_string())
        .map_err(|e| LabError::System(format!("{}: {e}", p.display())))
}

/// The RPS and XPS mask files of `ifname` as seen inside its namespace.
pub fn queue_files(ifname: &str) -> String {
    format!(
        "/sys/class/net/{ifname}/queues/rx-*/rps_cpus /sys/class/net/{ifname}/queues/tx-*/xps_cpus"
    )
}

/// Host `i`'s CPU set made real: its cgroup (recorded, then created)
/// where cgroup v2 has cpuset, and the RPS/XPS masks of its interfaces
/// (written inside its namespace, where /sys shows its interfaces).
pub(crate) fn confine_host(st: &mut LabState, i: usize) -> Result<(), LabError> {
    let Some(c) = st.hosts[i].cpus.clone() else {
        return Ok(());
    };
    // This machine's confinement.
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let conf = choose(&mounts, |p| std::fs::read_to_string(p).ok());
    st.hosts[i].confinement = Some(conf.name().to_string());
    if let Confinement::CgroupV2(root) = &conf {
        st.hosts[i].cgroup = Some(root.join(&st.hosts[i].netns));
        state::write(st)?;
        make_cgroup(root, &st.hosts[i].netns, &c)?;
    }
    let mask = mask_hex(&c);
    let files: Vec<String> = st.hosts[i]
        .links
        .iter()
        .map(|l| queue_files(&l.ifname))
        .collect();
    let script = format!(
        "for f in {}; do echo {mask} > $f && echo $f || exit 1; done",
        files.join(" ")
    );
    let out = sys::run(
        "ip",
        &["netns", "exec", &st.hosts[i].netns, "sh", "-c", &script],
    )?;
    st.hosts[i].queue_masks = out.lines().map(|f| (f.to_string(), mask.clone())).collect();
    state::write(st)
}

/// What drifted of a lab's CPU sets since `up`: each RPS/XPS mask that
/// no longer is the recorded one, each cgroup whose CPUs changed or
/// that is gone. Empty: as recorded.
pub fn cpu_drift(st: &LabState) -> Vec<String> {
    let mut out = Vec::new();
    for h in st.hosts.iter().filter(|h| h.cpus.is_some()) {
        let want = h.cpus.clone().unwrap_or_default();
        if let Some(dir) = &h.cgroup {
            let p = dir.join("cpuset.cpus");
            match std::fs::read_to_string(&p).map(|t| parse_list(t.trim())) {
                Ok(Ok(got)) if got == want => {}
                Ok(Ok(got)) => out.push(format!(
                    "host '{}': cgroup {} has CPUs {}, not {}",
                    h.name,
                    dir.display(),
                    format_list(&got),
                    format_list(&want)
                )),
                _ => out.push(format!(
                    "host '{}': cgroup {} is gone",
                    h.name,
                    dir.display()
                )),
            }
        }
        if h.queue_masks.is_empty() {
            continue;
        }
        let files: Vec<&str> = h.queue_masks.iter().map(|(f, _)| f.as_str()).collect();
        let got = sys::run(
            "ip",
            &[&["netns", "exec", &h.netns, "cat"][..], &files].concat(),
        );
        let got = match got {
            Ok(g) => g,
            Err(e) => {
                out.push(format!(
                    "host '{}': cannot read its RPS/XPS masks: {e}",
                    h.name
                ));
                continue;
            }
        };
        for ((f, m), g) in h.queue_masks.iter().zip(got.lines()) {
            let (want, now) = (parse_mask(m), parse_mask(g));
            if want.is_err() || want != now {
                out.push(format!(
                    "host '{}': {f} is {} (the lab set {m})",
                    h.name,
                    g.trim()
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> Vec<u32> {
        parse_list(s).unwrap()
    }

    #[test]
    fn lists_parse_and_print() {
        assert_eq!(l("0-3,6"), vec![0, 1, 2, 3, 6]);
        assert_eq!(l(" 5, 1-2 "), vec![1, 2, 5]);
        assert_eq!(format_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        for bad in ["", "a", "3-1", "1,,2", "-1", "5000", "1,1"] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
        assert_eq!(CpuReq::parse("auto").unwrap(), CpuReq::Auto);
        assert_eq!(CpuReq::parse("none").unwrap(), CpuReq::Rest);
    }

    #[test]
    fn masks() {
        assert_eq!(mask_hex(&[0]), "1");
        assert_eq!(mask_hex(&[0, 1]), "3");
        assert_eq!(mask_hex(&[1, 33]), "2,00000002");
        assert_eq!(parse_mask("00000002").unwrap(), vec![1]);
        assert_eq!(parse_mask("2,00000002").unwrap(), vec![1, 33]);
        assert!(parse_mask("zz").is_err());
    }

    #[test]
    fn assignment_rule() {
        let all: Vec<u32> = (0..8).collect();
        let (auto, rest) = (CpuReq::Auto, CpuReq::Rest);
        // Two auto hosts and a host without cpus: the rest host keeps one.
        let hosts = [
            ("s", &auto, false),
            ("t", &auto, false),
            ("c", &rest, false),
        ];
        let a = assign(&hosts, &all, &all).unwrap();
        assert_eq!(a.cpus[0], Some(l("0-3")));
        assert_eq!(a.cpus[1], Some(l("4-6")));
        assert_eq!(a.cpus[2], Some(l("7")));
        // Explicit lists first; auto splits what they leave.
        let x = CpuReq::List(l("0-1"));
        let a = assign(&[("a", &auto, false), ("b", &x, false)], &all, &all).unwrap();
        assert_eq!(a.cpus, vec![Some(l("2-7")), Some(l("0-1"))]);
        // No host asks: nothing changes.
        let a = assign(&[("a", &rest, false)], &all, &all).unwrap();
        assert_eq!(a.cpus, vec![None]);
        // Hosts without cpus when nothing is left share all, and hear so.
        let two = l("0-1");
        let hosts = [
            ("a", &auto, false),
            ("b", &auto, false),
            ("c", &rest, false),
        ];
        let a = assign(&hosts, &two, &two).unwrap();
        assert_eq!(a.cpus[2], Some(two.clone()));
        assert!(a.notes[0].contains("share all"), "{:?}", a.notes);
    }

    #[test]
    fn assignment_refusals_name_host_and_cpu() {
        let two = l("0-1");
        let (c0, c1, c5) = (
            CpuReq::List(l("0")),
            CpuReq::List(l("0-1")),
            CpuReq::List(l("5")),
        );
        let e = assign(&[("a", &c0, false), ("b", &c1, false)], &two, &two).unwrap_err();
        assert!(
            e.contains("host 'b'") && e.contains("CPU 0") && e.contains("'a'"),
            "{e}"
        );
        assert!(assign(&[("a", &c0, false), ("b", &c1, true)], &two, &two).is_ok());
        let e = assign(&[("a", &c5, false)], &two, &two).unwrap_err();
        assert!(
            e.contains("host 'a'") && e.contains("CPU 5") && e.contains("not online"),
            "{e}"
        );
        let e = assign(&[("a", &c1, false)], &two, &l("0")).unwrap_err();
        assert!(e.contains("CPU 1") && e.contains("allowed"), "{e}");
        let auto = CpuReq::Auto;
        let hosts = [
            ("a", &auto, false),
            ("b", &auto, false),
            ("c", &auto, false),
        ];
        let e = assign(&hosts, &two, &two).unwrap_err();
        assert!(e.contains("3 hosts") && e.contains("a, b, c"), "{e}");
    }

    #[test]
    fn builtins_fall_back_to_shared_on_too_few_cpus() {
        let (auto, one) = (CpuReq::Auto, l("0"));
        let hosts = [("a", &auto, false), ("b", &auto, false)];
        let a = assign_or_share(true, &hosts, &one, &one).unwrap();
        assert_eq!(a.cpus, vec![None, None]);
        assert!(a.notes[0].contains("shared by every host"), "{:?}", a.notes);
        // A lab file (or an explicit set) is refused instead.
        assert!(assign_or_share(false, &hosts, &one, &one).is_err());
        let x = CpuReq::List(l("0"));
        let hosts = [("a", &auto, false), ("b", &x, false)];
        assert!(assign_or_share(true, &hosts, &one, &one).is_err());
    }

    #[test]
    fn cgroup_decision() {
        let m =
            "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";
        let root = PathBuf::from("/sys/fs/cgroup/unified");
        let with = choose(m, |p| {
            assert_eq!(p, root.join("cgroup.controllers"));
            Some("cpu io cpuset memory".into())
        });
        assert_eq!(with, Confinement::CgroupV2(root.clone()));
        let without = choose(m, |_| Some("".into()));
        assert_eq!(without.name(), "affinity");
        assert_eq!(choose("", |_| None).name(), "affinity");
        let w = cgroup_writes(&root, "iotoll-p-a", &[0, 1]);
        assert_eq!(
            w[0],
            (root.join("cgroup.subtree_control"), "+cpuset".into())
        );
        assert_eq!(w[1], (root.join("iotoll-p-a/cpuset.cpus"), "0-1".into()));
    }

    #[test]
    fn this_process() {
        let on = affinity::online_cpus();
        let al = allowed().unwrap();
        assert!(!on.is_empty() && al.iter().all(|c| on.contains(c)));
    }
}
