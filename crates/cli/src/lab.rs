//! `iotoll lab list | up | down | status | exec`.

use crate::{output, usage};
use anyhow::Result;
use clap::Subcommand;
use iotoll_lab::{LabError, LabState};
use std::io::IsTerminal;
use std::os::unix::process::CommandExt;

#[derive(Subcommand)]
pub enum LabCmd {
    /// The built-in labs, one line each, and the labs that are up.
    List,
    /// Bring a lab up: namespaces, veth adapters, a bridge, shaping, MTU, offloads, TCP settings.
    #[command(after_help = "Examples:
  iotoll lab up pair-1g
  iotoll lab up pair-10g --set mtu=9000
  iotoll lab up quad-100m --set rate=1gbit --set offloads.gro=off
  iotoll lab up ./my-lab.toml --replace
  iotoll lab up pair --set name=pair2          (a second copy, named pair2)

--set KEY=VALUE keys: name, description, subnet, rate, mtu, shaper, delay, loss,
congestion_control, tcp_rmem, tcp_wmem, offloads.{tso,gso,gro,sg,rx_checksum,tx_checksum}.
A link key sets the lab-wide default and overrides every link; a TCP key
every host. Format: docs/lab.md. Needs root (CAP_NET_ADMIN).
State: /run/iotoll/iotoll-NAME.json ($IOTOLL_LAB_DIR overrides the directory).
Exit status: 0 up, 1 a system failure (what was created is removed again),
2 bad lab name, file, key or value, a kernel feature missing, or the lab already up.")]
    Up {
        /// A built-in lab's name (see `lab list`) or a lab file (TOML).
        #[arg(value_name = "NAME|FILE")]
        lab: String,
        /// Override a key of the lab (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Take the lab down first if it is up (or half up).
        #[arg(long)]
        replace: bool,
        /// Print the lab's state as one JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Take a lab down: remove exactly the namespaces its state file records.
    #[command(
        after_help = "Works after a crash or kill -9 of `lab up` too. Processes still running in the lab's hosts are killed.\nExit status: 0 removed, 1 not up or a removal failed."
    )]
    Down {
        /// The lab's name.
        name: String,
    },
    /// The hosts, addresses and links of one lab that is up, or of all.
    #[command(
        after_help = "Examples:\n  iotoll lab status\n  iotoll lab status pair-1g --json | jq -r '.hosts[] | select(.name==\"b\") | .addresses[0]'\nExit status: 0 shown, 1 the lab is not up."
    )]
    Status {
        /// The lab's name [default: every lab that is up].
        name: Option<String>,
        /// Print one JSON document on stdout: the lab's state (`hosts`: `name`, `addresses`, `links`, ...), or {"labs": [...]} without NAME.
        #[arg(long)]
        json: bool,
    },
    /// Run a command in a lab host's namespace (as `ip netns exec`).
    #[command(after_help = "Examples:
  iotoll lab exec pair-1g b -- iperf3 -s -1
  iotoll lab exec pair-1g a -- iperf3 -c 198.18.0.2 -t 5
  iotoll lab exec pair-1g b -- iotoll net serve --once
  iotoll lab exec pair-1g a -- iotoll net stream 198.18.0.2 --time 10s
The command's exit status is passed through.")]
    Exec {
        /// The lab's name.
        name: String,
        /// The host (as named in the lab).
        host: String,
        /// The command and its arguments (after --).
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
}

/// A lab error for the binary: usage (exit 2) or not (exit 1).
fn lab_err(e: LabError) -> anyhow::Error {
    if e.is_usage() {
        usage(e)
    } else {
        e.into()
    }
}

pub fn main(cmd: LabCmd) -> Result<()> {
    match cmd {
        LabCmd::List => list(),
        LabCmd::Up {
            lab,
            sets,
            replace,
            json,
        } => up(&lab, &sets, replace, json),
        LabCmd::Down { name } => {
            let st = iotoll_lab::down(&name).map_err(lab_err)?;
            eprintln!(
                "iotoll: lab {name} is down ({} namespace(s) removed)",
                st.namespaces.len()
            );
            Ok(())
        }
        LabCmd::Status { name, json } => status(name.as_deref(), json),
        LabCmd::Exec {
            name,
            host,
            command,
        } => exec(&name, &host, &command),
    }
}

fn list() -> Result<()> {
    println!("built-in labs:");
    for n in iotoll_lab::builtin_names() {
        println!(
            "  {n:<10} {}",
            iotoll_lab::builtin_description(n).unwrap_or_default()
        );
    }
    let up = iotoll_lab::running().map_err(lab_err)?;
    if up.is_empty() {
        println!("labs up: none");
    } else {
        println!("labs up:");
        for s in &up {
            println!(
                "  {:<10} {} hosts  {}  from {}{}",
                s.name,
                s.hosts.len(),
                s.subnet,
                s.source,
                if s.complete { "" } else { "  (incomplete)" }
            );
        }
    }
    Ok(())
}

