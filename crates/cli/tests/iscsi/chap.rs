//! CHAP through the CLI: one-way, mutual, a wrong secret and an
//! unprotected secret file.

use super::*;

const SECRET: &str = "Sekr1t-initiator-4f9c";
const TARGET_SECRET: &str = "Sekr1t-target-77ab10";
const WRONG: &str = "Wr0ng-secret-0d1e2f3";

/// A CHAP secret file in `dir` with `mode`.
pub(super) fn secret_file(dir: &tempfile::TempDir, name: &str, text: &str, mode: u32) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p.to_str().unwrap().to_string()
}

/// No secret appears in what a run printed.
fn no_secret(out: &Output) {
    for s in [SECRET, TARGET_SECRET, WRONG] {
        for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(
                !String::from_utf8_lossy(text).contains(s),
                "a secret in {what}: {}",
                String::from_utf8_lossy(text)
            );
        }
    }
}

#[test]
fn chap_one_way_mutual_wrong_and_unprotected() {
    let Some((tgt, iqn)) = Tgt::with_null_lun() else {
        return;
    };
    tgt.add_chap_account("ini", SECRET).unwrap();
    tgt.bind_incoming_account(1, "ini").unwrap();
    let url = tgt.url(&iqn, 1);
    let dir = tempfile::tempdir().unwrap();
    let line = |f: &str| format!("--time 1s --ramp 0s --json --chap-secret-file {f}");
    let good = format!("username = ini\npassword = {SECRET}\n");

    // Readable by others: refused before any connection is made.
    let open = secret_file(&dir, "open", &good, 0o644);
    let silent = SilentPeer::start();
    let nowhere = format!("iscsi://{}/{iqn}/1", silent.portal());
    for target in [&url, &nowhere] {
        let (out, took) = run_within(&mut disk(&[target], &line(&open)), FAULT_LIMIT);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&open) && err.contains("0644"), "{err}");
        assert!(err.contains("chmod 600"), "{err}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        no_secret(&out);
    }
    // `iscsi luns` and `iscsi discover` read the same file the same way.
    let (out, _) = run_within(
        raw().args(["iscsi", "luns", &nowhere, "--chap-secret-file", &open]),
        FAULT_LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("chmod 600"), "{}", stderr(&out));
    let (out, _) = run_within(
        raw().args([
            "iscsi",
            "discover",
            &silent.portal(),
            "--chap-secret-file",
            &open,
        ]),
        FAULT_LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    no_secret(&out);
    assert_eq!(silent.accepted(), 0, "connected despite the bad file");

    // Without credentials the target refuses.
    fails_within(
        &mut disk(&[&url], "--time 1s --ramp 0s"),
        1,
        &["uthentication"],
    );

    let ok = secret_file(&dir, "ok", &good, 0o600);
    let (out, _) = run_within(&mut disk(&[&url], &line(&ok)), Duration::from_secs(60));
    no_secret(&out);
    let doc = ok_json(&out);
    assert_eq!(disclosed(&doc)["auth"], "CHAP");
    assert!(metric(&doc, "iops") > 0.0);

    let wrong = secret_file(
        &dir,
        "wrong",
        &format!("username = ini\npassword = {WRONG}\n"),
        0o600,
    );
    let (out, _) = run_within(&mut disk(&[&url], &line(&wrong)), FAULT_LIMIT);
    no_secret(&out);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("authentication failed"), "{err}");
    assert!(out.stdout.is_empty(), "a result for a refused login");

    // Mutual: the target proves itself with its own account.
    tgt.add_chap_account("tgt", TARGET_SECRET).unwrap();
    tgt.bind_outgoing_account(1, "tgt").unwrap();
    let mutual = secret_file(
        &dir,
        "mutual",
        &format!("{good}username_in = tgt\npassword_in = {TARGET_SECRET}\n"),
        0o600,
    );
    let (out, _) = run_within(&mut disk(&[&url], &line(&mutual)), Duration::from_secs(60));
    no_secret(&out);
    let doc = ok_json(&out);
    assert_eq!(disclosed(&doc)["auth"], "CHAP (mutual)");
    // The target must know the secret we expect of it.
    let fake = secret_file(
        &dir,
        "fake",
        &format!("{good}username_in = tgt\npassword_in = {WRONG}\n"),
        0o600,
    );
    let (out, _) = run_within(&mut disk(&[&url], &line(&fake)), FAULT_LIMIT);
    no_secret(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Nor in the JSON of the runs that worked, nor in `iscsi luns`.
    let (out, _) = run_within(
        raw().args([
            "iscsi",
            "luns",
            &url,
            "--json",
            "--chap-secret-file",
            &mutual,
        ]),
        FAULT_LIMIT,
    );
    no_secret(&out);
    assert_eq!(ok_json(&out)["session"]["auth"], "CHAP (mutual)");
}
