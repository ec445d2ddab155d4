//! The command line as a new user meets it: version, completions, manual
//! page, help texts, suggestions for typos, and messages that say each
//! thing once.

mod common;
use common::*;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = cmd("--version").output().unwrap();
    assert!(out.status.success());
    let v = stdout(&out);
    // Tests run from a git checkout: the commit is there, as git names it.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        Some(h) => assert!(
            v.starts_with(&format!("iotoll {} (commit ", env!("CARGO_PKG_VERSION")))
                && v.contains(&h[..7]),
            "{v} (HEAD {h})"
        ),
        None => assert!(v.contains("commit unknown"), "{v}"),
    }
}

#[test]
fn completions_cover_every_subcommand_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = cmd(&format!("completions {shell}")).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let s = stdout(&out);
        for sub in ["disk", "net", "suite", "results", "compare", "lab", "agent"] {
            assert!(s.contains(sub), "{shell} completions lack {sub}");
        }
        // Options of a nested subcommand are completed too.
        assert!(
            s.contains("allow-destructive"),
            "{shell}: no disk run flags"
        );
    }
    cmd("completions tcsh").assert().failure().code(2);
}

#[test]
fn man_page_documents_nested_subcommands_and_their_options() {
    let out = cmd("man").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let s = stdout(&out);
    assert!(
        s.starts_with(".ie") || s.contains(".TH iotoll"),
        "not roff: {}",
        &s[..80.min(s.len())]
    );
    for section in [
        "IOTOLL DISK RUN",
        "IOTOLL NET STREAM",
        "IOTOLL SUITE RUN",
        "IOTOLL RESULTS EXPORT",
    ] {
        assert!(s.contains(section), "no {section} section");
    }
    assert!(
        s.contains("allow\\-destructive"),
        "disk run options missing"
    );
}

#[test]
fn a_mistyped_subcommand_gets_the_nearest_one() {
    for (line, want) in [
        ("disk rnu", "'run'"),
        ("resluts list", "'results'"),
        ("suite lsit", "'list'"),
    ] {
        let out = cmd(line).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{line}");
        let err = stderr(&out);
        assert!(
            err.contains("similar subcommand") && err.contains(want),
            "{line}: {err}"
        );
    }
}

#[test]
fn a_bad_metric_lists_the_metrics_and_the_likely_one() {
    let t = Tmp::new();
    let out = t.cmd("compare a b --metric iopz").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("did you mean 'iops'"), "{err}");
    assert!(
        err.contains("mbit_s_per_cpu_pct") && err.contains("lat_p99_us"),
        "{err}"
    );
}

#[test]
fn export_and_delete_explain_their_arguments_and_export_defaults_to_json() {
    for sub in ["export", "delete"] {
        let out = cmd(&format!("results {sub} --help")).output().unwrap();
        let h = stdout(&out);
        assert!(
            h.contains("Run id, or a configuration label"),
            "results {sub}: {h}"
        );
    }
    let h = stdout(&cmd("results export --help").output().unwrap());
    assert!(h.contains("[default: json]"), "{h}");
    for f in ["csv", "json", "iometer-csv"] {
        assert!(h.contains(f), "{f} not listed: {h}");
    }
    // No --format: the run as JSON.
    let t = Tmp::new();
    let table = t.file("t.csv", "test,iops\nr4k,1000\n");
    t.cmd("results import --format table --config imp")
        .arg(&table)
        .assert()
        .success();
    let out = t.cmd("results export imp").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["config"], "imp", "{v}");
    assert_eq!(v["tests"][0]["reps"][0]["doc"]["metrics"]["iops"], 1000.0);
}

#[test]
fn net_client_help_has_examples_and_exit_statuses() {
    for sub in ["stream", "rr"] {
        let h = stdout(&cmd(&format!("net {sub} --help")).output().unwrap());
        assert!(
            h.contains("Examples:") && h.contains(&format!("iotoll net {sub} ")),
            "{h}"
        );
        assert!(
            h.contains("Exit status: 0 done") && h.contains("130 interrupted"),
            "{h}"
        );
    }
}

#[test]
fn help_paragraphs_are_not_broken_mid_sentence() {
    // A line ending early and the next going on in lower case is a hard
    // newline inside a paragraph, which clap's wrapping leaves ragged.
    for sub in [
        "compare",
        "disk run",
        "suite run",
        "agent",
        "net serve",
        "report",
    ] {
        let h = stdout(&cmd(&format!("{sub} --help")).output().unwrap());
        let lines: Vec<&str> = h.lines().collect();
        for w in lines.windows(2) {
            let (a, b) = (w[0], w[1]);
            let goes_on = b.starts_with(|c: char| c.is_ascii_lowercase() || c == '(');
            let ends_early = !a.is_empty() && a.len() < 70 && !a.starts_with(' ');
            assert!(
                !(goes_on && ends_early),
                "{sub} --help breaks a paragraph:\n{a}\n{b}"
            );
        }
    }
}

#[test]
fn qd_bound_is_the_engine_s() {
    let out = cmd("disk run --qd 0 --time 1s --no-db").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("between 1 and 32768 with the io_uring engine"),
        "{err}"
    );
    let out = cmd("disk run --qd 0 --engine psync --time 1s --no-db")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("between 1 and 65536 with the psync engine"),
        "{err}"
    );
}

#[test]
fn results_list_columns_line_up_with_long_labels() {
    let t = Tmp::new();
    let table = t.file("t.csv", "test,iops\nr4k,1000\n");
    for label in ["a", "a-configuration-label-longer-than-twenty-characters"] {
        t.cmd(&format!("results import --format table --config {label}"))
            .arg(&table)
            .assert()
            .success();
    }
    let list = t.list();
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 3, "{list}");
    let col = |l: &str, word: &str| l.find(word).unwrap_or_else(|| panic!("{word} in {l}"));
    let status = col(lines[0], "status");
    for l in &lines[1..] {
        assert_eq!(col(l, "complete"), status, "status column moves:\n{list}");
    }
}

#[test]
fn a_refused_listen_says_why_once() {
    if !is_root() || !can_run("setpriv", which("setpriv")) {
        return;
    }
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(bin_path())
        .args(["net", "serve", "--listen", "127.0.0.1:80"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.matches("Permission denied").count(), 1, "{err}");
    assert!(err.contains("cannot listen on 127.0.0.1:80"), "{err}");
}

fn which(cmd: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}
