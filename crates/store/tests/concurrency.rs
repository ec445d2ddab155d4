//! Many processes opening a fresh results database at the same instant:
//! every one of them must succeed (issue 9, section 5).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

const CHILD_ENV: &str = "IOTOLL_STORE_TEST_CHILD_DB";

/// The child's side: wait at the barrier (stdin until EOF), then open the
/// database and store a run.
#[test]
#[ignore = "the child process of many_processes_open_a_fresh_database_at_once, which runs it"]
fn child_opens_at_the_barrier() {
    let db =
        std::env::var_os(CHILD_ENV).expect("run by many_processes_open_a_fresh_database_at_once");
    println!("IOTOLL-READY");
    std::io::stdout().flush().unwrap();
    let mut sink = Vec::new();
    std::io::stdin().read_to_end(&mut sink).unwrap();
    let s = iotoll_store::Store::open(std::path::Path::new(&db))
        .unwrap_or_else(|e| panic!("OPEN FAILED: {e}"));
    s.check_ready().unwrap_or_else(|e| panic!("NOT READY: {e}"));
    s.begin_run("concurrent", Some("c"), "", &serde_json::Value::Null, &[])
        .unwrap_or_else(|e| panic!("WRITE FAILED: {e}"));
    drop(s);
    let r = iotoll_store::Store::open_read_only(std::path::Path::new(&db))
        .unwrap_or_else(|e| panic!("READ-ONLY OPEN FAILED: {e}"));
    r.list_runs().unwrap_or_else(|e| panic!("LIST FAILED: {e}"));
}

#[test]
fn many_processes_open_a_fresh_database_at_once() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    const PROCS: usize = 16;
    const ROUNDS: usize = 20;
    let exe = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for round in 0..ROUNDS {
        let db = dir.path().join(format!("round{round}/results.db"));
        let mut children: Vec<_> = (0..PROCS)
            .map(|_| {
                Command::new(&exe)
                    .args(["--exact", "child_opens_at_the_barrier", "--nocapture"])
                    .arg("--ignored")
                    .args(["--test-threads", "1"])
                    .env(CHILD_ENV, &db)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        // Every child is at the barrier before any is released.
        let mut outs = Vec::new();
        for c in &mut children {
            let mut out = BufReader::new(c.stdout.take().unwrap());
            let mut line = String::new();
            loop {
                line.clear();
                assert!(out.read_line(&mut line).unwrap() > 0, "child ended early");
                if line.contains("IOTOLL-READY") {
                    break;
                }
            }
            outs.push(out);
        }
        let stdins: Vec<_> = children.iter_mut().map(|c| c.stdin.take()).collect();
        drop(stdins);
        for (c, mut out) in children.into_iter().zip(outs) {
            let mut rest = String::new();
            let _ = out.read_to_string(&mut rest);
            let o = c.wait_with_output().unwrap();
            assert!(
                o.status.success(),
                "round {round}: a process failed: {rest}{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let s = iotoll_store::Store::open_read_only(&db).unwrap();
        assert_eq!(s.list_runs().unwrap().len(), PROCS, "round {round}");
        assert!(s.integrity_ok().unwrap());
        // No temporary files of the creation left behind.
        let left: Vec<_> = std::fs::read_dir(db.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".new-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
