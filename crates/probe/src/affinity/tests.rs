use super::*;
use std::os::unix::fs::symlink;

#[test]
fn cpu_lists_keep_the_order_written() {
    assert_eq!(
        parse_cpu_list("0-3,8,10-11").unwrap(),
        [0, 1, 2, 3, 8, 10, 11]
    );
    assert_eq!(parse_cpu_list("8,0-1").unwrap(), [8, 0, 1]);
    assert_eq!(parse_cpu_list(" 3 , 1 ").unwrap(), [3, 1]);
    assert_eq!(parse_cpu_list("5").unwrap(), [5]);
    assert_eq!(parse_cpu_list("4-4").unwrap(), [4]);
    assert_eq!(parse_cpu_list("4095").unwrap(), [4095]);
}

#[test]
fn cpu_lists_take_strides_and_kernel_groups() {
    assert_eq!(parse_cpu_list("0-7:2").unwrap(), [0, 2, 4, 6]);
    assert_eq!(parse_cpu_list("1-8:3").unwrap(), [1, 4, 7]);
    // The kernel's used/group form: the first 2 of every 4.
    assert_eq!(parse_cpu_list("0-9:2/4").unwrap(), [0, 1, 4, 5, 8, 9]);
    assert_eq!(parse_cpu_list("0-3:1").unwrap(), [0, 1, 2, 3]);
}

#[test]
fn cpu_list_errors_say_what_is_wrong() {
    let e = |s| parse_cpu_list(s).unwrap_err();
    assert_eq!(e("3-1"), "--cpus '3-1': range 3-1 is reversed");
    assert_eq!(e("0-3,2"), "--cpus '0-3,2': CPU 2 is listed twice");
    assert_eq!(e(""), "--cpus '': the list is empty");
    assert_eq!(e("  "), "--cpus '  ': the list is empty");
    assert_eq!(e("abc"), "--cpus 'abc': 'abc' is not a CPU number or range");
    assert_eq!(
        e("0,,1"),
        "--cpus '0,,1': empty item (two commas in a row, or one at an end)"
    );
    assert!(e("1,").contains("empty item"));
    assert!(e("-1").contains("'-1' is not a CPU number or range"));
    assert!(e("1-2-3").contains("'1-2-3' is not a CPU"));
    assert!(e("0x1").contains("'0x1' is not a CPU"));
    assert!(e("+1").contains("'+1' is not a CPU"));
    assert_eq!(
        e("4096"),
        "--cpus '4096': CPU 4096 is beyond the largest supported, 4095"
    );
    assert!(e("0-99999999999999").contains("CPU 99999999999999 is beyond"));
    assert!(e("0-7:0").contains("'0' after ':' must be a count of 1 or more"));
    assert!(e("0-7:x").contains("after ':'"));
    assert!(e("3:2").contains("a stride needs a range"));
    assert!(e("0-7:3/2").contains("uses 3 CPUs of every 2"));
}

#[test]
fn cpu_lists_format_and_read_back() {
    assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8]), "0-3,8");
    assert_eq!(format_cpu_list(&[]), "");
    assert_eq!(format_cpu_list(&[5]), "5");
    assert_eq!(format_cpu_list(&[0, 1]), "0-1");
    assert_eq!(format_cpu_list(&[3, 0, 1, 2]), "3,0-2");
    assert_eq!(format_cpu_list(&[0, 2, 4]), "0,2,4");
    assert_eq!(format_cpu_list(&[u32::MAX, 0]), format!("{},0", u32::MAX));
    for s in ["0-3,8,10-11", "8,0-1", "4095", "7,6,5", "0-7:2", "0-9:2/4"] {
        let cpus = parse_cpu_list(s).unwrap();
        let back = parse_cpu_list(&format_cpu_list(&cpus)).unwrap();
        assert_eq!(back, cpus, "{s}");
    }
}

#[test]
fn checks_name_the_offending_cpus() {
    let online = [0, 1];
    assert_eq!(check_against(&[1, 0], &online, Some(&online)), Ok(()));
    assert_eq!(check_against(&[0], &online, None), Ok(()));
    assert_eq!(
        check_against(&[0, 5], &online, Some(&online)).unwrap_err(),
        "--cpus: CPU 5 is not online (online: 0-1)"
    );
    assert_eq!(
        check_against(&[5, 6, 7, 9], &online, None).unwrap_err(),
        "--cpus: CPUs 5-7,9 are not online (online: 0-1)"
    );
    let e = check_against(&[0, 1, 4], &online, Some(&[0])).unwrap_err();
    assert_eq!(
        e,
        "--cpus: CPU 4 is not online (online: 0-1); CPU 1 is not allowed to this \
         process (allowed: 0; taskset or a cgroup cpuset restricts it)"
    );
}

