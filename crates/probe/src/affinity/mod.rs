//! Where a disk run's work happens: the CPUs its workers may be pinned to
//! (Iometer's topology of workers on cores), and the devices and interrupt
//! lines behind its targets. A worker pinned to a core its device's
//! interrupts also land on measures a different machine from one pinned
//! away from them, so the disclosure records both.
//!
//! CPU masks are handled through the raw `sched_*affinity` calls with a
//! mask of [`MASK_BITS`] bits rather than `cpu_set_t`: glibc's set stops at
//! CPU 1023, and `--cpus` accepts CPUs up to [`MAX_CPU`].

use crate::sysinfo::{dir_names, read_trim};
use iotoll_model::spec::{DiskDisclosure, IrqAffinity};
use std::collections::BTreeSet;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The largest CPU number `--cpus` accepts. Larger numbers are far more
/// likely a typo than a machine, and the affinity mask must hold them.
pub const MAX_CPU: u32 = 4095;

/// Bits in the affinity masks passed to the kernel: twice [`MAX_CPU`]'s
/// range, so `sched_getaffinity` still succeeds on a kernel built for 8192
/// CPUs (it refuses a mask shorter than its own).
const MASK_BITS: usize = 8192;

/// How deep stacked devices (dm on md on a loop file on a disk) are
/// followed: deeper is a loop, not a real stack.
const MAX_DEPTH: usize = 4;

// ---------------------------------------------------------------- cpu lists

/// A `--cpus` value in the kernel's cpu-list syntax (`0-3,8,10-11`), in the
/// order written, since the order is the order workers are given CPUs.
/// A range may carry a stride (`0-7:2` as taskset reads it: 0,2,4,6) or the
/// kernel's group pattern (`0-7:1/4`: the first 1 of every 4, i.e. 0,4).
/// A CPU listed twice is an error rather than silently two workers on one
/// core.
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>, String> {
    parse_list(s).map_err(|e| format!("--cpus '{s}': {e}"))
}

/// [`parse_cpu_list`] without the `--cpus` context, for lists the kernel
/// writes and a lab host's `cpus`.
pub fn parse_list(s: &str) -> Result<Vec<u32>, String> {
    if s.trim().is_empty() {
        return Err("the list is empty".into());
    }
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for item in s.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err("empty item (two commas in a row, or one at an end)".into());
        }
        for cpu in parse_item(item)? {
            if !seen.insert(cpu) {
                return Err(format!("CPU {cpu} is listed twice"));
            }
            out.push(cpu);
        }
    }
    Ok(out)
}

/// One comma-separated item: `N`, `A-B`, `A-B:S` or `A-B:U/G`.
fn parse_item(item: &str) -> Result<Vec<u32>, String> {
    let (range, pattern) = match item.split_once(':') {
        Some((r, p)) => (r, Some(p)),
        None => (item, None),
    };
    let (lo, hi) = match range.split_once('-') {
        Some((a, b)) => (cpu_number(a, item)?, cpu_number(b, item)?),
        None if pattern.is_some() => {
            return Err(format!("'{item}': a stride needs a range, as in 0-7:2"))
        }
        None => {
            let n = cpu_number(range, item)?;
            (n, n)
        }
    };
    if lo > hi {
        return Err(format!("range {lo}-{hi} is reversed"));
    }
    let count = |t: &str| -> Result<u32, String> {
        match t.trim().parse::<u32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "'{item}': '{t}' after ':' must be a count of 1 or more"
            )),
        }
    };
    // Every `group` CPUs from `lo`, the first `used` of them.
    let (used, group) = match pattern {
        None => (1, 1),
        Some(p) => match p.split_once('/') {
            None => (1, count(p)?),
            Some((u, g)) => {
                let (u, g) = (count(u)?, count(g)?);
                if u > g {
                    return Err(format!(
                        "'{item}': uses {u} CPUs of every {g}, more than a group holds"
                    ));
                }
                (u, g)
            }
        },
    };
    Ok((lo..=hi).filter(|c| (c - lo) % group < used).collect())
}

