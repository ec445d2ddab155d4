//! Comparisons and reports through the binary, and the HTML report in a
//! real headless browser.

mod common;
use common::*;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

const SUITE: &str = r#"
name = "cmp"
reps = 2
ramp = "0s"
time = "400ms"

[[test]]
name = "seq"
kind = "disk"
read = 100
random = 0
bs = ["4k", "64k"]
size = "8m"
time = "1200ms"
group = "read"

[[test]]
name = "conns"
kind = "net-stream"
conns = [1, 2]
reps = 1
time = "1500ms"
group = "stream"
"#;

/// One database with configurations A and B, shared by the tests here.
fn db() -> &'static str {
    static DB: OnceLock<Tmp> = OnceLock::new();
    let t = DB.get_or_init(|| {
        let t = Tmp::new();
        let suite = t.file("s.toml", SUITE);
        for label in ["A", "B"] {
            t.cmd("suite run --quiet")
                .args([&suite, "--config", label])
                .succeeds();
        }
        t
    });
    &t.db
}

#[test]
fn compare_json_and_markdown() {
    let c = db_cmd(db(), "compare A B --json --cpu-threshold 50").json();
    assert_eq!(c["configs"], serde_json::json!(["A", "B"]));
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    // Each difference is candidate / baseline - 1.
    for r in rows {
        let (a, b) = (
            r["values"][0].as_f64().unwrap(),
            r["values"][1].as_f64().unwrap(),
        );
        let d = r["diff_pct"][0].as_f64().unwrap();
        assert!((d - (b / a - 1.0) * 100.0).abs() < 1e-6);
    }
    // Group means are means of the per-test differences.
    let read: Vec<f64> = rows
        .iter()
        .filter(|r| r["group"] == "read")
        .map(|r| r["diff_pct"][0].as_f64().unwrap())
        .collect();
    let g = c["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "read")
        .unwrap();
    assert!((g["mean_diff_pct"].as_f64().unwrap() - read.iter().sum::<f64>() / 2.0).abs() < 1e-6);
    assert!(c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f.as_str().unwrap().contains("on read tests")));

    let md = db_cmd(db(), "compare A B").succeeds();
    assert!(
        md.contains("## Key findings") && md.contains("| seq/bs=4k"),
        "{md}"
    );
}

#[test]
fn bad_compare_input() {
    for (words, needle) in [
        ("compare A nope", "no run nope"),
        ("compare A B --metric speed", "--metric"),
        ("compare A B --cpu-threshold 150", ""),
        ("compare A B --by color", ""),
    ] {
        db_cmd(db(), words).fails(2, needle);
    }
}

#[test]
fn imports_become_configurations() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../store/tests/fixtures");
    let t = Tmp::new();
    let table = t.file(
        "published.csv",
        "test,group,iops,cpu_pct\nseq/bs=4k,read,5000,20\nseq/bs=64k,read,2000,10\n",
    );
    for (file, format, label) in [
        (table.clone(), "table", "paper"),
        (format!("{fixtures}/fio-randrw.json"), "fio-json", "fio"),
        (
            format!("{fixtures}/iperf3-tx.json"),
            "iperf3-json",
            "iperf3",
        ),
    ] {
        t.cmd("results import")
            .args([&file, "--format", format, "--config", label])
            .succeeds();
    }
    let list = t.list();
    assert_eq!(
        list.lines().count(),
        1 + 3,
        "a header and three runs: {list}"
    );
    let v = t.show("paper");
    assert_eq!(v["tests"][0]["summary"]["iops_per_cpu_pct"], 250.0);
    // A bad file is refused with its reason, nothing stored.
    t.file("published.csv", "test,warp_factor\na,9\n");
    t.cmd("results import --format table --config x")
        .arg(&table)
        .fails(2, "warp_factor");
}