#[test]
fn this_machine_accepts_its_online_cpus() {
    let online = online_cpus();
    assert!(!online.is_empty());
    assert!(online.windows(2).all(|w| w[0] < w[1]), "{online:?}");
    let allowed = allowed_cpus().expect("sched_getaffinity answers");
    let usable: Vec<u32> = online
        .iter()
        .copied()
        .filter(|c| allowed.contains(c))
        .collect();
    assert!(!usable.is_empty());
    assert_eq!(check_cpus(&usable), Ok(()));
    if !online.contains(&MAX_CPU) {
        let e = check_cpus(&[MAX_CPU]).unwrap_err();
        assert!(e.contains("CPU 4095 is not online (online: "), "{e}");
    }
}

#[test]
fn a_pinned_thread_runs_where_it_was_pinned() {
    let allowed = allowed_cpus().expect("sched_getaffinity answers");
    let cpus: Vec<u32> = online_cpus()
        .into_iter()
        .filter(|c| allowed.contains(c))
        .collect();
    std::thread::spawn(move || {
        for &cpu in cpus.iter().chain(cpus.iter().rev()) {
            pin_current_thread(cpu).unwrap_or_else(|e| panic!("pin to {cpu}: {e}"));
            assert_eq!(current_cpu(), Some(cpu));
            assert_eq!(allowed_cpus(), Some(vec![cpu]));
        }
        let e = pin_current_thread(u32::MAX).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        if !online_cpus().contains(&MAX_CPU) {
            let e = pin_current_thread(MAX_CPU).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
        }
    })
    .join()
    .unwrap();
}

/// Four CPUs; NVMe (two controllers), virtio disk and NIC, a shared
/// line, look-alike names, a PCI device without its name in the
/// handler, and architecture lines.
const INTERRUPTS: &str = "\
        CPU0       CPU1       CPU2       CPU3       
   0:         44          0          0          0   IO-APIC   2-edge      timer
   9:          0          4          0          0   IO-APIC   9-fasteoi   acpi, i801_smbus
  24:          0          0          0          3  IR-PCI-MSI 65536-edge      nvme0q0
  25:      12345          0          0          0  IR-PCI-MSI 65537-edge      nvme0q1
  26:          0      23456          0          0  IR-PCI-MSI 65538-edge      nvme0q2
  27:          0          0          7          0  IR-PCI-MSI 524288-edge      nvme1q1
  30:          0          0          0          0  PCI-MSIX-0000:00:02.0   0-edge      virtio1-config
  31:          0    9825904          0          0  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
  32:          0          0          0          5  PCI-MSIX-0000:00:0a.0   1-edge      virtio10-req.0
  33:          0       7527          0          0  PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
  34:       5711          0          0          0  PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
  35:          1          2          3          4  IR-PCI-MSI 1048576-edge      eth1-TxRx-0
  36:          1          2          3          4  IR-PCI-MSI 1048577-edge      eth10-TxRx-0
  37:          9          0          0          0  IR-PCI-MSI 327680-edge      ahci[0000:00:17.0]
 NMI:          0          0          0          0   Non-maskable interrupts
 LOC:   11858173   10658470   11858173   10658470   Local timer interrupts
 ERR:          0
 MIS:          0
";

#[test]
fn interrupts_are_parsed() {
    let rows = parse_interrupts(INTERRUPTS);
    let irqs: Vec<u32> = rows.iter().map(|r| r.irq).collect();
    assert_eq!(irqs, [0, 9, 24, 25, 26, 27, 30, 31, 32, 33, 34, 35, 36, 37]);
    assert_eq!(rows[1].name, "acpi, i801_smbus");
    assert_eq!(rows[2].name, "nvme0q0");
    assert_eq!(rows[2].per_cpu, [0, 0, 0, 3]);
    assert_eq!(rows[7].name, "virtio1-req.0");
    assert_eq!(rows[7].per_cpu, [0, 9825904, 0, 0]);
    assert_eq!(rows[13].name, "ahci[0000:00:17.0]");
    assert!(rows.iter().all(|r| r.per_cpu.len() == 4));
}

#[test]
fn interrupts_of_other_architectures_are_parsed() {
    let arm = "\
       CPU0       CPU1
 11:       8888       7777     GICv3  27 Level     arch_timer
 50:         10          0   ITS-MSI 524288 Edge      nvme0q1
 60:          0          0  xen-dyn     -event     xenbus
  1:          3          0   IO-APIC-edge      i8042
 77:          1          1   PCI-MSI 458752-edge      PCIe PME, pciehp
IPI0:        10         20       Rescheduling interrupts
";
    let rows = parse_interrupts(arm);
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "arch_timer",
            "nvme0q1",
            "xenbus",
            "i8042",
            "PCIe PME, pciehp"
        ]
    );
    assert_eq!(rows[0].per_cpu, [8888, 7777]);
    assert!(parse_interrupts("").is_empty());
    assert!(parse_interrupts("garbage\n 1: x y z\n")
        .iter()
        .all(|r| r.per_cpu.is_empty()));
}

