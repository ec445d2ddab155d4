//! `iotoll iscsi discover` and `iotoll iscsi luns`, and the login flags
//! `disk run` shares with them.

use crate::{duration_arg, output, usage};
use anyhow::Result;
use clap::{Args, Subcommand};
use iotoll_disk::spec::IscsiOptions;
use iotoll_iscsi::{scsi, session, url, Session};
use iotoll_model::text::printable;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Subcommand)]
pub enum IscsiCmd {
    /// List the targets a portal offers (SendTargets discovery).
    #[command(
        after_help = "Exit status: 0 done, 1 the portal could not be reached or refused the login, 2 bad input."
    )]
    Discover {
        /// The portal: HOST[:PORT] (port 3260 by default; IPv6 in brackets).
        portal: String,
        #[command(flatten)]
        login: LoginArgs,
        /// Print one JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
    /// List a target's LUNs: vendor, product, capacity and block size of each.
    #[command(
        after_help = "URL: iscsi://HOST[:PORT]/IQN, or .../IQN/LUN for one LUN.\nExit status: 0 done, 1 the target could not be reached or refused the login, 2 bad input."
    )]
    Luns {
        /// iscsi://HOST[:PORT]/IQN[/LUN]
        url: String,
        #[command(flatten)]
        login: LoginArgs,
        /// Print one JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
}

/// How iotoll's initiator logs in (disk run with iscsi:// targets, and the
/// iscsi commands).
#[derive(Args, Clone)]
pub struct LoginArgs {
    /// File with the CHAP credentials: `username = ...`, `password = ...`, and for mutual CHAP `username_in`, `password_in` (the target's); must not be readable by group or others. Secrets are never taken on the command line or in the URL.
    #[arg(long, value_name = "FILE")]
    chap_secret_file: Option<PathBuf>,
    /// How long the target may take to answer a command, or to complete a whole login or discovery, before the run fails.
    #[arg(long, value_name = "DUR", value_parser = timeout_arg, default_value = "10s")]
    io_timeout: Duration,
    /// Ask for CRC32C header digests (the login fails if the target refuses).
    #[arg(long)]
    header_digest: bool,
    /// Ask for CRC32C data digests (the login fails if the target refuses).
    #[arg(long)]
    data_digest: bool,
    /// InitiatorName to log in with [default: iqn.2026-11.org.iotoll:HOSTNAME].
    #[arg(long, value_name = "IQN")]
    initiator_name: Option<String>,
}

impl LoginArgs {
    pub fn options(&self) -> IscsiOptions {
        IscsiOptions {
            chap_secret_file: self.chap_secret_file.clone(),
            io_timeout: self.io_timeout,
            header_digest: self.header_digest,
            data_digest: self.data_digest,
            initiator_name: self.initiator_name.clone(),
        }
    }

    fn config(&self) -> Result<iotoll_iscsi::Config> {
        self.options().config().map_err(usage)
    }
}

/// `--io-timeout`: a duration of more than 0, refused by the parser so that
/// `disk run` (which never calls [`LoginArgs::config`]) exits 2 on it too
/// instead of failing to connect.
fn timeout_arg(s: &str) -> Result<Duration, String> {
    match duration_arg(s)? {
        d if d.is_zero() => Err("must be more than 0".into()),
        d => Ok(d),
    }
}

pub fn main(cmd: IscsiCmd) -> Result<()> {
    match cmd {
        IscsiCmd::Discover {
            portal,
            login,
            json,
        } => discover(&portal, &login, json),
        IscsiCmd::Luns { url, login, json } => luns(&url, &login, json),
    }
}

#[derive(Serialize)]
struct Discovery {
    portal: String,
    targets: Vec<session::Discovered>,
}