/// `compare --html F` writes F and says where it went (stderr), nothing
/// else: it used to print the whole Markdown report on stdout too.
#[test]
fn compare_into_a_file_prints_only_where_it_went() {
    let t = Tmp::new();
    for (label, iops) in [("a", 5000), ("b", 6000)] {
        let table = t.file(
            &format!("{label}.csv"),
            format!("test,group,iops,cpu_pct\nseq/bs=4k,read,{iops},20\n"),
        );
        t.cmd("results import --format table")
            .args([&table, "--config", label])
            .succeeds();
    }
    for files in [vec!["--html", "c.html"], vec!["--md", "c.md"]] {
        let path = t.path(files[1]);
        let out = t.cmd("compare a b").args([files[0], &path]).out();
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{files:?}");
        assert!(
            stderr(&out).contains(&format!("wrote {path}")),
            "{}",
            stderr(&out)
        );
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains("Key findings"));
    }
    // Without a file the report is the output.
    assert!(t.cmd("compare a b").succeeds().contains("## Key findings"));
}

/// Runs the report command `line` of the shared database into an HTML and
/// a Markdown file; returns their directory, the HTML file and both texts.
fn render(line: &str) -> (Tmp, String, String, String) {
    let t = Tmp::new();
    let (html, md) = (t.path("report.html"), t.path("report.md"));
    db_cmd(db(), line)
        .args(["--html", &html, "--md", &md])
        .succeeds();
    let text = std::fs::read_to_string(&html).unwrap();
    let md = std::fs::read_to_string(&md).unwrap();
    (t, html, text, md)
}

fn html_report() -> (Tmp, String, usize) {
    let (t, html, text, md) = render("compare A B --cpu-threshold 50");
    assert!(md.contains("## Key findings"));
    (t, html, text.matches("<svg").count())
}

#[test]
fn html_is_self_contained() {
    let (_d, html, charts) = html_report();
    let text = std::fs::read_to_string(&html).unwrap();
    // 2 groups: bars each; "read" and "stream" sweep a parameter: 3 lines
    // each; per-second series of every test (4), both configurations in
    // each.
    assert_eq!(charts, 2 + 3 + 3 + 4, "charts");
    for bad in [
        "<script",
        "<link",
        "<img",
        "<iframe",
        " src=",
        "href=",
        "url(",
        "@import",
        "@font-face",
    ] {
        assert!(!text.contains(bad), "{bad} in the report");
    }
    // The only URLs are SVG namespace names, which are never fetched.
    for (i, _) in text.match_indices("http") {
        let ctx = &text[i.saturating_sub(8)..(i + 40).min(text.len())];
        assert!(ctx.contains("www.w3.org/"), "a URL in the report: {ctx}");
    }
    assert!(text.contains("Key findings") && text.contains("System disclosure"));
}

