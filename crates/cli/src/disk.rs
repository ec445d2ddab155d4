//! `iotoll disk run` and `iotoll disk specs`.

use crate::{duration_arg, output, size_arg};
use anyhow::Result;
use clap::{Args, Subcommand};
use iotoll_disk::{DiskError, DiskSpec, EngineChoice, BUILTIN_SPECS};
use iotoll_model::format_size;
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
    #[command(flatten)]
    window: crate::Window,
    /// Allow writing to an existing file or block device (destroys its contents).
    #[arg(long)]
    allow_destructive: bool,
    #[command(flatten)]
    measure: crate::MeasureOpts,
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
            ramp: self.window.ramp,
            time: self.window.time,
            config: self.measure.config.clone(),
            allow_destructive: self.allow_destructive,
            ..DiskSpec::default()
        };
        if let Some(name) = &self.spec {
            s.apply_builtin(name)?;
        }
        s.bs = self.bs.unwrap_or(s.bs);
        s.read_pct = self.read.unwrap_or(s.read_pct);
        s.random_pct = self.random.unwrap_or(s.random_pct);
        s.qd = self.qd.unwrap_or(s.qd);
        Ok(s)
    }
}

pub fn main(cmd: DiskCmd) -> Result<()> {
    match cmd {
        DiskCmd::Specs { json } => specs(json),
        DiskCmd::Run(a) => {
            let spec = a.to_spec().map_err(crate::usage_or)?;
            crate::measure(&a.measure, |ctl| iotoll_disk::run(&spec, ctl))
        }
    }
}

fn specs(json: bool) -> Result<()> {
    if json {
        return output::print_json(&BUILTIN_SPECS);
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
