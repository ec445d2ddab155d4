//! A disk workload as the user asked for it, and the checks that need
//! nothing but the request itself.

use crate::{specs, DiskError};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineChoice {
    /// io_uring, or psync with a note if io_uring is unavailable.
    Auto,
    IoUring,
    Psync,
    /// Completes every I/O at once, touching nothing.
    Null,
}

impl EngineChoice {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(EngineChoice::Auto),
            "io_uring" | "io-uring" | "iouring" => Ok(EngineChoice::IoUring),
            "psync" => Ok(EngineChoice::Psync),
            "null" => Ok(EngineChoice::Null),
            _ => Err(format!("unknown engine '{s}': use io_uring, psync or null")),
        }
    }
}

/// Default size of a test file iotoll creates when `--size` is not given.
pub const DEFAULT_TEST_FILE_SIZE: u64 = 256 << 20;

#[derive(Debug, Clone)]
pub struct DiskSpec {
    /// None: a temporary test file, deleted afterwards.
    pub target: Option<PathBuf>,
    /// Create the test file at `target` if it does not exist.
    pub create: bool,
    /// Keep a test file iotoll created (temporary or `--create`).
    pub keep: bool,
    /// Name of the built-in spec the transfer parameters came from.
    pub spec_name: Option<String>,
    pub bs: u64,
    pub read_pct: u32,
    pub random_pct: u32,
    /// Outstanding I/Os per worker.
    pub qd: u32,
    pub workers: u32,
    /// Region length; None: the whole target past `offset` (or the default
    /// test file size).
    pub size: Option<u64>,
    pub offset: u64,
    /// None: the target's logical block size.
    pub align: Option<u64>,
    pub burst_delay: Duration,
    pub burst_len: u32,
    pub engine: EngineChoice,
    pub buffered: bool,
    pub ramp: Duration,
    pub time: Duration,
    pub config: Option<String>,
    pub allow_destructive: bool,
}

impl Default for DiskSpec {
    fn default() -> Self {
        DiskSpec {
            target: None,
            create: false,
            keep: false,
            spec_name: None,
            bs: 4096,
            read_pct: 100,
            random_pct: 100,
            qd: 1,
            workers: 1,
            size: None,
            offset: 0,
            align: None,
            burst_delay: Duration::ZERO,
            burst_len: 1,
            engine: EngineChoice::Auto,
            buffered: false,
            ramp: Duration::ZERO,
            time: Duration::from_secs(10),
            config: None,
            allow_destructive: false,
        }
    }
}

/// Upper bounds that keep a typo from allocating the machine away.
pub const MAX_QD: u32 = 65_536;
pub const MAX_WORKERS: u32 = 1024;
pub const MAX_BS: u64 = 1 << 30;

impl DiskSpec {
    /// Applies a built-in access specification's transfer size, mix and QD.
    pub fn apply_builtin(&mut self, name: &str) -> Result<(), DiskError> {
        let s = specs::find(name).ok_or_else(|| {
            let names: Vec<_> = specs::BUILTIN_SPECS.iter().map(|s| s.name).collect();
            DiskError::Invalid(format!(
                "unknown spec '{name}'; built-in specs: {}",
                names.join(", ")
            ))
        })?;
        self.spec_name = Some(s.name.to_string());
        self.bs = s.bs;
        self.read_pct = s.read_pct;
        self.random_pct = s.random_pct;
        self.qd = s.qd;
        Ok(())
    }

    pub fn writes(&self) -> bool {
        self.read_pct < 100
    }

    /// Checks that need nothing but the request.
    pub fn validate(&self) -> Result<(), DiskError> {
        let (bs, qd, workers) = (self.bs, self.qd, self.workers);
        // What the engine can do: an io_uring ring holds at most 32768
        // entries (psync keeps one I/O whatever --qd says).
        let ring = crate::engines::io_uring::MAX_DEPTH;
        let uring = matches!(self.engine, EngineChoice::Auto | EngineChoice::IoUring);
        let buffers = bs as u128 * qd as u128 * workers as u128;
        let problem = if bs == 0 {
            "--bs must be positive".to_string()
        } else if bs > MAX_BS {
            format!("--bs {bs} is larger than the 1g limit")
        } else if self.read_pct > 100 {
            format!("--read {} is outside 0-100", self.read_pct)
        } else if self.random_pct > 100 {
            format!("--random {} is outside 0-100", self.random_pct)
        } else if qd == 0 || qd > MAX_QD {
            format!("--qd must be between 1 and {MAX_QD}, got {qd}")
        } else if uring && qd > ring {
            format!("--qd {qd} is more than the io_uring engine can keep in flight: its ring holds at most {ring} entries; use --qd {ring} or less (or --engine psync, which keeps one I/O per worker)")
        } else if workers == 0 || workers > MAX_WORKERS {
            format!("--workers must be between 1 and {MAX_WORKERS}, got {workers}")
        } else if self.size == Some(0) {
            "--size must be positive".to_string()
        } else if let Some(size) = self.size.filter(|s| *s < bs) {
            format!("--size {size} is smaller than one transfer (--bs {bs})")
        } else if self.align == Some(0) {
            "--align must be positive".to_string()
        } else if self.burst_len == 0 {
            "--burst-len must be positive".to_string()
        } else if self.time.is_zero() {
            "--time must be positive".to_string()
        } else if self.create && self.target.is_none() {
            "--create needs --target PATH".to_string()
        } else if self.config.as_deref().is_some_and(|c| c.trim().is_empty()) {
            "--config must not be empty".to_string()
        } else if buffers > 16 << 30 {
            let gib = buffers >> 30;
            format!("--bs x --qd x --workers needs {gib} GiB of I/O buffers; the limit is 16 GiB")
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
            let s = DiskSpec {
                qd: 40_000,
                engine,
                ..Default::default()
            };
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains("--qd 40000") && e.contains("32768"), "{e}");
            let s = DiskSpec { qd: 32_768, ..s };
            s.validate().unwrap();
        }
    }

    #[test]
    fn defaults_are_valid() {
        DiskSpec::default().validate().unwrap();
    }

    #[test]
    fn each_bad_value_is_named() {
        type Spoil = fn(&mut DiskSpec);
        let cases: [(Spoil, &str); 12] = [
            (|s| s.bs = 0, "--bs"),
            (|s| s.qd = 0, "--qd"),
            (|s| s.workers = 0, "--workers"),
            (|s| s.read_pct = 101, "--read"),
            (|s| s.random_pct = 101, "--random"),
            (|s| s.size = Some(0), "--size"),
            (|s| s.size = Some(512), "--size"),
            (|s| s.align = Some(0), "--align"),
            (|s| s.burst_len = 0, "--burst-len"),
            (|s| s.time = Duration::ZERO, "--time"),
            (|s| s.create = true, "--create"),
            (|s| (s.bs, s.qd) = (1 << 30, 64), "buffers"),
        ];
        for (bad, flag) in cases {
            let mut s = DiskSpec::default();
            bad(&mut s);
            let e = s.validate().unwrap_err();
            assert!(e.is_usage());
            assert!(e.to_string().contains(flag), "{e} should name {flag}");
        }
    }

    #[test]
    fn builtin_spec_applies() {
        let mut s = DiskSpec::default();
        s.apply_builtin("db-oltp-8k").unwrap();
        assert_eq!((s.bs, s.read_pct, s.random_pct, s.qd), (8192, 70, 100, 28));
        let e = s.apply_builtin("db-oltp-9k").unwrap_err();
        assert!(e.to_string().contains("db-oltp-8k"), "lists the names: {e}");
    }
}