#[test]
fn handler_names_match_whole_device_names() {
    assert!(handler_matches("nvme0q3", "nvme0"));
    assert!(!handler_matches("nvme10q3", "nvme1"));
    assert!(!handler_matches("nvme1q3", "nvme10"));
    assert!(handler_matches("virtio1-req.0", "virtio1"));
    assert!(!handler_matches("virtio10-req.0", "virtio1"));
    assert!(handler_matches("eth0", "eth0"));
    assert!(handler_matches("i40e-eth0-TxRx-0", "eth0"));
    assert!(!handler_matches("eth0q1x", "eth"));
    assert!(!handler_matches("enp1s0f0-TxRx-0", "enp1s0"));
    assert!(handler_matches("acpi, eth0-rx", "eth0"));
    assert!(!handler_matches("veth0", "eth0"));
    assert!(!handler_matches("anything", ""));
}

#[test]
fn only_the_devices_lines_are_kept() {
    let keys = Keys {
        names: vec!["nvme0".into(), "virtio1".into(), "eth1".into()],
        irqs: [37].into(),
    };
    let kept: Vec<u32> = select_irqs(parse_interrupts(INTERRUPTS), &keys)
        .iter()
        .map(|r| r.irq)
        .collect();
    assert_eq!(kept, [24, 25, 26, 30, 31, 35, 37]);
    assert!(select_irqs(parse_interrupts(INTERRUPTS), &Keys::default()).is_empty());
}

#[test]
fn sysfs_paths_name_the_driver_level_device() {
    let k = path_keys("/sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda");
    assert_eq!(k, (vec!["virtio1".into()], Some("0000:00:02.0".into())));
    let k = path_keys("/sys/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/nvme0n1");
    assert_eq!(k, (vec!["nvme0".into()], Some("0000:3d:00.0".into())));
    let scsi = "/sys/devices/pci0000:00/0000:00:04.0/virtio3/host0/target0:0:0/0:0:0:0/block/sda";
    assert_eq!(path_keys(scsi).0, ["virtio3"]);
    let ahci = "/sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda";
    assert_eq!(path_keys(ahci), (vec![], Some("0000:00:17.0".into())));
    assert_eq!(
        path_keys("/sys/devices/virtual/block/loop0"),
        (vec![], None)
    );
    assert!(is_pci_address("0000:00:1f.7") && !is_pci_address("pci0000:00"));
    assert_eq!(nvme_controller("nvme0n1").as_deref(), Some("nvme0"));
    assert_eq!(nvme_controller("nvme12c3n1").as_deref(), Some("nvme12"));
    assert_eq!(nvme_controller("nvme0"), None);
    assert_eq!(nvme_controller("vda"), None);
}

#[test]
fn anonymous_devices_are_found_in_mountinfo() {
    let mi = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684096k
44 27 0:45 /@home /home rw shared:1 - btrfs /dev/nvme0n1p2 rw,ssd
";
    assert_eq!(mount_of(mi, 0, 27), Some(("tmpfs".into(), "tmpfs".into())));
    assert_eq!(
        mount_of(mi, 0, 45),
        Some(("btrfs".into(), "/dev/nvme0n1p2".into()))
    );
    assert_eq!(mount_of(mi, 0, 99), None);
}

/// A sysfs and procfs of our own: an LVM volume (dm-0) on an NVMe
/// partition, a virtio NIC that is up and one that is down.
fn fake_system(root: &Path) -> (PathBuf, PathBuf) {
    let (sys, proc) = (root.join("sys"), root.join("proc"));
    let mk = |p: &Path| std::fs::create_dir_all(p).unwrap();
    let write = |p: PathBuf, s: &str| {
        mk(p.parent().unwrap());
        std::fs::write(p, s).unwrap();
    };
    let nvme = sys.join("devices/pci0000:00/0000:00:06.0/0000:02:00.0/nvme/nvme0/nvme0n1");
    write(nvme.join("nvme0n1p2/partition"), "2\n");
    let dm = sys.join("devices/virtual/block/dm-0");
    mk(&dm.join("slaves"));
    symlink(nvme.join("nvme0n1p2"), dm.join("slaves/nvme0n1p2")).unwrap();
    mk(&sys.join("dev/block"));
    symlink(&dm, sys.join("dev/block/253:0")).unwrap();
    symlink(nvme.join("nvme0n1p2"), sys.join("dev/block/259:2")).unwrap();
    mk(&sys.join("class/block"));
    symlink(nvme.join("nvme0n1p2"), sys.join("class/block/nvme0n1p2")).unwrap();
    for i in ["24", "25"] {
        write(
            sys.join("bus/pci/devices/0000:02:00.0/msi_irqs").join(i),
            "msi\n",
        );
    }
    let net = sys.join("class/net");
    mk(&net);
    for (ifname, virtio, flags) in [("eth0", "virtio2", "0x1003"), ("eth9", "virtio9", "0x1002")] {
        let d = sys.join(format!(
            "devices/pci0000:00/0000:00:03.0/{virtio}/net/{ifname}"
        ));
        write(d.join("flags"), flags);
        symlink(&d, net.join(ifname)).unwrap();
    }
    write(net.join("lo/flags"), "0x9");
    write(proc.join("interrupts"), INTERRUPTS);
    write(proc.join("irq/25/smp_affinity_list"), "0-1\n");
    (sys, proc)
}

