//! Lab hosts with their own CPUs, for real: a pair with `a` on one CPU
//! and `b` on another (the RPS/XPS masks, the threads and children that
//! enter a host, status's drift check, `down`), and refusals that create
//! nothing. Needs root and two online CPUs; skipped otherwise (failed
//! under CI when not root).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

mod common;

use common::netns_with;

fn setup() -> bool {
    if !common::setup("cpus") {
        return false;
    }
    let usable = iotoll_lab::cpus::allowed().unwrap();
    if usable.len() < 2 {
        eprintln!("skipped: needs two usable CPUs, this process has {usable:?}");
        return false;
    }
    true
}

/// The two lowest usable CPUs.
fn two() -> (u32, u32) {
    let u = iotoll_lab::cpus::allowed().unwrap();
    (u[0], u[1])
}

/// A lab name unique to this process (names of this test start with `p`).
fn unique(tag: &str) -> String {
    common::unique("p", tag)
}

/// The built-in pair up as `unique(tag)`, a on the lowest usable CPU and
/// b on the next: its name, the two CPUs and its state; None when skipped.
fn pair_up(tag: &str) -> Option<(String, (u32, u32), iotoll_lab::LabState)> {
    if !setup() {
        return None;
    }
    let (c0, c1) = two();
    let name = unique(tag);
    let sets = [
        format!("name={name}"),
        format!("cpus.a={c0}"),
        format!("cpus.b={c1}"),
    ];
    let st = iotoll_lab::up(&iotoll_lab::load("pair", &sets).unwrap(), false).unwrap();
    Some((name, (c0, c1), st))
}

/// A listener on `h`'s first address, bound from inside its namespace.
fn listen_in(h: &iotoll_lab::HostState) -> TcpListener {
    let (addr, h) = (h.addresses[0], h.clone());
    std::thread::spawn(move || {
        let _g = iotoll_lab::enter(&h).unwrap();
        TcpListener::bind(SocketAddr::new(addr, 0)).unwrap()
    })
    .join()
    .unwrap()
}