fn up(lab: &str, sets: &[String], replace: bool, json: bool) -> Result<()> {
    let def = iotoll_lab::load(lab, sets).map_err(lab_err)?;
    let tty = std::io::stderr().is_terminal();
    let big = def.hosts.len() > 4;
    let mut progress = |done: usize, total: usize, host: &str| {
        if big && tty {
            eprint!(
                "\r\x1b[Kiotoll: lab {}: host {done}/{total} ({host})",
                def.name
            );
            if done == total {
                eprintln!();
            }
        }
    };
    let st = iotoll_lab::up_with_progress(&def, replace, &mut progress).map_err(lab_err)?;
    if json {
        return output::print_json(&st);
    }
    print_state(&st);
    Ok(())
}

fn print_state(st: &LabState) {
    println!(
        "lab {}  from {}{}  subnet {}  switch netns {}{}",
        st.name,
        st.source,
        if st.sets.is_empty() {
            String::new()
        } else {
            format!(" --set {}", st.sets.join(" --set "))
        },
        st.subnet,
        st.switch,
        if st.complete {
            ""
        } else {
            "  INCOMPLETE (its `up` did not finish: `lab down` it)"
        }
    );
    for h in &st.hosts {
        let mut tcp = Vec::new();
        if let Some(c) = &h.tcp.congestion_control {
            tcp.push(format!("cc {c}"));
        }
        if let Some(m) = &h.tcp.tcp_rmem {
            tcp.push(format!("rmem {m}"));
        }
        if let Some(m) = &h.tcp.tcp_wmem {
            tcp.push(format!("wmem {m}"));
        }
        println!(
            "  {:<10} netns {}{}",
            h.name,
            h.netns,
            if tcp.is_empty() {
                String::new()
            } else {
                format!("  {}", tcp.join(", "))
            }
        );
        for l in &h.links {
            let off: Vec<String> = l
                .offloads
                .list()
                .iter()
                .map(|(n, on)| format!("{n} {}", if *on { "on" } else { "off" }))
                .collect();
            println!(
                "    {:<5} {:<16} mtu {:<5} {}{}",
                l.ifname,
                format!("{}/{}", l.address, l.prefix_len),
                l.mtu,
                match (&l.rate, &l.shaper) {
                    (Some(r), Some(s)) => format!("{r} ({s})"),
                    _ => "unshaped".into(),
                },
                if off.is_empty() {
                    String::new()
                } else {
                    format!("  {}", off.join(", "))
                }
            );
        }
    }
}

fn status(name: Option<&str>, json: bool) -> Result<()> {
    match name {
        Some(n) => {
            let st = iotoll_lab::status(n)
                .map_err(lab_err)?
                .ok_or_else(|| anyhow::anyhow!("lab '{n}' is not up"))?;
            if json {
                return output::print_json(&st);
            }
            print_state(&st);
        }
        None => {
            let all = iotoll_lab::running().map_err(lab_err)?;
            if json {
                return output::print_json(&serde_json::json!({ "labs": all }));
            }
            if all.is_empty() {
                println!("no lab is up");
            }
            for st in &all {
                print_state(st);
            }
        }
    }
    Ok(())
}

fn exec(name: &str, host: &str, command: &[String]) -> Result<()> {
    iotoll_lab::need_enter().map_err(lab_err)?;
    let st = iotoll_lab::status(name)
        .map_err(lab_err)?
        .ok_or_else(|| anyhow::anyhow!("lab '{name}' is not up"))?;
    let Some(h) = st.host(host) else {
        let names: Vec<&str> = st.hosts.iter().map(|h| h.name.as_str()).collect();
        return Err(usage(format!(
            "lab '{name}' has no host '{host}' (hosts: {})",
            names.join(", ")
        )));
    };
    if !st.complete {
        eprintln!("iotoll: warning: lab {name} is incomplete (its `up` did not finish)");
    }
    // `ip netns exec` also remounts /sys for the namespace; exec passes
    // the command's exit status (or signal) straight through.
    let e = std::process::Command::new("ip")
        .args(["netns", "exec", &h.netns])
        .args(command)
        .exec();
    Err(anyhow::anyhow!("cannot run ip netns exec: {e}"))
}

/// The lab a suite runs in (`suite run --lab`): one that is up, or one
/// brought up for the run and taken down when this is dropped (at the end
/// of the run, however it ends).
pub struct SuiteLab {
    pub run: iotoll_suite::runner::LabRun,
    brought_up: bool,
}

impl Drop for SuiteLab {
    fn drop(&mut self) {
        if self.brought_up {
            match iotoll_lab::down(&self.run.lab.name) {
                Ok(_) => eprintln!("iotoll: lab {} taken down", self.run.lab.name),
                Err(e) => eprintln!(
                    "iotoll: lab {} could not be taken down: {e} (try `iotoll lab down {}`)",
                    self.run.lab.name, self.run.lab.name
                ),
            }
        }
    }
}

impl SuiteLab {
    /// What the run's disclosure records: the lab, its settings, and where
    /// the endpoint and the tests ran.
    pub fn disclosure(&self) -> serde_json::Value {
        let mut d = self.run.lab.disclosure();
        d["server"] = self.run.server.clone().into();
        d["client"] = self.run.client.clone().into();
        d
    }
}

