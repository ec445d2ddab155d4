//! A disk workload as the user asked for it, and the checks that need
//! nothing but the request itself.

use crate::engines::EngineKind;
use crate::specs::{self, AccessLine, AccessSpec};
use crate::DiskError;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineChoice {
    /// io_uring, or psync with a note if io_uring is unavailable.
    Auto,
    IoUring,
    /// io_uring with a submission-queue polling kernel thread.
    IoUringSqpoll,
    Psync,
    /// Completes every I/O at once, touching nothing.
    Null,
    /// iotoll's own iSCSI initiator (the only engine for `iscsi://` targets,
    /// chosen for them by `auto`).
    Iscsi,
}

impl EngineChoice {
    /// The word `--engine` takes.
    pub fn name(self) -> &'static str {
        self.kind().map_or("auto", EngineKind::name)
    }

    /// The engine asked for by name; None for `auto`.
    pub fn kind(self) -> Option<EngineKind> {
        match self {
            EngineChoice::Auto => None,
            EngineChoice::IoUring => Some(EngineKind::IoUring),
            EngineChoice::IoUringSqpoll => Some(EngineKind::IoUringSqpoll),
            EngineChoice::Psync => Some(EngineKind::Psync),
            EngineChoice::Null => Some(EngineKind::Null),
            EngineChoice::Iscsi => Some(EngineKind::Iscsi),
        }
    }

    /// The choice `--engine` names: `auto` or an engine's name.
    pub fn parse(s: &str) -> Result<Self, String> {
        use EngineChoice::*;
        let kind = EngineKind::from_name(s);
        match s {
            "auto" => Ok(Auto),
            _ => (([IoUring, IoUringSqpoll, Psync, Null, Iscsi].into_iter())
                .find(|c| c.kind() == kind))
            .ok_or_else(|| {
                let names: Vec<&str> = EngineKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown engine '{s}': use auto, {}", names.join(", "))
            }),
        }
    }
}

/// Default size of a test file iotoll creates when `--size` is not given.
pub const DEFAULT_TEST_FILE_SIZE: u64 = 256 << 20;

/// A disk run as asked for (flags, a suite's test, an agent's order): the
/// runner fills in what it leaves open and writes what ran as the result's
/// `spec` ([`iotoll_model::spec::DiskSpec`]).
#[derive(Debug, Clone)]
pub struct DiskRequest {
    /// Files or block devices, each tested over the same region; empty:
    /// one temporary test file, deleted afterwards.
    pub targets: Vec<PathBuf>,
    /// Create a test file at each target that does not exist.
    pub create: bool,
    /// Keep the test files iotoll created (temporary or `--create`).
    pub keep: bool,
    /// Name of the access specification the lines came from.
    pub spec_name: Option<String>,
    /// The access specification's lines; their shares add up to 100.
    pub lines: Vec<AccessLine>,
    /// Outstanding I/Os per worker and target (Iometer counts them per target).
    pub qd: u32,
    /// Workers per target; with `spread`, workers in all, each on every
    /// target. 0: one per CPU (of `cpus`, else every online CPU), pinned.
    pub workers: u32,
    pub spread: bool,
    /// Pin workers to these CPUs, round-robin.
    pub cpus: Option<Vec<u32>>,
    /// Region length on each target; None: the whole target past `offset`
    /// (or the default test file size).
    pub size: Option<u64>,
    pub offset: u64,
    pub engine: EngineChoice,
    pub buffered: bool,
    pub ramp: Duration,
    pub time: Duration,
    pub config: Option<String>,
    pub allow_destructive: bool,
    /// How to log in to `iscsi://` targets.
    pub iscsi: IscsiOptions,
}

/// Login settings for `iscsi://` targets.
#[derive(Debug, Clone)]
pub struct IscsiOptions {
    /// open-iscsi-style `username`/`password` (and `username_in`/
    /// `password_in` for mutual CHAP); never on the command line.
    pub chap_secret_file: Option<PathBuf>,
    /// Login and every command: a target silent this long fails the run.
    pub io_timeout: Duration,
    pub header_digest: bool,
    pub data_digest: bool,
    pub initiator_name: Option<String>,
}

impl Default for IscsiOptions {
    fn default() -> Self {
        IscsiOptions {
            chap_secret_file: None,
            io_timeout: iotoll_iscsi::session::DEFAULT_TIMEOUT,
            header_digest: false,
            data_digest: false,
            initiator_name: None,
        }
    }
}