fn in_ns(ns: &str, cmd: &str) -> String {
    let o = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-c", cmd])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Packets each CPU's backlog processed (first column of softnet_stat,
/// one line per online CPU in order).
fn softnet_processed() -> Vec<u64> {
    std::fs::read_to_string("/proc/net/softnet_stat")
        .unwrap()
        .lines()
        .map(|l| u64::from_str_radix(l.split_whitespace().next().unwrap(), 16).unwrap())
        .collect()
}

fn cpus_allowed_list(status: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn pair_on_separate_cpus() {
    let Some((name, (c0, c1), st)) = pair_up("pair") else {
        return;
    };
    let (a, b) = (st.host("a").unwrap().clone(), st.host("b").unwrap().clone());
    assert_eq!(a.cpus, Some(vec![c0]));
    assert_eq!(b.cpus, Some(vec![c1]));
    assert!(a.confinement.is_some());
    // The masks as recorded and as the kernel has them.
    assert!(a.queue_masks.iter().any(|(f, _)| f.contains("rps_cpus")));
    assert!(a.queue_masks.iter().any(|(f, _)| f.contains("xps_cpus")));
    let rps = in_ns(&b.netns, "cat /sys/class/net/eth0/queues/rx-0/rps_cpus");
    assert_eq!(iotoll_lab::cpus::parse_mask(&rps).unwrap(), vec![c1]);
    assert!(
        iotoll_lab::cpu_drift(&st).is_empty(),
        "{:?}",
        iotoll_lab::cpu_drift(&st)
    );

    // A thread that enters a runs on a's CPU only, and so do its children;
    // leaving restores what it had.
    let before = iotoll_lab::cpus::allowed().unwrap();
    let ah = a.clone();
    let (inside, child) = std::thread::spawn(move || {
        let g = iotoll_lab::enter(&ah).unwrap();
        let inside = iotoll_lab::cpus::allowed().unwrap();
        let out = std::process::Command::new("cat")
            .arg("/proc/self/status")
            .output()
            .unwrap();
        drop(g);
        assert_eq!(iotoll_lab::cpus::allowed().unwrap(), before);
        (
            inside,
            cpus_allowed_list(&String::from_utf8_lossy(&out.stdout)),
        )
    })
    .join()
    .unwrap();
    assert_eq!(inside, vec![c0]);
    assert_eq!(child, c0.to_string());

    // A stream a -> b: each packet b's eth0 receives is processed on b's
    // CPU (RPS), whatever else the machine's CPUs process meanwhile.
    let rx = |h: &iotoll_lab::HostState| -> u64 {
        in_ns(&h.netns, "cat /sys/class/net/eth0/statistics/rx_packets")
            .trim()
            .parse()
            .unwrap()
    };
    let (listener, baddr) = (listen_in(&b), b.addresses[0]);
    let port = listener.local_addr().unwrap().port();
    let (rx0, soft0) = (rx(&b), softnet_processed());
    let bh = b.clone();
    let reader = std::thread::spawn(move || {
        let _g = iotoll_lab::enter(&bh).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 20];
        while s.read(&mut buf).unwrap() > 0 {}
    });
    let ah = a.clone();
    std::thread::spawn(move || {
        let _g = iotoll_lab::enter(&ah).unwrap();
        let mut s = TcpStream::connect(SocketAddr::new(baddr, port)).unwrap();
        let buf = vec![0u8; 1 << 20];
        for _ in 0..64 {
            s.write_all(&buf).unwrap();
        }
    })
    .join()
    .unwrap();
    reader.join().unwrap();
    let (rx1, soft1) = (rx(&b), softnet_processed());
    let received = rx1 - rx0;
    let on_c1 = soft1[c1 as usize] - soft0[c1 as usize];
    assert!(received > 1000, "b received {received} packets");
    assert!(
        on_c1 >= received,
        "CPU {c1} processed {on_c1} packets; b's eth0 received {received}: RPS did not take effect"
    );

    // A mask changed behind the lab's back is reported by name.
    in_ns(
        &b.netns,
        "echo 0 > /sys/class/net/eth0/queues/rx-0/rps_cpus",
    );
    let drift = iotoll_lab::cpu_drift(&st);
    assert!(
        drift
            .iter()
            .any(|d| d.contains("host 'b'") && d.contains("rps_cpus")),
        "{drift:?}"
    );

    iotoll_lab::down(&name).unwrap();
    assert!(netns_with(&format!("iotoll-{name}-")).is_empty());
    for h in [&a, &b] {
        if let Some(c) = &h.cgroup {
            assert!(!c.exists(), "{} left behind", c.display());
        }
    }
}

#[test]
fn bad_cpu_sets_are_refused_and_create_nothing() {
    if !setup() {
        return;
    }
    let (c0, _) = two();
    let offline = iotoll_probe::affinity::online_cpus().last().unwrap() + 1;
    let cases = [
        (
            vec![format!("cpus.a={c0}"), format!("cpus.b={c0}")],
            "also host 'a'",
        ),
        (vec![format!("cpus.a={offline}")], "not online"),
    ];
    for (k, (sets, want)) in cases.into_iter().enumerate() {
        let name = unique(&format!("bad{k}"));
        let mut s = vec![format!("name={name}")];
        s.extend(sets);
        let def = iotoll_lab::load("pair", &s).unwrap();
        let e = iotoll_lab::up(&def, false).unwrap_err();
        assert!(e.is_usage(), "{e}");
        let e = e.to_string();
        assert!(e.contains(want) && e.contains("CPU"), "{e}");
        assert!(netns_with(&format!("iotoll-{name}-")).is_empty());
        assert!(iotoll_lab::status(&name).unwrap().is_none());
    }
}

/// The two measuring tests run one at a time: each loads the other's CPUs.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A 3 s stream from a to b of lab `st`, each end's CPU window opened as
/// its host: (a's report, b's report).
fn stream_a_to_b(st: &iotoll_lab::LabState) -> (iotoll_model::CpuReport, iotoll_model::CpuReport) {
    let (a, b) = (st.host("a").unwrap().clone(), st.host("b").unwrap().clone());
    let (listener, baddr) = (listen_in(&b), b.addresses[0]);
    let port = listener.local_addr().unwrap().port();
    let go = std::sync::Arc::new(std::sync::Barrier::new(2));
    let (bh, gb) = (b.clone(), go.clone());
    let reader = std::thread::spawn(move || {
        let _g = iotoll_lab::enter(&bh).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        gb.wait();
        let w = iotoll_probe::CpuWindow::start_with(|| {}).unwrap();
        let mut buf = vec![0u8; 1 << 20];
        while s.read(&mut buf).unwrap() > 0 {}
        w.finish_with(|| {}).report.unwrap()
    });
    let ah = a.clone();
    let writer = std::thread::spawn(move || {
        let _g = iotoll_lab::enter(&ah).unwrap();
        let mut s = TcpStream::connect(SocketAddr::new(baddr, port)).unwrap();
        go.wait();
        let w = iotoll_probe::CpuWindow::start_with(|| {}).unwrap();
        let buf = vec![0u8; 1 << 16];
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_secs(3) {
            s.write_all(&buf).unwrap();
        }
        drop(s);
        w.finish_with(|| {}).report.unwrap()
    });
    (writer.join().unwrap(), reader.join().unwrap())
}

/// A stream a -> b with a on one CPU and b on another: each host's CPU
/// window measures its own CPU only, the machine's stays beside it, and
/// on a 2-CPU machine the two hosts' busy time adds up to the machine's.
#[test]
fn each_host_is_measured_on_its_own_cpu() {
    let _one = MEASURING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some((name, (c0, c1), st)) = pair_up("meas") else {
        return;
    };
    let (ra, rb) = stream_a_to_b(&st);
    iotoll_lab::down(&name).unwrap();
    assert_eq!((ra.cpus, ra.own_cpus.clone()), (1, Some(vec![c0])));
    assert_eq!((rb.cpus, rb.own_cpus.clone()), (1, Some(vec![c1])));
    let core = |r: &iotoll_model::CpuReport| r.per_core.iter().map(|c| c.cpu).collect::<Vec<_>>();
    assert_eq!((core(&ra), core(&rb)), (vec![c0], vec![c1]));
    let (ma, mb) = (ra.machine.clone().unwrap(), rb.machine.clone().unwrap());
    assert!(ma.cpus >= 2 && ma.cpus == mb.cpus);
    // The receiver's kernel work (RPS) is on b's CPU.
    assert!(rb.modes.softirq > 0.0, "{:?}", rb.modes);
    if ma.cpus == 2 {
        let hosts = (ra.busy_pct + rb.busy_pct) / 2.0;
        let machine = (ma.busy_pct + mb.busy_pct) / 2.0;
        // Within 5 points, not exactly: a's figures are over the writer's
        // window and b's over the reader's, which closes later (it drains
        // what is in flight), and this binary's other tests run beside
        // (a test.sh run saw 69.3 % against 71.5 %).
        assert!(
            (hosts - machine).abs() <= 5.0,
            "a {:.1} % + b {:.1} % of one CPU each = {hosts:.1} % of 2, the machine {machine:.1} %",
            ra.busy_pct,
            rb.busy_pct
        );
        eprintln!(
            "a (CPU {c0}) {:.1} % busy, softirq {:.1} %; b (CPU {c1}) {:.1} % busy, softirq {:.1} %; machine {machine:.1} %",
            ra.busy_pct, ra.modes.softirq, rb.busy_pct, rb.modes.softirq
        );
    }
}

/// issue 28: interference is judged on a host's own CPUs. A hog confined
/// to b's CPU interferes with b and is named there, and is never on a's
/// CPU; each host's account adds up to its own busy time.
#[test]
fn a_hog_on_bs_cpu_interferes_with_b_only() {
    let _one = MEASURING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some((name, (c0, c1), st)) = pair_up("hog") else {
        return;
    };
    let hog = Hog(std::process::Command::new("taskset")
        .args(["-c", &c1.to_string(), "sh", "-c", "while :; do :; done"])
        .spawn()
        .expect("taskset (util-linux)"));
    let (ra, rb) = stream_a_to_b(&st);
    let hog_pid = hog.0.id() as i32;
    drop(hog);
    iotoll_lab::down(&name).unwrap();
    let named = |r: &iotoll_model::CpuReport| {
        let i = r.interference.as_ref().expect("interference judged");
        (r.top.iter().map(|t| t.pid))
            .chain(i.processes.iter().map(|t| t.pid))
            .any(|p| p == hog_pid)
    };
    assert!(
        !named(&ra),
        "a hog on CPU {c1} named on a's CPU {c0}: {:?}",
        ra.top
    );
    assert!(
        named(&rb),
        "the hog on b's CPU not named: {:?}",
        rb.interference
    );
    assert!(
        rb.interference.as_ref().is_some_and(|i| i.interfered),
        "{:?}",
        rb.interference
    );
    for r in [&ra, &rb] {
        let a = r
            .account
            .as_ref()
            .expect("an account on the host's own CPU");
        let tickless = r.notes.iter().any(|n| n.contains("tickless"));
        assert!(
            tickless || (a.total() - r.busy_pct).abs() < 1e-6,
            "{a:?} vs {}",
            r.busy_pct
        );
    }
}

/// Ends a child process when the test ends, passed or failed.
struct Hog(std::process::Child);

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