/// The first of `names` that is among `hosts`.
fn first_of<'a>(hosts: &[String], names: &[&'a str]) -> Option<&'a str> {
    names.iter().copied().find(|n| hosts.iter().any(|h| h == n))
}

/// The endpoint's host and the tests' host among `hosts` of lab `lab`:
/// as named (checked), or by the built-ins' conventions.
fn pick_hosts(
    lab: &str,
    hosts: &[String],
    server: Option<&str>,
    client: Option<&str>,
) -> Result<(String, String)> {
    let all = hosts.join(", ");
    let named = |which: &str, h: Option<&str>| -> Result<Option<String>> {
        match h {
            Some(h) if !hosts.iter().any(|x| x == h) => Err(usage(format!(
                "--{which} {h}: lab {lab} has no such host (its hosts: {all})"
            ))),
            h => Ok(h.map(str::to_string)),
        }
    };
    let server = named("server", server)?
        .or_else(|| first_of(hosts, &["server", "target", "b"]).map(str::to_string))
        .ok_or_else(|| {
            usage(format!(
                "name the endpoint's host with --server (lab {lab}'s hosts: {all})"
            ))
        })?;
    let client = named("client", client)?
        .or_else(|| {
            first_of(hosts, &["c1", "initiator", "a"])
                .filter(|c| *c != server)
                .map(str::to_string)
                .or_else(|| hosts.iter().find(|h| **h != server).cloned())
        })
        .ok_or_else(|| usage(format!("lab {lab} has no host besides {server}")))?;
    anyhow::ensure!(
        server != client,
        usage(format!(
            "--server and --client are both {server}: the endpoint and the tests need two hosts"
        ))
    );
    Ok((server, client))
}

/// A lab as found: up already, or only defined (to bring up).
enum Found {
    Up(LabState),
    Defined(iotoll_lab::LabDef),
}

impl Found {
    /// The lab `lab` (a name that is up, a built-in or a file, with `sets`),
    /// nothing created.
    fn find(lab: &str, sets: &[String]) -> Result<Found> {
        Ok(match iotoll_lab::status(lab).map_err(lab_err)? {
            Some(st) => Found::Up(st),
            None => {
                let def = iotoll_lab::load(lab, sets).map_err(lab_err)?;
                match iotoll_lab::status(&def.name).map_err(lab_err)? {
                    Some(st) => Found::Up(st),
                    None => Found::Defined(def),
                }
            }
        })
    }

    /// Its name and its hosts' names.
    fn names(&self) -> (&str, Vec<String>) {
        match self {
            Found::Up(st) => (&st.name, st.hosts.iter().map(|h| h.name.clone()).collect()),
            Found::Defined(d) => (&d.name, d.hosts.iter().map(|h| h.name.clone()).collect()),
        }
    }
}

/// The host names of lab `lab` (up, or as it would be brought up), for a
/// multi-host suite's hosts to be checked before anything is created.
pub fn host_names(lab: &str, sets: &[String]) -> Result<Vec<String>> {
    Ok(Found::find(lab, sets)?.names().1)
}

/// The built-in labs that have every one of `hosts`, for hints.
pub fn builtins_with(hosts: &[&str]) -> Vec<&'static str> {
    (iotoll_lab::builtin_names().iter().copied())
        .filter(|n| {
            iotoll_lab::load(n, &[])
                .is_ok_and(|d| (hosts.iter()).all(|h| d.hosts.iter().any(|x| x.name == *h)))
        })
        .collect()
}

/// Finds or brings up the lab `lab` (a name that is up, a built-in or a
/// file, with `sets`), and picks the endpoint's and the tests' hosts, all
/// checked before anything is created.
pub fn for_suite(
    lab: &str,
    sets: &[String],
    server: Option<&str>,
    client: Option<&str>,
) -> Result<SuiteLab> {
    let found = Found::find(lab, sets)?;
    let (name, hosts) = found.names();
    if let Found::Up(st) = &found {
        if !sets.is_empty() {
            return Err(usage(format!(
                "lab {name} is already up (with its own settings: {}); take it down (`iotoll lab down {name}`) to run with --lab-set, or drop --lab-set",
                if st.sets.is_empty() { "none".to_string() } else { st.sets.join(" ") },
            )));
        }
    }
    let (server, client) = pick_hosts(name, &hosts, server, client)?;
    let (st, brought_up) = match found {
        Found::Up(st) => (st, false),
        Found::Defined(def) => {
            eprintln!("iotoll: bringing lab {} up for this run", def.name);
            (iotoll_lab::up(&def, false).map_err(lab_err)?, true)
        }
    };
    // A lab brought up for the run comes down when this is dropped.
    let guard = SuiteLab {
        run: iotoll_suite::runner::LabRun {
            lab: st,
            server,
            client,
        },
        brought_up,
    };
    let st = &guard.run.lab;
    anyhow::ensure!(
        st.complete,
        format!(
            "lab {} is only half up (its `lab up` did not finish); `iotoll lab down {}` and try again",
            st.name, st.name
        )
    );
    Ok(guard)
}
