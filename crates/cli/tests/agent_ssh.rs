//! `--ssh` against a real sshd: a `pair` lab, sshd in host b (a throwaway
//! host key, root login with a throwaway user key only), the system ssh
//! run in host a's namespace (the lab adds nothing to the root namespace,
//! so b's address is reachable only from inside the lab), and this build's
//! `iotoll agent` as the remote command. Checks that the agent started
//! through [`SshAgent`] listens where it said, takes a console session
//! with the run key (and refuses another key), got its arguments intact
//! through the remote shell and the key on no command line, and that
//! stopping (or dropping) the launcher leaves no process behind in b; and
//! that a wrong ssh key, a missing agent, a refused port and an
//! unreachable address are clear errors within the timeout.
//!
//! Needs root, ssh, ssh-keygen and /usr/sbin/sshd (test.sh installs
//! openssh-server); skipped otherwise, failed under CI. Each test has its
//! own lab name, state directory and sshd.

mod common;

use common::{can_run, is_root, Run};
use iotoll_agent::console::{Console, HostSpec};
use iotoll_agent::ssh::{run_key, LaunchErrorKind, SshAgent, SshLaunch};
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// Where the agent listens, in b.
const AGENT_PORT: u16 = 7575;

struct SshLab {
    dir: tempfile::TempDir,
    name: String,
    /// b's address on the lab's switch.
    b: String,
    sshd: Option<Child>,
}

