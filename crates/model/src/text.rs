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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert!(matches!(printable("disk/bs=4k"), Cow::Borrowed(_)));
        assert_eq!(printable("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(printable("x\ny\u{7}"), "x\\ny\\u{7}");
        assert_eq!(printable("µs — ok"), "µs — ok");
        assert_eq!(printable("\u{9b}31m"), "\\u{9b}31m");
    }
}
