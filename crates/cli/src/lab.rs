//! `iotoll lab list | up | down | status | exec`.

use crate::output;
use anyhow::Result;
use clap::Subcommand;
use iotoll_lab::LabError;
use iotoll_report::text::lab as text;

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
    crate::usage_if(LabError::is_usage)(e)
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
        } => {
            let warn = &mut |w: &str| eprintln!("iotoll: warning: {w}");
            Err(lab_err(iotoll_lab::exec(&name, &host, &command, warn)))
        }
    }
}

fn list() -> Result<()> {
    print!("{}", text::builtins());
    print!(
        "{}",
        text::running(&iotoll_lab::running().map_err(lab_err)?)
    );
    Ok(())
}

fn up(lab: &str, sets: &[String], replace: bool, json: bool) -> Result<()> {
    let def = iotoll_lab::load(lab, sets).map_err(lab_err)?;
    // A small lab is up before a progress line would be read.
    let mut term = iotoll_report::term::TermProgress::new(def.hosts.len() <= 4);
    let mut progress = |done, total, host: &str| term.lab_host(&def.name, done, total, host);
    let st = iotoll_lab::up_with_progress(&def, replace, &mut progress).map_err(lab_err)?;
    output::show(json, &st, text::state)
}

fn status(name: Option<&str>, json: bool) -> Result<()> {
    if let Some(n) = name {
        let st = iotoll_lab::status(n)
            .map_err(lab_err)?
            .ok_or_else(|| anyhow::anyhow!("lab '{n}' is not up"))?;
        for d in iotoll_lab::cpu_drift(&st) {
            eprintln!("iotoll: lab {n}: CPU set drifted: {d}");
        }
        return output::show(json, &st, text::state);
    }
    let all = iotoll_lab::running().map_err(lab_err)?;
    if json {
        return output::print_json(&serde_json::json!({ "labs": all }));
    }
    if all.is_empty() {
        println!("no lab is up");
    }
    for st in &all {
        print!("{}", text::state(st));
    }
    Ok(())
}