#[test]
fn a_stacked_device_is_followed_to_its_disk_and_interrupts() {
    let root = tempfile::tempdir().unwrap();
    let (sys, proc) = fake_system(root.path());
    let mut f = Finder::new(&sys);
    f.block(253, 0, "/data/file", 0);
    let d = f.finish(&proc);
    assert_eq!(d.devices, ["dm-0", "nvme0n1p2", "nvme0n1"]);
    let irqs: Vec<(&str, &str)> = d
        .irqs
        .iter()
        .map(|i| (i.irq.as_str(), i.name.as_str()))
        .collect();
    // nvme0's queues (by name and by msi_irqs), eth0's virtio2; not
    // nvme1, not the down eth9's.
    assert_eq!(
        irqs,
        [
            ("24", "nvme0q0"),
            ("25", "nvme0q1"),
            ("26", "nvme0q2"),
            ("33", "virtio2-input.0"),
            ("34", "virtio2-output.0")
        ]
    );
    assert_eq!(d.irqs[1].affinity.as_deref(), Some("0-1"));
    assert_eq!(d.irqs[0].affinity, None);
    assert_eq!(d.irqs[1].per_cpu, [12345, 0, 0, 0]);
    assert!(d.notes.is_empty(), "{:?}", d.notes);
}

#[test]
fn what_cannot_be_found_becomes_notes() {
    let root = tempfile::tempdir().unwrap();
    let (sys, proc) = fake_system(root.path());
    std::fs::remove_file(sys.join("class/net/eth0")).unwrap();
    let mut f = Finder::new(&sys);
    f.block(8, 0, "/mnt/x", 0);
    let d = f.finish(&proc);
    assert!(d.devices.is_empty() && d.irqs.is_empty());
    assert_eq!(d.notes.len(), 2, "{:?}", d.notes);
    assert!(d.notes[0].starts_with("/mnt/x: device 8:0 has no sysfs entry"));
    assert_eq!(
        d.notes[1],
        "no interrupt line found for the devices (none) or the network interfaces that are up (none)"
    );
    let d = Finder::new(&sys).finish(&root.path().join("no-proc"));
    assert!(d.notes[0].starts_with("cannot read "), "{:?}", d.notes);
}

#[test]
fn this_machine_discloses_without_failing() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let file = dir.path().join("target");
    std::fs::write(&file, b"x").unwrap();
    for t in [file.clone(), "/".into()] {
        let one = disk_disclosure(std::slice::from_ref(&t));
        let json = serde_json::to_string_pretty(&one).unwrap();
        eprintln!("{}: {json}", t.display());
    }
    let d = disk_disclosure(&[file.clone(), "/".into()]);
    assert!(
        !d.devices.is_empty() || !d.notes.is_empty(),
        "either devices or why not: {d:?}"
    );
    assert!(d.irqs.iter().all(|i| !i.per_cpu.is_empty()), "{d:?}");
    if d.irqs.is_empty() {
        assert!(
            d.notes.iter().any(|n| n.starts_with("no interrupt line")),
            "{d:?}"
        );
    }
    // A target that does not exist yet is on its directory's device.
    let later = disk_disclosure(&[dir.path().join("not-yet")]);
    let here = disk_disclosure(&[dir.path().to_path_buf()]);
    assert_eq!(later.devices, here.devices);
    assert!(later.notes[0].contains("does not exist yet"), "{later:?}");
    eprintln!("{}", later.notes[0]);
    // tmpfs has no block device: a note, not a failure.
    if crate::sysinfo::fs_type(Path::new("/dev/shm")).as_deref() == Some("tmpfs") {
        let shm = disk_disclosure(&["/dev/shm".into()]);
        eprintln!("{}", serde_json::to_string_pretty(&shm).unwrap());
        assert!(shm.devices.is_empty(), "{shm:?}");
        assert_eq!(
            shm.notes[0],
            "/dev/shm is on a filesystem without a block device (tmpfs)"
        );
    }
    let null = disk_disclosure(&["/dev/null".into()]);
    assert!(null.notes[0].contains("character device"), "{null:?}");
}