impl SshLab {
    /// The lab, keys, sshd in b listening on b's address; `None` when a
    /// tool is missing (outside CI).
    fn up(tag: &str) -> Option<SshLab> {
        if !can_run("root", is_root())
            || !can_run("sshd (openssh-server)", Path::new(SSHD).exists())
            || !can_run(
                "ssh and ssh-keygen",
                on_path("ssh") && on_path("ssh-keygen"),
            )
        {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        // sshd refuses (StrictModes aside) keys in group/world-writable
        // places; the tempdir is 0700 but say so rather than rely on it.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let name = format!("c{}-{tag}", std::process::id() % 100_000);
        let mut lab = SshLab {
            dir,
            name,
            b: String::new(),
            sshd: None,
        };
        lab.lab(&["up", "pair", "--set", &format!("name={}", lab.name)])
            .succeeds();
        let st = lab.lab(&["status", &lab.name, "--json"]).json();
        lab.b = st["hosts"][1]["addresses"][0]
            .as_str()
            .expect("b's address")
            .to_string();
        assert_eq!(st["hosts"][1]["name"], "b");
        for k in ["host", "user", "stranger"] {
            keygen(&lab.path(k));
        }
        std::fs::copy(lab.path("user.pub"), lab.path("authorized_keys")).unwrap();
        let cfg = format!(
            "ListenAddress {b}\nPort 22\nHostKey {dir}/host\nPidFile {dir}/sshd.pid\n\
             AuthorizedKeysFile {dir}/authorized_keys\nPermitRootLogin prohibit-password\n\
             PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             UsePAM no\nStrictModes no\nLogLevel VERBOSE\n",
            b = lab.b,
            dir = lab.dir.path().display()
        );
        std::fs::write(lab.path("sshd_config"), cfg).unwrap();
        // sshd's privilege separation directory.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let log = std::fs::File::create(lab.path("sshd.log")).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &lab.netns("b"), SSHD, "-D", "-e", "-f"])
            .arg(lab.path("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        lab.sshd = Some(child);
        let start = Instant::now();
        while !lab.sshd_log().contains("Server listening on") {
            if let Some(Some(st)) = lab.sshd.as_mut().map(|c| c.try_wait().unwrap()) {
                panic!("sshd ended ({st}): {}", lab.sshd_log());
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "sshd not listening after 20 s: {}",
                lab.sshd_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // ssh in a's namespace: what SshLaunch.ssh runs.
        lab.script(
            "ssh-in-a",
            &format!(
                "#!/bin/sh\nexec ip netns exec {} ssh \"$@\"\n",
                lab.netns("a")
            ),
        );
        Some(lab)
    }

    fn lab(&self, args: &[&str]) -> assert_cmd::Command {
        let mut c = common::iotoll();
        c.env("IOTOLL_LAB_DIR", self.dir.path())
            .arg("lab")
            .args(args);
        c
    }

    fn path(&self, f: &str) -> PathBuf {
        self.dir.path().join(f)
    }

    fn netns(&self, host: &str) -> String {
        iotoll_lab::host_netns(&self.name, host)
    }

    fn script(&self, name: &str, text: &str) {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn sshd_log(&self) -> String {
        std::fs::read_to_string(self.path("sshd.log")).unwrap_or_default()
    }

    /// ssh options that log in with `identity` and read no ssh config and
    /// no known_hosts of this machine.
    fn ssh_options(&self, identity: &str) -> Vec<String> {
        let key = self.path(identity).to_str().unwrap().to_string();
        [
            "-F",
            "/dev/null",
            "-i",
            &key,
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
        ]
        .map(String::from)
        .to_vec()
    }

    /// A launch of this build's `iotoll agent` on b as root with `identity`, through ssh
    /// in a, that reads no ssh config and no known_hosts of this machine.
    fn launch(&self, identity: &str) -> SshLaunch {
        let s = |p: PathBuf| p.to_str().unwrap().to_string();
        SshLaunch {
            destination: format!("root@{}", self.b),
            // The binary under test: the lab's hosts share this filesystem.
            agent: s(common::bin_path()),
            listen: format!("{}:{AGENT_PORT}", self.b),
            ssh: s(self.path("ssh-in-a")),
            extra: self.ssh_options(identity),
            allow_targets: vec!["/var/tmp/iotoll test:rw".into()],
        }
    }

    /// The processes in b's namespace.
    fn pids_in_b(&self) -> BTreeSet<u32> {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.netns("b")])
            .succeeds();
        out.split_whitespace()
            .map(|p| p.parse().expect("a pid"))
            .collect()
    }

    /// Whether a TCP connection from a to `addr` is accepted.
    fn connects_from_a(&self, addr: &str) -> bool {
        let (host, port) = addr.rsplit_once(':').expect("ADDR:PORT");
        Command::new("ip")
            .args(["netns", "exec", &self.netns("a"), "bash", "-c"])
            .arg(format!("exec 3<>/dev/tcp/{host}/{port}"))
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    }
}

impl Drop for SshLab {
    fn drop(&mut self) {
        if let Some(mut c) = self.sshd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = self.lab(&["down", &self.name]).output();
    }
}

fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
        .unwrap_or(false)
}

fn keygen(path: &Path) {
    Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "iotoll-test", "-f"])
        .arg(path)
        .succeeds();
}

fn wait_for(what: &str, t: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < t, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `f` on a thread inside the network namespace `ns` (the lab's hosts are
/// reachable only from inside the lab); this thread stays where it is.
fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).expect("the namespace");
    std::thread::scope(|s| {
        s.spawn(|| {
            use std::os::fd::AsRawFd;
            // SAFETY: setns on an open namespace file; it moves only this
            // short-lived thread.
            let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("the thread in the namespace")
    })
}

/// A console session from a to the agent with `key`: what the agent says
/// about itself, or the console's error.
fn console(lab: &SshLab, addr: &str, key: &[u8]) -> Result<iotoll_agent::wire::AgentInfo, String> {
    let address = addr.parse().expect("ADDR:PORT");
    let key = iotoll_net::auth::Key::from_bytes(key);
    in_netns(&lab.netns("a"), move || {
        let hosts = vec![HostSpec {
            name: "b".into(),
            address,
            data: vec![],
        }];
        let c = Console::connect(hosts, Some(key)).map_err(|e| e.to_string())?;
        c.info("b").cloned().ok_or_else(|| "no info".to_string())
    })
}

/// The command line of each process in b.
fn cmdlines_in_b(lab: &SshLab) -> Vec<Vec<String>> {
    (lab.pids_in_b().into_iter())
        .filter_map(|p| std::fs::read(format!("/proc/{p}/cmdline")).ok())
        .map(|c| {
            (c.split(|&b| b == 0))
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect()
        })
        .collect()
}

#[test]
fn an_agent_started_through_real_ssh_listens_and_leaves_nothing_behind() {
    let Some(lab) = SshLab::up("ssh") else { return };
    let before = lab.pids_in_b();
    let key = run_key().unwrap();
    let launch = lab.launch("user");
    let agent = SshAgent::start(&launch, &key, Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e}\nsshd: {}", lab.sshd_log()));
    assert_eq!(agent.listening(), format!("{}:{AGENT_PORT}", lab.b));
    // The run key opens a console session; the agent got every argument
    // as one word through the remote shell (the target has a space).
    let info = console(&lab, agent.listening(), &key)
        .unwrap_or_else(|e| panic!("{e}\nagent: {}", agent.stderr()));
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    let t: Vec<(&str, bool)> = (info.targets.iter())
        .map(|t| (t.path.as_str(), t.write))
        .collect();
    assert_eq!(t, [("/var/tmp/iotoll test", true)]);
    let other = run_key().unwrap();
    let refused = console(&lab, agent.listening(), &other).unwrap_err();
    assert!(refused.contains("host b"), "{refused}");
    eprintln!("another key: {refused}");
    // The key is on no command line in b (the agent's, the shell's, sshd's).
    let lines = cmdlines_in_b(&lab);
    let k = std::str::from_utf8(&key).unwrap();
    assert!(lines.iter().flatten().all(|w| !w.contains(k)), "{lines:?}");
    let bin = common::bin_path().to_str().unwrap().to_string();
    assert!(
        lines.iter().any(|l| l[..]
            == [
                &bin,
                "agent",
                "--listen",
                agent.listening(),
                "--auth-key",
                "-",
                "--allow-target",
                "/var/tmp/iotoll test:rw"
            ]),
        "no agent with the expected arguments in b: {lines:?}"
    );
    let t = Instant::now();
    agent.stop().unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    wait_for("b to hold only sshd again", Duration::from_secs(5), || {
        lab.pids_in_b() == before
    });
    assert!(!lab.connects_from_a(&format!("{}:{AGENT_PORT}", lab.b)));
}

#[test]
fn a_dropped_launcher_takes_its_agent_down() {
    let Some(lab) = SshLab::up("drop") else {
        return;
    };
    let before = lab.pids_in_b();
    let agent = SshAgent::start(
        &lab.launch("user"),
        &run_key().unwrap(),
        Duration::from_secs(20),
    )
    .unwrap_or_else(|e| panic!("{e}\nsshd: {}", lab.sshd_log()));
    drop(agent);
    wait_for("b to hold only sshd again", Duration::from_secs(5), || {
        lab.pids_in_b() == before
    });
}

#[test]
fn wrong_key_missing_agent_and_unreachable_hosts_are_clear_errors_in_time() {
    let Some(lab) = SshLab::up("err") else { return };
    let timeout = Duration::from_secs(8);
    let check = |l: &SshLaunch, want: &[&str]| {
        let t = Instant::now();
        let e = match SshAgent::start(l, &run_key().unwrap(), timeout) {
            Ok(a) => panic!("started: {a:?}"),
            Err(e) => e.with_host("b"),
        };
        assert!(
            t.elapsed() < timeout + Duration::from_secs(1),
            "{:?}",
            t.elapsed()
        );
        let msg = e.to_string();
        eprintln!("{msg}");
        assert!(
            msg.starts_with(&format!("host b ({}): ", l.destination)),
            "{msg}"
        );
        assert!(!msg.contains("Permanently added"), "{msg}");
        for w in want {
            assert!(msg.contains(w), "{w:?} not in {msg}");
        }
        e
    };
    // A key sshd does not know.
    check(
        &lab.launch("stranger"),
        &["ssh exited with 255: ", "Permission denied (publickey)"],
    );
    // Logged in, but no agent there.
    let mut l = lab.launch("user");
    l.agent = "/nonexistent/iotoll".into();
    check(&l, &["ssh exited with 127: ", "/nonexistent/iotoll"]);
    // A port nobody listens on.
    let mut l = lab.launch("user");
    l.extra.extend(["-o".into(), "Port=2".into()]);
    check(&l, &["ssh exited with 255: ", "Connection refused"]);
    // An address of the lab's subnet that no host has: no answer at all
    // (ARP fails); ssh's own error or iotoll's timeout, whichever is first.
    let mut l = lab.launch("user");
    let (net, _) = lab.b.rsplit_once('.').unwrap();
    l.destination = format!("root@{net}.200");
    let e = check(&l, &[]);
    assert!(
        matches!(
            e.kind,
            LaunchErrorKind::Timeout { .. } | LaunchErrorKind::Exited { .. }
        ),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("No route to host")
            || msg.contains("timed out")
            || msg.contains("no 'iotoll agent listening on' line"),
        "{msg}"
    );
}

/// `suite run --ssh` end to end: a pair a -> b where a is a lab host (its
/// agent started by the run in its namespace) and b a hosts-file host whose
/// agent the run starts through ssh (from inside the lab, where the console
/// runs), both on one per-run key; the stream runs, both hosts report, and
/// nothing is left in b after the run.
#[test]
fn suite_run_ssh_starts_the_agents_and_stops_them() {
    let Some(lab) = SshLab::up("suite") else {
        return;
    };
    let before = lab.pids_in_b();
    let s = |p: PathBuf| p.to_str().unwrap().to_string();
    let hosts = lab.path("hosts.toml");
    std::fs::write(
        &hosts,
        format!(
            "[hosts]\na = {{ lab = \"a\" }}\nb = {{ address = \"{b}:{AGENT_PORT}\", ssh = \"root@{b}\" }}\n",
            b = lab.b
        ),
    )
    .unwrap();
    let suite = lab.path("pair.toml");
    std::fs::write(
        &suite,
        "name = \"ssh-pair\"\nreps = 1\n[[test]]\nname = \"ab\"\nkind = \"net-stream\"\ndir = \"bidir\"\nramp = \"0s\"\ntime = \"1s\"\npairs = [[\"a\", \"b\"]]\n",
    )
    .unwrap();
    let db = s(lab.path("r.db"));
    let bin = s(common::bin_path());
    let mut c = common::iotoll();
    c.env("IOTOLL_LAB_DIR", lab.dir.path()).args([
        "suite",
        "run",
        &s(suite),
        "--lab",
        &lab.name,
        "--hosts",
        &s(hosts),
        "--db",
        &db,
        "--ssh",
        "--ssh-agent",
        &bin,
    ]);
    for a in lab.ssh_options("user") {
        c.arg(format!("--ssh-arg={a}"));
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}\nsshd: {}", lab.sshd_log());
    assert!(err.contains("started 1 agent(s) through ssh"), "{err}");
    let run = common::show(&db, "1");
    common::validate_run(&run);
    let doc = &run["tests"][0]["reps"][0]["doc"];
    let names: Vec<&str> = (doc["hosts"].as_array().unwrap().iter())
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b", "a"], "{doc}");
    let p = &doc["pairs"][0];
    assert!(p["client_to_server_bytes"].as_u64().unwrap() > 0, "{p}");
    assert!(p["server_to_client_bytes"].as_u64().unwrap() > 0, "{p}");
    wait_for("b to hold only sshd again", Duration::from_secs(5), || {
        lab.pids_in_b() == before
    });
}
