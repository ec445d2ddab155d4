//! The live progress line on stderr, shown only when stderr is a terminal;
//! with `IOTOLL_PROGRESS=lines` it is printed as one line a second wherever
//! stderr goes (logs, CI, scripts that wait for the measurement to start).

use iotoll_model::SeriesPoint;
use iotoll_suite::runner::TestStart;
use std::io::{IsTerminal, Write};
use std::time::Duration;

pub struct TermProgress {
    enabled: bool,
    drawn: bool,
    quiet: bool,
    /// One line each time instead of redrawing one line.
    lines: bool,
    /// `--interval`: its period, and where its lines go.
    interval: Option<(Duration, IntervalTo)>,
}

/// Where `--interval`'s lines go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalTo {
    /// Lines on stdout before the table, as iperf prints them.
    Stdout,
    /// Lines on stderr, beside `--json`'s one document on stdout.
    Stderr,
    /// The live progress line shows the last interval (`suite run`).
    ProgressLine,
}

impl IntervalTo {
    /// A single run's lines: on stdout, or beside `--json`'s document.
    pub fn beside(json: bool) -> IntervalTo {
        if json {
            IntervalTo::Stderr
        } else {
            IntervalTo::Stdout
        }
    }
}

/// The environment variable that asks for progress as plain lines.
pub const PROGRESS_ENV: &str = "IOTOLL_PROGRESS";

impl TermProgress {
    pub fn new(quiet: bool) -> Self {
        let lines = std::env::var(PROGRESS_ENV).is_ok_and(|v| v == "lines");
        TermProgress {
            enabled: !quiet && (lines || std::io::stderr().is_terminal()),
            drawn: false,
            quiet,
            lines,
            interval: None,
        }
    }

    /// `--interval DUR`: one line per interval, shown `to`.
    pub fn with_interval(mut self, period: Option<Duration>, to: IntervalTo) -> Self {
        self.interval = period.map(|d| (d, to));
        self
    }

    fn draw(&mut self, line: &str) {
        if self.enabled && self.lines {
            eprintln!("iotoll: {line}");
        } else if self.enabled {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K{line}");
            let _ = e.flush();
            self.drawn = true;
        }
    }

    /// A line of its own on stderr (suite progress, warnings), unless quiet;
    /// the live line is redrawn after it.
    pub fn line(&mut self, msg: &str) {
        if self.quiet {
            return;
        }
        self.clear();
        eprintln!("iotoll: {msg}");
    }

    /// `lab up`: the host being created, out of how many.
    pub fn lab_host(&mut self, lab: &str, done: usize, total: usize, host: &str) {
        self.draw(&format!("lab {lab}: host {done}/{total} ({host})"));
        if done == total {
            self.clear();
        }
    }

    /// Erases the line before results are printed.
    pub fn clear(&mut self) {
        if self.drawn {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K");
            let _ = e.flush();
            self.drawn = false;
        }
    }
}

impl iotoll_run::Progress for TermProgress {
    fn preparing(&mut self, done: u64, total: u64) {
        if done == total || done % (64 << 20) == 0 {
            self.draw(&format!(
                "preparing test file: {} / {} MiB",
                done >> 20,
                total >> 20
            ));
        }
    }

    fn second(&mut self, p: &SeriesPoint, elapsed: Duration, total: Duration) {
        if self
            .interval
            .is_some_and(|(_, to)| to == IntervalTo::ProgressLine)
        {
            // The live line shows the intervals instead.
            return;
        }
        self.draw(&crate::text::progress::second(p, elapsed, total));
    }

    fn interval_period(&self) -> Option<Duration> {
        self.interval.map(|(d, _)| d)
    }

    fn interval(&mut self, l: &iotoll_run::interval::IntervalLine) {
        let line = crate::text::progress::interval(l);
        match self.interval.map(|(_, to)| to) {
            Some(IntervalTo::Stdout) => {
                self.clear();
                println!("{line}");
            }
            Some(IntervalTo::Stderr) => {
                self.clear();
                eprintln!("{line}");
            }
            _ => self.draw(&line),
        }
    }
}

impl iotoll_suite::SuiteProgress for TermProgress {
    fn test_start(&mut self, t: &TestStart) {
        let rep = (t.rep, t.reps);
        let line = crate::text::progress::test_start(t.index, t.total, t.name, rep, t.eta);
        self.line(&line);
    }

    fn line(&mut self, msg: &str) {
        TermProgress::line(self, msg);
    }
}

impl Drop for TermProgress {
    fn drop(&mut self) {
        self.clear();
    }
}
