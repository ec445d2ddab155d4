//! `iotoll disk run` and `iotoll disk specs`.

use crate::output;
use anyhow::Result;
use clap::{Args, Subcommand};
use iotoll_disk::{builtin_specs, DiskError, DiskRequest, EngineChoice};
use iotoll_model::{parse_duration, parse_size};
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
Several targets (--target A --target B, or --target A,B) are tested at once, each over the same region: --workers N workers per target (Iometer's worker per target), or with --spread N workers that each have every target, --qd I/Os outstanding on each (docs/disk.md draws both).
An existing file, block device or iSCSI LUN is only written with --allow-destructive; read-only workloads (--read 100) may run on it without.
An iSCSI target is driven by iotoll's own initiator, one session per worker (docs/iscsi.md): `iotoll iscsi discover HOST` lists targets, `iotoll iscsi luns URL` their LUNs; a CHAP secret is read only from --chap-secret-file.
Exit status: 0 done, 1 runtime failure, 2 bad input, 130 interrupted (Ctrl-C; the figures measured so far are printed)."
)]
pub struct RunArgs {
    /// File, block device or iSCSI LUN (iscsi://HOST[:PORT]/IQN/LUN, driven by iotoll's own initiator) to test; repeat it (or give a comma list) for several targets [default: a temporary test file].
    #[arg(long, value_name = "PATH|URL", value_delimiter = ',')]
    target: Vec<PathBuf>,
    /// Create a test file at each --target that does not exist (removed afterwards unless --keep).
    #[arg(long)]
    create: bool,
    /// Keep the test files iotoll created.
    #[arg(long)]
    keep: bool,
    /// Access specification, built-in (see `iotoll disk specs`), single-line or mixed; --qd may still override its QD.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["bs", "read", "random"])]
    spec: Option<String>,
    /// Transfer size (512, 4k, 64k, 1m: k = 1024) [default: 4k].
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    bs: Option<u64>,
    /// Percent of I/Os that are reads, 0-100 [default: 100].
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u32).range(0..=100), allow_negative_numbers = true)]
    read: Option<u32>,
    /// Percent of I/Os at random offsets (the rest continue sequentially), 0-100 [default: 100].
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u32).range(0..=100), allow_negative_numbers = true)]
    random: Option<u32>,
    /// Outstanding I/Os per worker and target (Iometer counts them per target) [default: 1, or the spec's].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    qd: Option<u32>,
    /// Workers per target (in all with --spread), each its own stream of I/Os; 0: one per CPU (of --cpus, else every online CPU), each pinned to its CPU.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    workers: u32,
    /// Give every worker all the targets, I/Os going round-robin over them, instead of workers of their own per target.
    #[arg(long)]
    spread: bool,
    /// Pin the workers to these CPUs, round-robin (e.g. 0-3,8).
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    cpus: Option<CpuList>,
    /// Length of the region tested [default: the target past --offset; 256m for a test file].
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    size: Option<u64>,
    /// Start of the region tested.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "0", allow_hyphen_values = true)]
    offset: u64,
    /// Alignment of I/O offsets, on every line of the spec [default: the target's logical block size].
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    align: Option<u64>,
    /// Delay before each burst of I/Os (Iometer's transfer delay), on every line of the spec.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "0ms")]
    burst_delay: Duration,
    /// I/Os per burst.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    burst_len: u32,
    /// I/O engine: io_uring, io_uring_sqpoll (a kernel thread polls the submission queue: no system call per I/O, but it keeps a CPU busy, counted in whole-host CPU), psync, null (completes every I/O at once, touching nothing) or iscsi (for iscsi:// targets) [default: iscsi for iscsi:// targets, else io_uring, psync with a note if unavailable].
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
    iscsi: crate::iscsi::LoginArgs,
    #[command(flatten)]
    measure: crate::MeasureOpts,
}

/// A `--cpus` list (a newtype: clap takes a bare Vec for a repeated flag).
#[derive(Clone)]
pub struct CpuList(Vec<u32>);

fn cpu_list(s: &str) -> Result<CpuList, String> {
    iotoll_probe::affinity::parse_cpu_list(s).map(CpuList)
}

impl RunArgs {
    fn to_spec(&self) -> Result<DiskRequest, DiskError> {
        let mut s = DiskRequest {
            targets: self.target.clone(),
            create: self.create,
            keep: self.keep,
            workers: self.workers,
            spread: self.spread,
            cpus: self.cpus.as_ref().map(|c| c.0.clone()),
            size: self.size,
            offset: self.offset,
            engine: self.engine.unwrap_or(EngineChoice::Auto),
            buffered: self.buffered,
            ramp: self.window.ramp,
            time: self.window.time,
            config: self.measure.config.clone(),
            allow_destructive: self.allow_destructive,
            iscsi: self.iscsi.options(),
            ..DiskRequest::default()
        };
        if let Some(name) = &self.spec {
            s.apply_builtin(name)?;
        }
        for l in &mut s.lines {
            l.align = self.align.or(l.align);
            l.burst_delay = self.burst_delay;
            l.burst_len = self.burst_len;
        }
        if let Some(bs) = self.bs {
            s.single_line("bs")?.bs = bs;
        }
        if let Some(r) = self.read {
            s.single_line("read")?.read_pct = r;
        }
        if let Some(r) = self.random {
            s.single_line("random")?.random_pct = r;
        }
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
    output::show(json, &builtin_specs(), |all| {
        iotoll_report::text::specs(all)
    })
}
