//! The parts of the docs the code generates: sample outputs in README.md
//! (a fenced block between `<!-- sample:NAME -->` and `<!-- /sample:NAME -->`)
//! and whole files such as docs/example-report.html. Each is checked
//! against what the code renders from a fixed fixture; with `IOTOLL_BLESS=1`
//! (docs/gen.sh) it is rewritten instead. Shared by the binary's unit tests
//! and the integration tests (included with `#[path]`).

use std::path::PathBuf;

/// A file of the repository, from its root.
pub fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(rel)
}

fn bless() -> bool {
    std::env::var_os("IOTOLL_BLESS").is_some()
}

/// The first line that differs, to read in a test failure.
fn first_difference(have: &str, want: &str) -> String {
    let (mut h, mut w) = (have.lines(), want.lines());
    for n in 1.. {
        match (h.next(), w.next()) {
            (None, None) => break,
            (a, b) if a == b => continue,
            (a, b) => {
                return format!(
                    "line {n}:\n  checked in: {}\n  rendered:   {}",
                    a.unwrap_or("(end)"),
                    b.unwrap_or("(end)")
                )
            }
        }
    }
    "they differ in line endings or a final newline".into()
}

/// README.md's sample `name` must be `text` in a fenced block.
pub fn readme_sample(name: &str, text: &str) {
    let path = repo_file("README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md is readable");
    let (open, close) = (
        format!("<!-- sample:{name} -->\n"),
        format!("<!-- /sample:{name} -->"),
    );
    let start = readme
        .find(&open)
        .unwrap_or_else(|| panic!("README.md has no {open}"))
        + open.len();
    let end = start
        + readme[start..]
            .find(&close)
            .unwrap_or_else(|| panic!("README.md has no {close} after {open}"));
    let want = format!("```\n{text}```\n");
    let have = &readme[start..end];
    if have == want {
        return;
    }
    if bless() {
        let new = format!("{}{want}{}", &readme[..start], &readme[end..]);
        std::fs::write(&path, new).expect("README.md is writable");
        return;
    }
    panic!(
        "README.md's sample `{name}` is not what the code renders now ({}); run docs/gen.sh and commit the result",
        first_difference(have, &want)
    );
}

/// The file `rel` must hold exactly `text`.
pub fn generated_file(rel: &str, text: &str) {
    let path = repo_file(rel);
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have == text {
        return;
    }
    if bless() {
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{rel}: {e}"));
        return;
    }
    panic!(
        "{rel} is not what the code renders now ({}); run docs/gen.sh and commit the result",
        first_difference(&have, text)
    );
}
