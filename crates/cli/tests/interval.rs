//! `--interval DUR`: one line per interval while a test runs (as
//! `iperf -i`), on stdout before the table, or on stderr beside `--json`.

mod common;
use common::server::Server;
use common::*;

/// An interval line: (from s, to s, phase, the numbers before each unit).
#[derive(Debug)]
struct Line {
    from: f64,
    to: f64,
    phase: String,
    figures: Vec<(String, f64)>,
}

/// The interval lines among `text`'s lines.
fn lines(text: &str) -> Vec<Line> {
    let mut out = Vec::new();
    for l in text
        .lines()
        .filter(|l| l.starts_with('[') && l.contains(" s] "))
    {
        let (span, rest) = l[1..].split_once(" s] ").expect("a span");
        let (from, to) = span.trim().split_once('-').expect("from-to");
        let w: Vec<&str> = rest.split_whitespace().collect();
        let mut figures = Vec::new();
        for i in 1..w.len() {
            if let Ok(v) = w[i - 1].parse::<f64>() {
                figures.push((w[i].to_string(), v));
            }
        }
        // `cpu 45.3 %`: the number after "cpu".
        if let Some(i) = w.iter().position(|x| *x == "cpu") {
            if let Some(v) = w.get(i + 1).and_then(|v| v.parse().ok()) {
                figures.push(("cpu".into(), v));
            }
        }
        out.push(Line {
            from: from.parse().expect("from"),
            to: to.parse().expect("to"),
            phase: w[0].to_string(),
            figures,
        });
    }
    out
}

fn fig(l: &Line, unit: &str) -> f64 {
    (l.figures.iter().find(|(u, _)| u == unit))
        .unwrap_or_else(|| panic!("no {unit} in {l:?}"))
        .1
}

/// Plausible lines: in order, back to back (but for a sliver under a
/// tenth of the interval left out at a window edge), CPU a %.
fn well_formed(ls: &[Line]) {
    let longest = ls.iter().map(|l| l.to - l.from).fold(0.0, f64::max);
    for w in ls.windows(2) {
        let gap = w[1].from - w[0].to;
        assert!((-0.011..0.011 + longest / 10.0).contains(&gap), "{ls:?}");
    }
    for l in ls {
        assert!(l.to > l.from, "{l:?}");
        let cpu = fig(l, "cpu");
        assert!((0.0..=100.0).contains(&cpu), "{l:?}");
    }
}

/// A 2 s stream on loopback with 500 ms intervals and --json: the lines
/// are on stderr (stdout is the one document), about four in the window
/// (a short last one at its edge may add one; a stalled host may merge
/// none), and their bytes add up to the window's within the rounding of
/// the printed figures.
#[test]
fn a_stream_prints_its_intervals_and_they_add_up() {
    let s = Server::start("127.0.0.1", &[]);
    let mut a = net_args("stream", &s.addr, "--json --interval 500ms");
    a.extend(["--ramp", "0s", "--time", "2s"]);
    let out = iotoll().arg("net").args(&a).out();
    let err = stderr(&out);
    let d = ok_json(&out);
    let ls = lines(&err);
    well_formed(&ls);
    let measure: Vec<&Line> = ls.iter().filter(|l| l.phase == "measure").collect();
    assert!((3..=6).contains(&measure.len()), "{err}");
    let sum_mbit: f64 = measure
        .iter()
        .map(|l| fig(l, "Mbit/s") * (l.to - l.from))
        .sum();
    let window = metric(&d, "window_s");
    let total = metric(&d, "sent_mbit_s") * window;
    // Printed: Mbit/s to 0.01, times to 0.01 s of 0.5 s (2 % per line at
    // worst, less summed, since the spans are back to back).
    assert!(
        (sum_mbit - total).abs() <= 0.03 * total,
        "intervals {sum_mbit} Mbit vs window {total} Mbit: {err}"
    );
    // A last sliver under a tenth of the interval is left out.
    let covered = measure.last().unwrap().to - measure[0].from;
    assert!((covered - window).abs() < 0.061, "{covered} vs {window}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains(" s] "));
}

/// request/response: transactions/s per interval, on stdout before the
/// table without --json.
#[test]
fn rr_intervals_show_transactions() {
    let s = Server::start("127.0.0.1", &[]);
    let mut a = net_args("rr", &s.addr, "--no-db --interval 300ms");
    a.extend(["--ramp", "0s", "--time", "1s"]);
    let out = iotoll().arg("net").args(&a).succeeds();
    let ls = lines(&out);
    well_formed(&ls);
    assert!((2..=6).contains(&ls.len()), "{out}");
    assert!(ls.iter().all(|l| fig(l, "trans/s") > 0.0), "{out}");
    let all: Vec<&str> = out.lines().collect();
    let last_interval = all.iter().rposition(|l| l.contains(" s] ")).unwrap();
    let table = &all[last_interval + 1..];
    assert!(
        table.iter().any(|l| l.contains("trans")),
        "the table follows: {out}"
    );
}