/// One CPU number of `item`, bounded by [`MAX_CPU`].
fn cpu_number(t: &str, item: &str) -> Result<u32, String> {
    let t = t.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{item}' is not a CPU number or range"));
    }
    match t.parse::<u32>() {
        Ok(n) if n <= MAX_CPU => Ok(n),
        _ => Err(format!(
            "CPU {t} is beyond the largest supported, {MAX_CPU}"
        )),
    }
}

/// A CPU list as the kernel writes one (`0-3,8`), for messages and the
/// human table. Runs are compressed in the order given, not sorted, so
/// that it reads back through [`parse_cpu_list`] as the same list.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let runs = cpus.chunk_by(|a, b| a.checked_add(1) == Some(*b));
    let parts: Vec<String> = runs
        .map(|run| match run {
            [first, .., last] => format!("{first}-{last}"),
            // Runs are never empty: this one is a single CPU.
            one => one[0].to_string(),
        })
        .collect();
    parts.join(",")
}

// ---------------------------------------------------------------- affinity

/// An affinity mask wider than `cpu_set_t` (see the module comment).
struct Mask([libc::c_ulong; MASK_BITS / libc::c_ulong::BITS as usize]);

impl Mask {
    const WORD: usize = libc::c_ulong::BITS as usize;

    fn empty() -> Self {
        Mask([0; MASK_BITS / Self::WORD])
    }

    fn set(&mut self, cpu: usize) {
        self.0[cpu / Self::WORD] |= 1 << (cpu % Self::WORD);
    }

    fn cpus(&self) -> Vec<u32> {
        (0..MASK_BITS)
            .filter(|c| self.0[c / Self::WORD] & (1 << (c % Self::WORD)) != 0)
            .filter_map(|c| u32::try_from(c).ok())
            .collect()
    }
}

/// The CPUs this process may run on (taskset, cgroup cpusets): pinning to
/// any other fails even when it is online. None if the kernel will not say.
pub fn allowed_cpus() -> Option<Vec<u32>> {
    let mut m = Mask::empty();
    // SAFETY: the kernel writes at most `size_of::<Mask>()` bytes into `m`;
    // glibc passes the size through unchanged.
    let r = unsafe {
        libc::sched_getaffinity(
            0,
            std::mem::size_of::<Mask>(),
            (&mut m as *mut Mask).cast::<libc::cpu_set_t>(),
        )
    };
    (r == 0).then(|| m.cpus())
}

/// The CPUs that are online, in ascending order: what `--cpus` is checked
/// against and what the table shows. Falls back to the process's allowed
/// set, then to `0..available_parallelism`, where /sys is not mounted.
pub fn online_cpus() -> Vec<u32> {
    let sysfs = read_trim("/sys/devices/system/cpu/online").and_then(|s| parse_list(&s).ok());
    if let Some(cpus) = sysfs.filter(|c| !c.is_empty()) {
        return cpus;
    }
    if let Some(cpus) = allowed_cpus().filter(|c| !c.is_empty()) {
        return cpus;
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..u32::try_from(n).unwrap_or(1)).collect()
}

/// Refuses `--cpus` before a run starts rather than failing one worker's
/// pin midway: every CPU must be online and allowed to this process.
pub fn check_cpus(cpus: &[u32]) -> Result<(), String> {
    check_against(cpus, &online_cpus(), allowed_cpus().as_deref())
}

