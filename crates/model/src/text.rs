//! Names from files, peers and imports shown on a terminal.

use std::borrow::Cow;

/// `s` with every control character written as an escape (`\u{1b}`), so a
/// name from a suite file, an import or a peer cannot move the cursor,
/// clear the screen or retitle the terminal. Newlines and tabs are
/// escaped too: a name is one line.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `n` and the noun, singular for one: "1 test", "3 tests".
/// An error and its causes, each said once: library errors that print
/// their source in their own message (`{context}: {source}`) also hand it
/// on as their cause, and printing every link would repeat it.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let s = c.to_string();
        if !msg.contains(&s) {
            msg = format!("{msg}: {s}");
        }
        cause = c.source();
    }
    msg
}

pub fn count(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// The name among `names` a mistyped `word` most likely meant, for "did
/// you mean": the fewest edits (insert, delete, substitute, or swap two
/// neighbours: `rnu` is one from `run`), at most a third of the word; a
/// name the word begins (`lat_p99` for `lat_p99_us`) counts as one edit.
pub fn closest<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_lowercase();
    let w: Vec<char> = lower.chars().collect();
    let most = (w.len() / 3).max(1);
    let distance = |n: &str| {
        let n = n.to_lowercase();
        if w.len() >= 3 && n.starts_with(&lower) {
            1
        } else {
            edits(&w, &n.chars().collect::<Vec<_>>())
        }
    };
    names
        .into_iter()
        .map(|n| (distance(n), n))
        .filter(|(d, _)| *d <= most)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Optimal string alignment distance between `a` and `b`.
fn edits(a: &[char], b: &[char]) -> usize {
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// Whether `s` has a DNS label's form: 1 to `max` characters of a-z, 0-9
/// and '-', not starting or ending with '-' (names that become network
/// namespaces' or Kubernetes objects').
pub fn is_label(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len())
        && (s.bytes()).all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct E(&'static str, Option<Box<E>>);
    impl std::fmt::Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for E {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn an_error_chain_says_each_cause_once() {
        let io = E("Permission denied", None);
        let ctx = E("opening r.db: Permission denied", Some(Box::new(io)));
        let top = E("the results database", Some(Box::new(ctx)));
        assert_eq!(
            error_chain(&top),
            "the results database: opening r.db: Permission denied"
        );
    }

    #[test]
    fn counts_say_one_test_and_two_tests() {
        assert_eq!(
            (count(1, "test"), count(2, "test"), count(0, "test")),
            ("1 test".into(), "2 tests".into(), "0 tests".into())
        );
    }

    #[test]
    fn closest_names_a_swap_a_typo_and_nothing_far() {
        assert_eq!(closest("rnu", ["run", "specs"]), Some("run"));
        assert_eq!(closest("iopz", ["iops", "mb_s"]), Some("iops"));
        assert_eq!(
            closest("lat_p99", ["lat_p99_us", "lat_p50_us"]),
            Some("lat_p99_us")
        );
        assert_eq!(closest("zzzz", ["run", "specs"]), None);
    }

    #[test]
    fn control_characters_are_escaped() {
        assert!(matches!(printable("disk/bs=4k"), Cow::Borrowed(_)));
        assert_eq!(printable("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(printable("x\ny\u{7}"), "x\\ny\\u{7}");
        assert_eq!(printable("µs — ok"), "µs — ok");
        assert_eq!(printable("\u{9b}31m"), "\\u{9b}31m");
    }
}