fn discover(portal: &str, login: &LoginArgs, json: bool) -> Result<()> {
    let (host, port) = url::parse_portal(portal).map_err(usage)?;
    let portal = url::format_portal(&host, port);
    let cfg = login.config()?;
    let targets = session::discover(&portal, &cfg)?;
    if json {
        return output::print_json(&Discovery { portal, targets });
    }
    if targets.is_empty() {
        println!(
            "{portal}: no targets offered to this initiator ({})",
            cfg.initiator_name
        );
    }
    // Names and addresses are the target's word: shown, never obeyed by
    // the terminal.
    for t in &targets {
        println!("{}", printable(&t.name));
        for a in &t.addresses {
            println!("    {}", printable(a));
        }
    }
    Ok(())
}

/// One LUN as `iscsi luns` reports it.
#[derive(Serialize)]
struct LunInfo {
    lun: u64,
    url: String,
    /// SCSI peripheral device type (0: disk).
    device_type: u8,
    vendor: String,
    product: String,
    revision: String,
    /// Absent when READ CAPACITY(16) failed (then `error` says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    block_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    capacity_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
struct LunList {
    portal: String,
    target: String,
    session: iotoll_iscsi::SessionInfo,
    luns: Vec<LunInfo>,
}

fn luns(text: &str, login: &LoginArgs, json: bool) -> Result<()> {
    let u = url::parse(text).map_err(usage)?;
    let cfg = login.config()?;
    let mut s = Session::login(&u.portal(), &u.iqn, &cfg, 1)?;
    let numbers = match u.lun {
        Some(l) => vec![l],
        None => s.report_luns().map_err(|e| anyhow::anyhow!("{u}: {e}"))?,
    };
    let mut list = Vec::new();
    for n in numbers {
        list.push(lun_info(&mut s, &u, n)?);
    }
    let doc = LunList {
        portal: u.portal(),
        target: u.iqn.clone(),
        session: s.info.clone(),
        luns: list,
    };
    let _ = s.logout();
    if json {
        return output::print_json(&doc);
    }
    println!("{} at {} ({} LUNs)", doc.target, doc.portal, doc.luns.len());
    println!(
        "{:>5}  {:<8} {:<16} {:<4} {:>6} {:>14}  url",
        "LUN", "vendor", "product", "rev", "block", "capacity"
    );
    for l in &doc.luns {
        let cap = match (l.capacity_bytes, &l.error) {
            (Some(c), _) => iotoll_model::format_size(c),
            (None, Some(e)) => printable(e).into_owned(),
            (None, None) => "-".into(),
        };
        // INQUIRY's strings are the target's word, as is a sense's text.
        println!(
            "{:>5}  {:<8} {:<16} {:<4} {:>6} {:>14}  {}",
            l.lun,
            printable(&l.vendor),
            printable(&l.product),
            printable(&l.revision),
            l.block_size.map_or("-".into(), |b| b.to_string()),
            cap,
            l.url
        );
    }
    Ok(())
}

fn lun_info(s: &mut Session, u: &url::IscsiUrl, lun: u64) -> Result<LunInfo> {
    let i = s.inquiry(lun).map_err(|e| anyhow::anyhow!("{u}: {e}"))?;
    let mut info = LunInfo {
        lun,
        url: u.with_lun(lun).to_string(),
        device_type: i.peripheral_type,
        vendor: i.vendor,
        product: i.product,
        revision: i.revision,
        block_size: None,
        capacity_bytes: None,
        error: None,
    };
    if i.peripheral_qualifier != 0 {
        info.error = Some("no such LUN".into());
        return Ok(info);
    }
    if i.peripheral_type != 0 {
        info.error = Some(format!(
            "not a disk: {}",
            scsi::device_type_name(i.peripheral_type)
        ));
        return Ok(info);
    }
    match s.read_capacity(lun) {
        Ok(c) => {
            info.block_size = Some(c.block_size);
            info.capacity_bytes = Some(c.bytes());
        }
        // The LUN's own failure goes in its row; a session failure ends all.
        Err(e) if e.kind == iotoll_iscsi::ErrorKind::Scsi => info.error = Some(e.msg),
        Err(e) => return Err(e.into()),
    }
    Ok(info)
}
