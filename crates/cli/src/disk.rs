//! `iotoll disk run` and `iotoll disk specs`.

use crate::{output, UsageError};
use anyhow::Result;
use clap::{Args, Subcommand};
use iotoll_disk::{DiskError, DiskSpec, EngineChoice, BUILTIN_SPECS};
use iotoll_model::{format_size, parse_duration, parse_size};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Subcommand)]
pub enum DiskCmd {
    /// Run a disk workload and measure it beside whole-host CPU.
    Run(Box<RunArgs>),
    /// List the built-in access specifications.
    Specs {
        /// Print one JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
}

fn size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

fn duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

#[derive(Args)]
#[command(
    after_help = "Without --target, iotoll creates a temporary test file (in $TMPDIR, 256m unless --size), fills it with non-repeating data and deletes it afterwards.
An existing file or block device is only written with --allow-destructive; read-only workloads (--read 100) may run on it without.
Exit status: 0 done, 1 runtime failure, 2 bad input, 130 interrupted (Ctrl-C; the figures measured so far are printed)."
)]
pub struct RunArgs {
    /// File or block device to test [default: a temporary test file].
    #[arg(long, value_name = "PATH")]
    target: Option<PathBuf>,
    /// Create a test file at --target if it does not exist (removed afterwards unless --keep).
    #[arg(long)]
    create: bool,
    /// Keep the test file iotoll created.
    #[arg(long)]
    keep: bool,
    /// Built-in access specification (see `iotoll disk specs`); --qd may still override its QD.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["bs", "read", "random"])]
    spec: Option<String>,
    /// Transfer size (512, 4k, 64k, 1m: k = 1024) [default: 4k].
    #[arg(long, value_name = "SIZE", value_parser = size_arg, allow_hyphen_values = true)]
    bs: Option<u64>,
    /// Percent of I/Os that are reads, 0-100 [default: 100].
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u32).range(0..=100), allow_negative_numbers = true)]
    read: Option<u32>,
    /// Percent of I/Os at random offsets (the rest continue sequentially), 0-100 [default: 100].
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u32).range(0..=100), allow_negative_numbers = true)]
    random: Option<u32>,
    /// Outstanding I/Os per worker [default: 1, or the spec's].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    qd: Option<u32>,
    /// Workers: each its own stream of I/Os over the same target.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    workers: u32,
    /// Length of the region tested [default: the target past --offset; 256m for a test file].
    #[arg(long, value_name = "SIZE", value_parser = size_arg, allow_hyphen_values = true)]
    size: Option<u64>,
    /// Start of the region tested.
    #[arg(long, value_name = "SIZE", value_parser = size_arg, default_value = "0", allow_hyphen_values = true)]
    offset: u64,
    /// Alignment of I/O offsets [default: the target's logical block size].
    #[arg(long, value_name = "SIZE", value_parser = size_arg, allow_hyphen_values = true)]
    align: Option<u64>,
    /// Delay before each burst of I/Os (Iometer's transfer delay).
    #[arg(long, value_name = "DUR", value_parser = duration_arg, default_value = "0ms")]
    burst_delay: Duration,
    /// I/Os per burst.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    burst_len: u32,
    /// I/O engine: io_uring, psync or null (completes every I/O at once, touching nothing) [default: io_uring, psync with a note if unavailable].
    #[arg(long, value_name = "ENGINE", value_parser = EngineChoice::parse)]
    engine: Option<EngineChoice>,
    /// Go through the page cache instead of O_DIRECT.
    #[arg(long)]
    buffered: bool,
    /// Ramp-up before the measurement window (500ms, 4s, 2m, 1h).
    #[arg(long, value_name = "DUR", value_parser = duration_arg, default_value = "1s")]
    ramp: Duration,
    /// Length of the measurement window.
    #[arg(long, value_name = "DUR", value_parser = duration_arg, default_value = "10s")]
    time: Duration,
    /// Configuration label recorded with the result (e.g. "sw-initiator").
    #[arg(long, value_name = "LABEL")]
    config: Option<String>,
    /// Print one JSON document on stdout (see docs/json.md).
    #[arg(long)]
    json: bool,
    /// No progress line on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Allow writing to an existing file or block device (destroys its contents).
    #[arg(long)]
    allow_destructive: bool,
    /// Other processes using more than this % of the host's CPU in the
    /// window make the result "interfered" (a warning; see docs/json.md).
    #[arg(long, value_name = "PCT", value_parser = crate::pct_arg, default_value = "5")]
    interference_pct: f64,
    /// Results database the run is stored in [default: $XDG_DATA_HOME/iotoll/results.db].
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Do not store the result.
    #[arg(long, conflicts_with = "db")]
    no_db: bool,
}

impl RunArgs {
    fn to_spec(&self) -> Result<DiskSpec, DiskError> {
        let mut s = DiskSpec {
            target: self.target.clone(),
            create: self.create,
            keep: self.keep,
            workers: self.workers,
            size: self.size,
            offset: self.offset,
            align: self.align,
            burst_delay: self.burst_delay,
            burst_len: self.burst_len,
            engine: self.engine.unwrap_or(EngineChoice::Auto),
            buffered: self.buffered,
            ramp: self.ramp,
            time: self.time,
            config: self.config.clone(),
            allow_destructive: self.allow_destructive,
            ..DiskSpec::default()
        };
        if let Some(name) = &self.spec {
            s.apply_builtin(name)?;
        }
        if let Some(v) = self.bs {
            s.bs = v;
        }
        if let Some(v) = self.read {
            s.read_pct = v;
        }
        if let Some(v) = self.random {
            s.random_pct = v;
        }
        if let Some(v) = self.qd {
            s.qd = v;
        }
        Ok(s)
    }
}

pub fn main(cmd: DiskCmd) -> Result<()> {
    match cmd {
        DiskCmd::Specs { json } => specs(json),
        DiskCmd::Run(a) => run(*a),
    }
}

fn usage_or(e: DiskError) -> anyhow::Error {
    if e.is_usage() {
        UsageError(e.to_string()).into()
    } else {
        e.into()
    }
}

fn run(a: RunArgs) -> Result<()> {
    let spec = a.to_spec().map_err(usage_or)?;
    let o = crate::MeasureOpts {
        json: a.json,
        quiet: a.quiet,
        db: a.db.clone(),
        no_db: a.no_db,
        interference_pct: a.interference_pct,
    };
    crate::measure(&o, |ctl| iotoll_disk::run(&spec, ctl))
}

fn specs(json: bool) -> Result<()> {
    if json {
        output::print_json(&BUILTIN_SPECS)?;
        return Ok(());
    }
    println!(
        "{:<22} {:>6} {:>7} {:>9} {:>4}",
        "spec", "size", "read %", "random %", "QD"
    );
    for s in BUILTIN_SPECS {
        println!(
            "{:<22} {:>6} {:>7} {:>9} {:>4}",
            s.name,
            format_size(s.bs),
            s.read_pct,
            s.random_pct,
            s.qd
        );
    }
    Ok(())
}