/// [`check_cpus`] over given sets; `allowed` None skips that check (the
/// kernel would not say, and the pin itself will then report).
fn check_against(cpus: &[u32], online: &[u32], allowed: Option<&[u32]>) -> Result<(), String> {
    let these = |v: &[u32]| match v {
        [c] => format!("CPU {c} is"),
        _ => format!("CPUs {} are", format_cpu_list(v)),
    };
    let mut errs = Vec::new();
    let offline: Vec<u32> = cpus
        .iter()
        .copied()
        .filter(|c| !online.contains(c))
        .collect();
    if !offline.is_empty() {
        errs.push(format!(
            "{} not online (online: {})",
            these(&offline),
            format_cpu_list(online)
        ));
    }
    if let Some(allowed) = allowed {
        let refused: Vec<u32> = cpus
            .iter()
            .copied()
            .filter(|c| online.contains(c) && !allowed.contains(c))
            .collect();
        if !refused.is_empty() {
            errs.push(format!(
                "{} not allowed to this process (allowed: {}; taskset or a cgroup cpuset restricts it)",
                these(&refused),
                format_cpu_list(allowed)
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!("--cpus: {}", errs.join("; ")))
    }
}

/// Pins the calling thread (not the process: other workers keep their own
/// CPUs) to `cpu`. The kernel moves the thread before this returns.
pub fn pin_current_thread(cpu: u32) -> std::io::Result<()> {
    pin_current_thread_to(&[cpu])
}

/// Pins the calling thread to the CPUs `cpus` (a lab host's); threads
/// and processes it starts afterwards inherit them.
pub fn pin_current_thread_to(cpus: &[u32]) -> std::io::Result<()> {
    let mut m = Mask::empty();
    for &cpu in cpus {
        let bit = usize::try_from(cpu)
            .ok()
            .filter(|c| *c < MASK_BITS)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("CPU {cpu} is beyond the largest supported, {MAX_CPU}"),
                )
            })?;
        m.set(bit);
    }
    // SAFETY: the kernel reads `size_of::<Mask>()` bytes from `m`; tid 0
    // is the calling thread.
    let r = unsafe {
        libc::sched_setaffinity(
            0,
            std::mem::size_of::<Mask>(),
            (&m as *const Mask).cast::<libc::cpu_set_t>(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The CPU the calling thread runs on now: proof a pin took, and the
/// per-worker CPU the report shows. None where the kernel cannot say.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments; returns -1 on failure.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}

// ---------------------------------------------------------- /proc/interrupts

/// One numbered line of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IrqRow {
    irq: u32,
    /// The handler name(s), `, `-separated when the line is shared.
    name: String,
    per_cpu: Vec<u64>,
}

/// The numbered lines of `/proc/interrupts`. The header's `CPUn` columns
/// say how many counts each line has; what follows them is the chip, the
/// hardware IRQ (and on some architectures its trigger), then the handler
/// names. Architecture lines (NMI, LOC, ...) belong to no device and are
/// skipped.
fn parse_interrupts(text: &str) -> Vec<IrqRow> {
    let mut lines = text.lines();
    let ncpu = lines.next().map_or(0, |h| {
        h.split_whitespace()
            .filter(|w| w.starts_with("CPU"))
            .count()
    });
    lines
        .filter_map(|l| {
            let (num, rest) = l.split_once(':')?;
            let irq = num.trim().parse::<u32>().ok()?;
            let mut words = rest.split_whitespace().peekable();
            // The leading numbers, one per CPU at most.
            let count = |w: &&str| w.parse::<u64>().is_ok();
            let per_cpu: Vec<u64> = std::iter::from_fn(|| words.next_if(count))
                .take(ncpu)
                .filter_map(|w| w.parse().ok())
                .collect();
            let _chip = words.next();
            let tail: Vec<&str> = words.skip_while(|w| is_hwirq_word(w)).collect();
            Some(IrqRow {
                irq,
                name: tail.join(" "),
                per_cpu,
            })
        })
        .collect()
}

/// A word between the chip and the handler name: the hardware IRQ number,
/// alone (`27`) or with its flow (`524288-edge`), the trigger (`Level`,
/// `Edge` on ARM), or Xen's `-virq`/`-event`.
fn is_hwirq_word(w: &str) -> bool {
    let digits = w.split('-').next().unwrap_or("");
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        || w.starts_with('-')
        || matches!(w, "Level" | "Edge" | "level" | "edge")
}

/// Whether a handler name belongs to `key`, a device-level name (`nvme0`,
/// `virtio1`, `eth0`): `key` must stand alone in it, bounded by anything
/// but a letter or digit, except that NVMe's queue suffix `qN` follows
/// directly (`nvme0q3`). So `virtio1` does not claim `virtio10-req.0` and
/// `eth1` does not claim `eth10-TxRx-0`.
fn handler_matches(name: &str, key: &str) -> bool {
    if key.is_empty() {
        return false;
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    name.match_indices(key).any(|(i, _)| {
        let before = name[..i].chars().next_back();
        let after = &name[i + key.len()..];
        let nvme_queue = after
            .strip_prefix('q')
            .is_some_and(|q| q.starts_with(|c: char| c.is_ascii_digit()));
        !alnum(before) && (!alnum(after.chars().next()) || nvme_queue)
    })
}

/// What identifies the interrupt lines of the devices involved.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Keys {
    /// Device-level names handler names carry (`nvme0`, `virtio1`, `eth0`).
    names: Vec<String>,
    /// IRQ numbers the PCI functions own (`msi_irqs`), for drivers whose
    /// handler names carry no device name (ahci, mlx5).
    irqs: BTreeSet<u32>,
}

impl Keys {
    fn add_name(&mut self, n: String) {
        if !self.names.contains(&n) {
            self.names.push(n);
        }
    }
}

fn select_irqs(rows: Vec<IrqRow>, keys: &Keys) -> Vec<IrqRow> {
    rows.into_iter()
        .filter(|r| {
            keys.irqs.contains(&r.irq) || keys.names.iter().any(|k| handler_matches(&r.name, k))
        })
        .collect()
}

// ------------------------------------------------------------------- sysfs

/// The driver-level names and the PCI function in a canonical sysfs device
/// path (`/sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda`): a
/// virtio disk's interrupts are `virtio1-*`, an NVMe namespace's are its
/// controller's `nvme0qN`, whatever the block device is called.
fn path_keys(path: &str) -> (Vec<String>, Option<String>) {
    let numbered = |c: &str, prefix: &str| {
        c.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let names = comps
        .iter()
        .filter(|c| numbered(c, "virtio") || numbered(c, "nvme"))
        .map(|c| c.to_string())
        .collect();
    let pci = comps
        .iter()
        .rev()
        .find(|c| is_pci_address(c))
        .map(|c| c.to_string());
    (names, pci)
}

/// `0000:00:02.0`: domain, bus, device, function.
fn is_pci_address(c: &str) -> bool {
    let b = c.as_bytes();
    b.len() == 12
        && b.iter().enumerate().all(|(i, x)| match i {
            4 | 7 => *x == b':',
            10 => *x == b'.',
            _ => x.is_ascii_hexdigit(),
        })
}

/// The controller of an NVMe namespace by name (`nvme0n1` → `nvme0`,
/// `nvme0c1n1` → `nvme0`), for multipath namespaces whose sysfs path is
/// under the subsystem and names no controller.
fn nvme_controller(disk: &str) -> Option<String> {
    let rest = disk.strip_prefix("nvme")?;
    let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let after = &rest[n.len()..];
    (!n.is_empty() && (after.starts_with('n') || after.starts_with('c')))
        .then(|| format!("nvme{n}"))
}

/// The filesystem type and source of the mount of device `maj:min` in
/// `/proc/self/mountinfo`, for filesystems whose `st_dev` is anonymous
/// (btrfs reports `0:N` while its source is a real device).
fn mount_of(mountinfo: &str, maj: u32, min: u32) -> Option<(String, String)> {
    let dev = format!("{maj}:{min}");
    mountinfo.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        (pre.split_whitespace().nth(2)? == dev).then_some(())?;
        let mut p = post.split_whitespace();
        Some((p.next()?.to_string(), p.next()?.to_string()))
    })
}

/// What a disclosure is built from: a sysfs root (a fake one in tests),
/// and what was found so far.
struct Finder<'a> {
    sys: &'a Path,
    devices: Vec<String>,
    keys: Keys,
    notes: Vec<String>,
}