/// The text of every SVG `<text>` element (axis names, ticks, titles,
/// legends).
fn svg_texts(html: &str) -> Vec<String> {
    html.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// What every report must show, checked on its HTML (the file, or the DOM
/// a browser built from it): findings, the parameters table, a per-second
/// chart of every test, and no raw metric name in any chart.
fn check_report_content(html: &str, tests: &[&str]) {
    let findings = html
        .split("<ul class=\"findings\">")
        .nth(1)
        .and_then(|s| s.split("</ul>").next())
        .expect("a findings list");
    assert!(findings.matches("<li").count() >= 2, "findings: {findings}");
    assert!(
        html.contains("<table class=\"parameters\">"),
        "no parameters table"
    );
    let series: Vec<&str> = html.split("<figure class=\"series\">").skip(1).collect();
    assert_eq!(series.len(), tests.len(), "one per-second chart per test");
    for t in tests {
        assert!(
            series.iter().any(|f| f.contains(&format!("{t}: "))),
            "no per-second chart of {t}"
        );
    }
    let texts = svg_texts(html);
    assert!(texts.len() > 50, "charts have text: {}", texts.len());
    let raw: Vec<&str> = iotoll_model::metrics::METRICS
        .iter()
        .map(|m| m.name)
        .filter(|n| n.contains('_') || *n == "iops")
        .collect();
    for t in &texts {
        for r in &raw {
            assert!(!t.contains(r), "raw metric name {r} in chart text {t:?}");
        }
    }
    assert!(texts.iter().any(|t| t == "IOPS"), "IOPS axis");
    assert!(texts.iter().any(|t| t == "Mbit/s per % CPU"), "P/E axis");
    // Ticks have thousands separators and no spurious decimals.
    assert!(
        !texts.iter().any(|t| t.ends_with(".0")),
        "a tick ends in .0"
    );
}

#[test]
fn single_run_report_has_findings_parameters_and_every_series() {
    let (_t, _, text, md) = render("report A");
    check_report_content(&text, &TESTS);
    assert!(
        !text.contains("against the first"),
        "one configuration: nothing to compare"
    );
    // The peer is in-process on loopback: the same host, never a second machine.
    assert!(text.contains("The network peer was this host"));
    assert!(!text.contains("<th>remote CPU %</th>"));
    for want in [
        "## Key findings",
        "## Test parameters",
        "| seq/bs=64k | 64k |",
        "IOPS per % CPU",
    ] {
        assert!(md.contains(want), "{want} missing:\n{md}");
    }
}

const TESTS: [&str; 4] = ["seq/bs=4k", "seq/bs=64k", "conns/conns=1", "conns/conns=2"];

/// Chromium's own service hosts: it phones home (time, component updates,
/// accounts) even headless; those requests are the browser's, not the page's.
fn browser_service(host: &str) -> bool {
    let h = host.split(':').next().unwrap_or(host);
    [
        ".google.com",
        ".googleapis.com",
        ".gstatic.com",
        ".gvt1.com",
    ]
    .iter()
    .any(|d| h.ends_with(d))
}

/// Headless Chromium loads the report: the DOM has the charts and tables,
/// the screenshot is not blank, and no request leaves the page (every
/// request goes to a proxy that records it).
#[test]
fn the_report_in_a_real_browser() {
    let browser = ["chromium", "chromium-browser"].into_iter().find(|b| {
        std::process::Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(browser) = browser else {
        assert!(
            !is_root(),
            "chromium is missing although test.sh installs it as root"
        );
        eprintln!("skipped: chromium is not installed (./test.sh installs it as root)");
        return;
    };
    let (t, html, charts) = html_report();
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = proxy.local_addr().unwrap().port();
    proxy.set_nonblocking(true).unwrap();
    let page_requests = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let all = Arc::new(AtomicUsize::new(0));
    let (p2, a2) = (page_requests.clone(), all.clone());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let proxy = std::thread::spawn(move || {
        use std::io::Read;
        while !s2.load(Ordering::Relaxed) {
            if let Ok((mut c, _)) = proxy.accept() {
                a2.fetch_add(1, Ordering::Relaxed);
                let _ = c.set_nonblocking(false);
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = [0u8; 512];
                let n = c.read(&mut buf).unwrap_or(0);
                let line = String::from_utf8_lossy(&buf[..n])
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                // "CONNECT host:443 HTTP/1.1" or "GET http://host/path HTTP/1.1"
                let target = line.split_whitespace().nth(1).unwrap_or("");
                let host = target
                    .trim_start_matches("http://")
                    .split('/')
                    .next()
                    .unwrap_or("");
                // Chromium opens spare connections to its proxy ahead of
                // need; one that never carries a request is not a request.
                if !line.is_empty() && !browser_service(host) {
                    p2.lock().unwrap().push(line);
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let browse = |extra: &str| {
        let mut c = std::process::Command::new(browser);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1000,3000",
            &format!("--proxy-server=127.0.0.1:{port}"),
            &format!("--user-data-dir={}", t.path("profile")),
            extra,
            &format!("file://{html}"),
        ]);
        c
    };
    let dom = browse("--dump-dom").succeeds();
    assert_eq!(dom.matches("<svg").count(), charts, "charts in the DOM");
    assert!(dom.matches("<table").count() >= 4, "tables in the DOM");
    check_report_content(&dom, &TESTS);
    let shot = t.path("shot.png");
    browse(&format!("--screenshot={shot}")).succeeds();
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    // A blank 1000x3000 page compresses to a few KB; charts and tables do not.
    assert!(
        png.len() > 40_000,
        "screenshot looks blank ({} bytes)",
        png.len()
    );
    stop.store(true, Ordering::Relaxed);
    proxy.join().unwrap();
    let page = page_requests.lock().unwrap();
    assert!(page.is_empty(), "the page made network requests: {page:?}");
    eprintln!(
        "browser background requests ignored: {}",
        all.load(Ordering::Relaxed)
    );
}

/// Seen: the Markdown report wrote a test named `<script>` raw (the HTML
/// report escaped it). Names from imports are text in both.
#[test]
fn hostile_names_are_text_in_markdown_and_html() {
    let t = Tmp::new();
    let table = t.file(
        "t.csv",
        "test,group,iops,cpu_pct\n\"<script>alert(1)</script>|x\",g*1,5000,20\n",
    );
    for label in ["base_a", "cand|b"] {
        t.cmd("results import --format table")
            .args([&table, "--config", label])
            .succeeds();
    }
    let (md, html) = (t.path("r.md"), t.path("r.html"));
    t.cmd("compare base_a cand|b")
        .args(["--md", &md, "--html", &html])
        .succeeds();
    let md = std::fs::read_to_string(md).unwrap();
    assert!(!md.contains("<script>"), "{md}");
    assert!(
        md.contains("&lt;script&gt;alert(1)&lt;/script&gt;\\|x"),
        "{md}"
    );
    assert!(md.contains("cand\\|b") && md.contains("base\\_a"), "{md}");
    // Every table row still has its table's column count: the `|` in the
    // name did not open a cell.
    let lines: Vec<&str> = md.lines().collect();
    let bars = |l: &str| l.replace("\\|", "").matches('|').count();
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with('|') && line.contains("script") {
            // The header is the line above the nearest separator above.
            let sep = (0..i)
                .rev()
                .find(|&j| lines[j].starts_with("|---"))
                .expect("a table header");
            assert_eq!(bars(line), bars(lines[sep - 1]), "{line}");
            checked += 1;
        }
    }
    assert!(checked >= 2, "{md}");
    let html = std::fs::read_to_string(html).unwrap();
    assert!(!html.contains("<script>alert"), "HTML escapes it too");
}

/// The "Warnings and notes" of a Markdown and an HTML report.
fn notes_sections(md: &str, html: &str) -> (String, String) {
    let section = |text: &str, start: &str, next: &str| -> String {
        let after = text.split_once(start).map_or("", |x| x.1);
        after.split(next).next().unwrap_or_default().to_string()
    };
    (
        section(md, "## Warnings and notes", "\n## "),
        section(html, "<h2 id=\"notes\">", "<h2"),
    )
}

/// A single measurement's run holds its result's notes as the run's too:
/// the report says each once, under the test. A note only a run has (a
/// smoke run's overridden durations) is still said.
#[test]
fn each_note_is_reported_once() {
    let t = Tmp::new();
    let srv = common::server::Server::start("127.0.0.1", &[]);
    t.cmd("net stream --time 1s --ramp 0s --quiet --config single")
        .arg(&srv.addr)
        .succeeds();
    let suite = t.file(
        "one.toml",
        "name = \"one\"\nreps = 1\n\n[[test]]\nname = \"s\"\nkind = \"net-stream\"\n",
    );
    t.cmd("suite run --quiet --time 800ms --ramp 0s")
        .args([&suite, "--config", "smoke"])
        .succeeds();
    let same_host = "the endpoint is on this host";
    for (label, test, run_only) in [
        ("single", "stream/dir=tx,conns=1,msg=128k", None),
        ("smoke", "s", Some("durations overridden:")),
    ] {
        let (html, md) = (
            t.path(&format!("{label}.html")),
            t.path(&format!("{label}.md")),
        );
        t.cmd("report")
            .args([label, "--html", &html, "--md", &md])
            .succeeds();
        let md = std::fs::read_to_string(&md).unwrap();
        let html = std::fs::read_to_string(&html).unwrap();
        let (md_notes, html_notes) = notes_sections(&md, &html);
        assert_eq!(md_notes.matches(same_host).count(), 1, "{md_notes}");
        assert_eq!(html_notes.matches(same_host).count(), 1, "{html_notes}");
        let line = md_notes.lines().find(|l| l.contains(same_host)).unwrap();
        assert!(
            line.starts_with(&format!("- {label} {test}: ")),
            "the note is the test's: {line}"
        );
        if let Some(n) = run_only {
            assert_eq!(md_notes.matches(n).count(), 1, "{md_notes}");
            assert_eq!(html_notes.matches(n).count(), 1, "{html_notes}");
        }
    }
}