/// UDP: each line says whose rate it is; an rx test's ramp-up lines count
/// what arrived then (a tester saw them read 0). cc: connections/s.
#[test]
fn udp_and_cc_intervals_say_what_they_count() {
    let s = Server::start("127.0.0.1", &[]);
    for (dir, of) in [
        ("rx", "received"),
        ("tx", "sent"),
        ("bidir", "sent+received"),
    ] {
        let words = format!("--no-db --interval 300ms --dir {dir} --rate 20m");
        let mut a = net_args("udp", &s.addr, &words);
        a.extend(["--ramp", "700ms", "--time", "1s"]);
        let out = iotoll().arg("net").args(&a).succeeds();
        let ls = lines(&out);
        well_formed(&ls);
        assert!(ls.iter().any(|l| l.phase == "ramp"), "{out}");
        // Ramp-up lines too.
        assert!(ls.iter().all(|l| fig(l, "Mbit/s") > 0.0), "{dir}: {out}");
        let shown = out.lines().filter(|l| l.contains(" s] ")).count();
        let named = (out.lines())
            .filter(|l| l.contains(" s] ") && l.contains(&format!("Mbit/s {of} ")))
            .count();
        assert!(shown > 0 && named == shown, "{dir}: {out}");
    }
    let mut a = net_args("cc", &s.addr, "--no-db --interval 300ms --linger0");
    a.extend(["--ramp", "0s", "--time", "1s"]);
    let out = iotoll().arg("net").args(&a).succeeds();
    let ls = lines(&out);
    // The workers run at the lowest priority: beside CPU hogs an interval
    // may see none finish, but every line counts connections.
    let rates: Vec<f64> = ls.iter().map(|l| fig(l, "conn/s")).collect();
    assert!(rates.iter().any(|r| *r > 0.0), "{out}");
    assert!(rates.iter().all(|r| *r >= 0.0), "{out}");
    assert!(!out.contains("trans/s"), "{out}");
}

/// disk run: IOPS and MB/s per interval, both phases labelled; the window's
/// IOPS lines average to its IOPS.
#[test]
fn disk_intervals_show_iops_and_mb_s() {
    let out =
        cmd("disk run --no-db --size 4m --ramp 500ms --time 1500ms --interval 500ms").succeeds();
    let ls = lines(&out);
    well_formed(&ls);
    assert!(ls.iter().any(|l| l.phase == "ramp"), "{out}");
    let m: Vec<&Line> = ls.iter().filter(|l| l.phase == "measure").collect();
    assert!((2..=5).contains(&m.len()), "{out}");
    for l in &m {
        let (iops, mb) = (fig(l, "IOPS"), fig(l, "MB/s"));
        // 4k I/Os: MB/s = IOPS × 4096 / 1e6, to the printed rounding.
        assert!(
            (mb - iops * 4096.0 / 1e6).abs() <= 0.01 + 0.5 * 4096.0 / 1e6,
            "{l:?}"
        );
    }
}

#[test]
fn bad_intervals_are_refused() {
    cmd("disk run --no-db --size 4m --interval 10ms").fails(2, "at least 100 ms");
    cmd("disk run --no-db --size 4m --interval 0s").fails(2, "at least 100 ms");
    cmd("disk run --no-db --size 4m --interval soon").fails(2, "--interval");
}

/// `suite run --interval`: the live line shows the current test's last
/// interval (as lines with IOTOLL_PROGRESS=lines), not its last second.
#[test]
fn a_suite_shows_the_last_interval_on_its_progress_line() {
    let t = Tmp::new();
    let file = t.file(
        "s.toml",
        "name='i'\nramp='0s'\ntime='1s'\n[[test]]\nname='d'\nkind='disk'\nsize='4m'\n",
    );
    let out = t
        .cmd("suite run --interval 250ms")
        .arg(&file)
        .env("IOTOLL_PROGRESS", "lines")
        .out();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let shown: String = (err.lines())
        .filter_map(|l| l.strip_prefix("iotoll: "))
        .map(|l| format!("{l}\n"))
        .collect();
    let ls = lines(&shown);
    well_formed(&ls);
    assert!((3..=6).contains(&ls.len()), "{err}");
    assert!(ls.iter().all(|l| fig(l, "IOPS") > 0.0), "{err}");
    assert!(!err.contains("[measure]"), "no per-second line: {err}");
}