impl Finder<'_> {
    fn add_device(&mut self, d: &str) {
        if !self.devices.iter().any(|x| x == d) {
            self.devices.push(d.to_string());
        }
    }

    /// The PCI function's MSI lines, or its legacy line when it uses none.
    fn add_pci(&mut self, pci: &str) {
        let dir = self.sys.join("bus/pci/devices").join(pci);
        let msi: Vec<u32> = dir_names(dir.join("msi_irqs"))
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        if msi.is_empty() {
            let legacy = read_trim(dir.join("irq")).and_then(|s| s.parse::<u32>().ok());
            self.keys.irqs.extend(legacy.filter(|i| *i > 0));
        }
        self.keys.irqs.extend(msi);
    }

    /// A target path: the device it is (block device) or lives on (file).
    fn target(&mut self, path: &Path, depth: usize) {
        let shown = path.display();
        // A target the run will create lives on its directory's device.
        let mut at = path;
        let meta = loop {
            match std::fs::metadata(at) {
                Ok(m) => break m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && at != Path::new(".") => {
                    at = match at.parent() {
                        Some(p) if !p.as_os_str().is_empty() => p,
                        _ => Path::new("."),
                    }
                }
                Err(e) => {
                    self.notes.push(format!("cannot stat {shown}: {e}"));
                    return;
                }
            }
        };
        if at != path {
            self.notes.push(format!(
                "{shown} does not exist yet: the device of {} is given",
                at.display()
            ));
        }
        let ft = meta.file_type();
        if ft.is_char_device() {
            self.notes
                .push(format!("{shown} is a character device, not a block device"));
            return;
        }
        let dev = if ft.is_block_device() {
            meta.rdev()
        } else {
            meta.dev()
        };
        let (mut maj, mut min) = (libc::major(dev), libc::minor(dev));
        if maj == 0 {
            let mount = std::fs::read_to_string("/proc/self/mountinfo")
                .ok()
                .and_then(|m| mount_of(&m, maj, min));
            let backing = mount.as_ref().and_then(|(_, src)| {
                let m = std::fs::metadata(src).ok()?;
                m.file_type().is_block_device().then(|| m.rdev())
            });
            match (backing, mount) {
                (Some(rdev), _) => (maj, min) = (libc::major(rdev), libc::minor(rdev)),
                (None, fs) => {
                    let fs = fs.map_or("tmpfs/overlay?".into(), |(t, _)| t);
                    self.notes.push(format!(
                        "{shown} is on a filesystem without a block device ({fs})"
                    ));
                    return;
                }
            }
        }
        self.block(maj, min, &shown.to_string(), depth);
    }

    /// Block device `maj:min`: itself, its whole disk if it is a partition,
    /// and what it is stacked on (dm/md slaves, a loop device's file).
    fn block(&mut self, maj: u32, min: u32, what: &str, depth: usize) {
        let link = self.sys.join(format!("dev/block/{maj}:{min}"));
        match std::fs::canonicalize(&link) {
            Ok(p) => self.sysfs_device(&p, depth),
            Err(e) => self.notes.push(format!(
                "{what}: device {maj}:{min} has no sysfs entry ({}: {e})",
                link.display()
            )),
        }
    }

    /// A block device by its canonical sysfs directory.
    fn sysfs_device(&mut self, dir: &Path, depth: usize) {
        let Some(name) = dir.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            return;
        };
        self.add_device(&name);
        let partition = dir.join("partition").exists();
        let Some(disk_dir) = (if partition { dir.parent() } else { Some(dir) }) else {
            return;
        };
        let Some(disk) = disk_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
        else {
            return;
        };
        self.add_device(&disk);
        let (mut names, pci) = path_keys(&disk_dir.to_string_lossy());
        if !names.iter().any(|n| n.starts_with("nvme")) {
            names.extend(nvme_controller(&disk));
        }
        names.into_iter().for_each(|n| self.keys.add_name(n));
        if let Some(pci) = pci {
            self.add_pci(&pci);
        }
        if depth >= MAX_DEPTH {
            return;
        }
        for slave in dir_names(disk_dir.join("slaves")) {
            match std::fs::canonicalize(self.sys.join("class/block").join(&slave)) {
                Ok(p) => self.sysfs_device(&p, depth + 1),
                Err(e) => self.notes.push(format!("{disk}: slave {slave}: {e}")),
            }
        }
        if let Some(file) = read_trim(disk_dir.join("loop/backing_file")) {
            self.notes
                .push(format!("{disk} is backed by the file {file}"));
            self.target(Path::new(&file), depth + 1);
        }
    }

    /// The network interfaces that are up (their interrupts compete with
    /// the disk's for the same CPUs), by name and by the device behind.
    fn interfaces(&mut self) -> Vec<String> {
        let class = self.sys.join("class/net");
        let mut up = Vec::new();
        for ifname in dir_names(&class) {
            if ifname == "lo" {
                continue;
            }
            let d = class.join(&ifname);
            let flags = read_trim(d.join("flags"))
                .and_then(|f| u32::from_str_radix(f.trim_start_matches("0x"), 16).ok());
            let is_up = match flags {
                Some(f) => f & libc::IFF_UP as u32 != 0,
                None => read_trim(d.join("operstate")).as_deref() == Some("up"),
            };
            if !is_up {
                continue;
            }
            self.keys.add_name(ifname.clone());
            if let Ok(p) = std::fs::canonicalize(&d) {
                let (names, pci) = path_keys(&p.to_string_lossy());
                names.into_iter().for_each(|n| self.keys.add_name(n));
                if let Some(pci) = pci {
                    self.add_pci(&pci);
                }
            }
            up.push(ifname);
        }
        up
    }
}

