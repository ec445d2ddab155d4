//! `iotoll iscsi discover` and `iotoll iscsi luns`, and the login flags
//! `disk run` shares with them.

use crate::{output, usage};
use anyhow::Result;
use clap::{Args, Subcommand};
use iotoll_disk::spec::IscsiOptions;
use iotoll_iscsi::{inquiry, url};
use iotoll_model::parse_duration;
use iotoll_report::text::iscsi as text;
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
    match parse_duration(s).map_err(|e| e.to_string())? {
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

fn discover(portal: &str, login: &LoginArgs, json: bool) -> Result<()> {
    let (host, port) = url::parse_portal(portal).map_err(usage)?;
    let cfg = login.config()?;
    let d = inquiry::discover(url::format_portal(&host, port), &cfg)?;
    output::show(json, &d, |d| text::discovery(d, &cfg.initiator_name))
}

fn luns(which: &str, login: &LoginArgs, json: bool) -> Result<()> {
    let u = url::parse(which).map_err(usage)?;
    let list = inquiry::luns(&u, &login.config()?)?;
    output::show(json, &list, text::luns)
}