impl IscsiOptions {
    /// The session configuration; reads (and checks) the secret file.
    pub fn config(&self) -> Result<iotoll_iscsi::Config, DiskError> {
        let mut c = iotoll_iscsi::Config {
            timeout: self.io_timeout,
            ..Default::default()
        };
        if let Some(n) = &self.initiator_name {
            c.initiator_name = n.clone();
        }
        c.offer.header_digest = self.header_digest;
        c.offer.data_digest = self.data_digest;
        if let Some(f) = &self.chap_secret_file {
            c.secrets = Some(
                iotoll_iscsi::chap::load_secret_file(f)
                    .map_err(|e| DiskError::Invalid(format!("--chap-secret-file: {e}")))?,
            );
        }
        Ok(c)
    }
}

impl Default for DiskRequest {
    fn default() -> Self {
        DiskRequest {
            targets: Vec::new(),
            create: false,
            keep: false,
            spec_name: None,
            lines: vec![AccessLine::default()],
            qd: 1,
            workers: 1,
            spread: false,
            cpus: None,
            size: None,
            offset: 0,
            engine: EngineChoice::Auto,
            buffered: false,
            ramp: Duration::ZERO,
            time: Duration::from_secs(10),
            config: None,
            allow_destructive: false,
            iscsi: IscsiOptions::default(),
        }
    }
}

/// Upper bounds that keep a typo from allocating the machine away.
pub const MAX_QD: u32 = 65_536;
pub const MAX_WORKERS: u32 = 1024;
pub const MAX_BS: u64 = 1 << 30;
pub const MAX_TARGETS: usize = 256;

impl DiskRequest {
    /// Applies an access specification's lines and QD.
    pub fn apply_spec(&mut self, spec: AccessSpec) {
        self.spec_name = Some(spec.name);
        self.lines = spec.lines;
        self.qd = spec.qd;
    }

    pub fn apply_builtin(&mut self, name: &str) -> Result<(), DiskError> {
        let s = specs::find(name).ok_or_else(|| {
            DiskError::Invalid(format!(
                "unknown spec '{name}'; built-in specs: {}",
                specs::builtin_names().join(", ")
            ))
        })?;
        self.apply_spec(s);
        Ok(())
    }

    /// The one line of a single-line spec, to set its transfer; an error
    /// naming `key` for a mixed spec, whose lines say it.
    pub fn single_line(&mut self, key: &str) -> Result<&mut AccessLine, DiskError> {
        match self.lines.as_mut_slice() {
            [one] => Ok(one),
            lines => Err(DiskError::Invalid(format!(
                "--{key} sets the transfer of a single-line spec; spec '{}' has {} lines, each with its own",
                self.spec_name.as_deref().unwrap_or("?"),
                lines.len()
            ))),
        }
    }

    pub fn writes(&self) -> bool {
        self.lines.iter().any(|l| l.read_pct < 100)
    }

    /// The engine a run of this request uses: the one named, or for
    /// `auto` iotoll's initiator on `iscsi://` targets and io_uring on
    /// anything else (psync only when io_uring turns out unavailable).
    pub fn planned_engine(&self) -> EngineKind {
        // `validate` refuses a named engine that cannot drive the targets.
        match (self.engine.kind(), self.iscsi_targets() > 0) {
            (Some(k), _) => k,
            (None, true) => EngineKind::Iscsi,
            (None, false) => EngineKind::IoUring,
        }
    }

    fn iscsi_targets(&self) -> usize {
        (self.targets.iter())
            .filter(|p| p.to_str().is_some_and(iotoll_iscsi::url::is_iscsi_url))
            .count()
    }

    /// The engine and the targets go together: `iscsi://` LUNs take
    /// iotoll's initiator, files and devices the others, never both in
    /// one run (each worker has one engine).
    fn check_engine_targets(&self) -> Result<(), DiskError> {
        let urls = self.iscsi_targets();
        if urls > 0 && urls < self.targets.len() {
            return Err(DiskError::Invalid(
                "iscsi:// targets and local files or devices cannot be mixed in one run (each worker has one engine); run them separately".into(),
            ));
        }
        let Some(kind) = self.engine.kind() else {
            return Ok(());
        };
        match (kind.caps().iscsi_targets, urls > 0) {
            (true, false) => Err(DiskError::Invalid(format!(
                "--engine {} drives iscsi://HOST[:PORT]/IQN/LUN targets; give one with --target",
                kind.name()
            ))),
            (false, true) => Err(DiskError::Invalid(format!(
                "--engine {} cannot drive iscsi:// targets: iotoll's own initiator does (omit --engine, or --engine iscsi)",
                kind.name()
            ))),
            _ => Ok(()),
        }
    }

    /// The largest transfer: the size of each I/O buffer.
    pub fn max_bs(&self) -> u64 {
        self.lines.iter().map(|l| l.bs).max().unwrap_or(0)
    }