/// The `disclosure` of a disk run: the block devices behind `paths` and
/// the interrupt lines of those devices and of the network interfaces that
/// are up, with where each may be delivered. What cannot be found becomes
/// a note, never an error: a run on tmpfs is still a run.
pub fn disk_disclosure(paths: &[PathBuf]) -> DiskDisclosure {
    disclose(Path::new("/sys"), Path::new("/proc"), paths)
}

fn disclose(sys: &Path, proc: &Path, paths: &[PathBuf]) -> DiskDisclosure {
    let mut f = Finder::new(sys);
    for p in paths {
        f.target(p, 0);
    }
    f.finish(proc)
}

impl<'a> Finder<'a> {
    fn new(sys: &'a Path) -> Self {
        Finder {
            sys,
            devices: Vec::new(),
            keys: Keys::default(),
            notes: Vec::new(),
        }
    }

    /// Adds the network interfaces and reads which interrupt lines belong
    /// to all that was found, and where each may go.
    fn finish(mut self, proc: &Path) -> DiskDisclosure {
        let up = self.interfaces();
        let path = proc.join("interrupts");
        let irqs = match std::fs::read_to_string(&path) {
            Ok(text) => select_irqs(parse_interrupts(&text), &self.keys),
            Err(e) => {
                self.notes
                    .push(format!("cannot read {}: {e}", path.display()));
                Vec::new()
            }
        };
        if irqs.is_empty() {
            let list = |v: &[String]| match v {
                [] => "none".to_string(),
                v => v.join(", "),
            };
            self.notes.push(format!(
                "no interrupt line found for the devices ({}) or the network interfaces that are up ({})",
                list(&self.devices),
                list(&up)
            ));
        }
        DiskDisclosure {
            devices: self.devices,
            irqs: irqs
                .into_iter()
                .map(|r| IrqAffinity {
                    affinity: read_trim(proc.join(format!("irq/{}/smp_affinity_list", r.irq))),
                    irq: r.irq.to_string(),
                    name: r.name,
                    per_cpu: r.per_cpu,
                })
                .collect(),
            notes: self.notes,
            iscsi: Vec::new(),
        }
    }
}

/// Real-time priority (SCHED_FIFO, lowest level) for the calling thread,
/// for a thread that only sleeps until a measurement window's edges: a
/// waking real-time thread preempts a load that saturates every CPU at
/// once. Threads it creates do not inherit it (SCHED_RESET_ON_FORK).
/// Drop it with [`normal_priority`] before doing anything heavy at the
/// edge: equal real-time threads of other agents on the same CPUs would
/// wait for it.
pub fn realtime_edges() -> Result<(), String> {
    let p = libc::sched_param { sched_priority: 1 };
    // SAFETY: sets the calling thread's policy; `p` is a valid param.
    let r =
        unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &p) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!("SCHED_FIFO: {}", std::io::Error::last_os_error()))
    }
}

/// Back to the normal policy (after [`realtime_edges`]); harmless if the
/// thread never left it.
pub fn normal_priority() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: as above.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
}

#[cfg(test)]
mod tests;