    /// Checks that need nothing but the request.
    pub fn validate(&self) -> Result<(), DiskError> {
        let (qd, workers) = (self.qd, self.workers);
        let spec = match &self.spec_name {
            Some(n) if self.lines.len() > 1 => format!("spec '{n}'"),
            _ => "the access specification".to_string(),
        };
        specs::check_lines(&self.lines, &spec)?;
        self.check_engine_targets()?;
        if self.size == Some(0) {
            return Err(DiskError::Invalid("--size must be positive".into()));
        }
        for (i, l) in self.lines.iter().enumerate() {
            // A mixed spec's problems are told with the line they are on.
            let on = match self.lines.len() {
                1 => String::new(),
                _ => format!(" (line {} of {spec})", i + 1),
            };
            let problem = if l.bs == 0 {
                "--bs must be positive".to_string()
            } else if l.bs > MAX_BS {
                format!("--bs {} is larger than the 1g limit", l.bs)
            } else if l.read_pct > 100 {
                format!("--read {} is outside 0-100", l.read_pct)
            } else if l.random_pct > 100 {
                format!("--random {} is outside 0-100", l.random_pct)
            } else if l.align == Some(0) {
                "--align must be positive".to_string()
            } else if l.burst_len == 0 {
                "--burst-len must be positive".to_string()
            } else if let Some(size) = self.size.filter(|s| *s < l.bs) {
                format!("--size {size} is smaller than one transfer (--bs {})", l.bs)
            } else {
                continue;
            };
            return Err(DiskError::Invalid(format!("{problem}{on}")));
        }
        // What the engine that will run can do: a queued engine may bound
        // the I/Os a worker keeps (an io_uring ring's 32768 entries); a
        // synchronous one keeps one whatever --qd says.
        let kind = self.planned_engine();
        let caps = kind.caps();
        let ring = caps.max_depth.filter(|_| caps.queued);
        let targets = self.targets.len().max(1) as u64;
        // Each worker keeps qd I/Os per target it has.
        let per_worker = qd as u64 * if self.spread { targets } else { 1 };
        let all_workers = match (workers, self.spread) {
            (0, _) => self.cpus.as_ref().map_or(64, |c| c.len() as u64),
            (w, true) => w as u64,
            (w, false) => w as u64 * targets,
        };
        let buffers = self.max_bs() as u128 * per_worker as u128 * all_workers as u128;
        // The bound named is the one of the engine that will run: a user
        // told 65536 who then meets io_uring's 32768 was told wrong.
        let max_qd = ring.map_or(MAX_QD, |r| MAX_QD.min(r));
        let engine = kind.name();
        let problem = if qd == 0 || qd > MAX_QD {
            format!("--qd must be between 1 and {max_qd} with the {engine} engine, got {qd}")
        } else if let Some(ring) = ring.filter(|r| per_worker > u64::from(*r)) {
            format!("--qd {qd} x {targets} targets per worker is more than the {engine} engine can keep in flight: it holds at most {ring} I/Os per worker (or use --engine psync, which keeps one I/O per worker)")
        } else if workers > MAX_WORKERS || all_workers > MAX_WORKERS as u64 {
            format!("--workers must be between 0 (one per CPU) and {MAX_WORKERS} in all, got {all_workers}")
        } else if self.time.is_zero() {
            "--time must be positive".to_string()
        } else if self.create && self.targets.is_empty() {
            "--create needs --target PATH".to_string()
        } else if self.targets.len() > MAX_TARGETS {
            format!(
                "{} targets given; at most {MAX_TARGETS}",
                self.targets.len()
            )
        } else if let Some(t) = crate::target::given_twice(&self.targets) {
            format!("--target {} is given twice", t.display())
        } else if self.cpus.as_ref().is_some_and(|c| c.is_empty()) {
            "--cpus must name at least one CPU".to_string()
        } else if self.config.as_deref().is_some_and(|c| c.trim().is_empty()) {
            "--config must not be empty".to_string()
        } else if buffers > 16 << 30 {
            let gib = buffers >> 30;
            format!("--bs x --qd x targets x --workers needs {gib} GiB of I/O buffers; the limit is 16 GiB")
        } else {
            return Ok(());
        };
        Err(DiskError::Invalid(problem))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qd_is_checked_against_the_io_uring_ring() {
        for engine in [EngineChoice::IoUring, EngineChoice::Auto] {
            let s = DiskRequest {
                qd: 40_000,
                engine,
                ..Default::default()
            };
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains("--qd 40000") && e.contains("32768"), "{e}");
            let s = DiskRequest { qd: 32_768, ..s };
            s.validate().unwrap();
            // A spread worker keeps the QD on each of its targets.
            let spread = DiskRequest {
                qd: 20_000,
                spread: true,
                targets: vec!["/a".into(), "/b".into()],
                ..s
            };
            let e = spread.validate().unwrap_err().to_string();
            assert!(e.contains("x 2 targets per worker"), "{e}");
        }
    }

    #[test]
    fn defaults_are_valid() {
        DiskRequest::default().validate().unwrap();
    }

    #[test]
    fn each_bad_value_is_named() {
        type Spoil = fn(&mut DiskRequest);
        let cases: [(Spoil, &str); 15] = [
            (|s| s.lines[0].bs = 0, "--bs"),
            (|s| s.qd = 0, "--qd"),
            (|s| s.workers = 2000, "--workers"),
            (|s| s.lines[0].read_pct = 101, "--read"),
            (|s| s.lines[0].random_pct = 101, "--random"),
            (|s| s.size = Some(0), "--size"),
            (|s| s.size = Some(512), "--size"),
            (|s| s.lines[0].align = Some(0), "--align"),
            (|s| s.lines[0].burst_len = 0, "--burst-len"),
            (|s| s.time = Duration::ZERO, "--time"),
            (|s| s.create = true, "--create"),
            (|s| (s.lines[0].bs, s.qd) = (1 << 30, 64), "buffers"),
            (
                |s| s.targets = vec!["/x".into(), "/y".into(), "/x".into()],
                "--target /x is given twice",
            ),
            (|s| s.cpus = Some(vec![]), "--cpus"),
            (|s| s.lines[0].share_pct = 90, "add up to 90 %"),
        ];
        for (bad, flag) in cases {
            let mut s = DiskRequest::default();
            bad(&mut s);
            let e = s.validate().unwrap_err();
            assert!(e.is_usage());
            assert!(e.to_string().contains(flag), "{e} should name {flag}");
        }
    }

    /// The same file through two paths is one target given twice.
    #[test]
    fn a_target_is_the_file_not_the_path() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        let s = DiskRequest {
            targets: vec![f.clone(), d.path().join(".").join("f")],
            ..Default::default()
        };
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("given twice"), "{e}");
        // A test file still to be made, by its directory.
        let s = DiskRequest {
            targets: vec![d.path().join("new.tst"), d.path().join(".").join("new.tst")],
            create: true,
            ..Default::default()
        };
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("given twice"), "{e}");
    }

    #[test]
    fn builtin_spec_applies() {
        let mut s = DiskRequest::default();
        s.apply_builtin("db-oltp-8k").unwrap();
        assert_eq!(s.lines, [AccessLine::new(100, 8192, 70, 100)]);
        assert_eq!(s.qd, 28);
        let e = s.apply_builtin("db-oltp-9k").unwrap_err();
        assert!(e.to_string().contains("db-oltp-8k"), "lists the names: {e}");
        s.apply_builtin("iometer-file-server").unwrap();
        assert_eq!((s.lines.len(), s.max_bs(), s.writes()), (8, 65536, true));
        let e = s.single_line("bs").unwrap_err().to_string();
        assert!(
            e.contains("--bs") && e.contains("'iometer-file-server' has 8 lines"),
            "{e}"
        );
        // A mixed spec's bad line is told with its number.
        s.lines[2].bs = 0;
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("(line 3 of spec 'iometer-file-server')"), "{e}");
    }

    /// The engine's capabilities decide, not its name: a file engine on
    /// an iSCSI LUN, or the initiator on a file, is refused by the
    /// request's own checks, before any run or suite starts.
    #[test]
    fn engine_and_targets_are_checked_by_what_the_engine_drives() {
        let with = |engine: EngineChoice, target: &str| DiskRequest {
            engine,
            targets: vec![target.into()],
            ..DiskRequest::default()
        };
        let lun = "iscsi://127.0.0.1:3260/iqn.2026-11.test:t/0";
        for e in [
            EngineChoice::IoUring,
            EngineChoice::IoUringSqpoll,
            EngineChoice::Psync,
            EngineChoice::Null,
        ] {
            let err = with(e, lun).validate().unwrap_err().to_string();
            assert!(err.contains("cannot drive iscsi://"), "{err}");
        }
        let err = (with(EngineChoice::Iscsi, "/tmp/f").validate().unwrap_err()).to_string();
        assert!(err.contains("drives iscsi://"), "{err}");
        with(EngineChoice::Auto, lun).validate().unwrap();
        let planned = |target| with(EngineChoice::Auto, target).planned_engine();
        assert_eq!(planned(lun), EngineKind::Iscsi);
        assert_eq!(planned("/tmp/f"), EngineKind::IoUring);
        // One list of names: each parses back to its engine.
        for k in EngineKind::ALL {
            assert_eq!(EngineChoice::parse(k.name()).unwrap().kind(), Some(k));
        }
        let err = EngineChoice::parse("aio").unwrap_err();
        assert!(
            err.contains("io_uring, io_uring_sqpoll, psync, null, iscsi"),
            "{err}"
        );
        // A synchronous engine asks for one I/O per worker whatever --qd.
        assert_eq!(EngineKind::Psync.requested_depth(32, 4), 1);
        assert_eq!(EngineKind::IoUring.requested_depth(32, 4), 128);
    }
}
