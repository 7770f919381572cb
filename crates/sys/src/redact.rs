//! Text made safe to show: secrets (API keys, forge tokens) replaced, long text clipped.
//!
//! Every message that may carry a secret — a provider's or forge's error body, an agent's
//! transcript line, a journaled event — goes through [`scrub`], and every bounded excerpt
//! through [`clip`]. When both apply, [`scrub_and_clip`] scrubs first: clipping first could cut
//! a secret in two and leave its first characters in the text, where the scrubber, looking for
//! the whole secret, would no longer find them.

/// Secrets shorter than this are left in place: so short a string cannot be told apart from
/// ordinary text, and replacing it everywhere would garble the message without hiding anything.
pub const MIN_SECRET_LEN: usize = 4;

/// Returns `text` with every occurrence of each of `secrets` replaced by `placeholder`.
pub fn scrub<'s>(
    text: &str,
    secrets: impl IntoIterator<Item = &'s str>,
    placeholder: &str,
) -> String {
    secrets
        .into_iter()
        .filter(|s| s.len() >= MIN_SECRET_LEN)
        .fold(text.to_string(), |t, s| t.replace(s, placeholder))
}

/// Returns at most `max` bytes of `text` (on a character boundary), marked with `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Returns `text` trimmed, scrubbed of `secrets`, then clipped to `max` bytes.
pub fn scrub_and_clip<'s>(
    text: &str,
    secrets: impl IntoIterator<Item = &'s str>,
    placeholder: &str,
    max: usize,
) -> String {
    clip(&scrub(text.trim(), secrets, placeholder), max)
}

/// Appends `c`'s UTF-8 bytes to `out` as three-digit octal escapes (`\033`), as git writes them.
fn push_octal(out: &mut String, c: char) {
    let mut buf = [0u8; 4];
    for b in c.encode_utf8(&mut buf).bytes() {
        out.push_str(&format!("\\{b:03o}"));
    }
}

/// Returns `path` as git prints it with `core.quotePath`: as it is when it holds no control
/// character, double quote or backslash; otherwise in double quotes with C escapes (`\t`,
/// `\n`, `\"`, `\\`) and the other control bytes as three octal digits (`\033`), so a file
/// name cannot move the cursor, recolour or retitle the terminal it is shown in.
pub fn quote_path(path: &str) -> std::borrow::Cow<'_, str> {
    let needs = |c: char| c.is_control() || c == '"' || c == '\\';
    if !path.chars().any(needs) {
        return path.into();
    }
    let mut out = String::with_capacity(path.len() + 2);
    out.push('"');
    for c in path.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => push_octal(&mut out, c),
            c => out.push(c),
        }
    }
    out.push('"');
    out.into()
}

/// Returns `text` safe to print on a terminal: control characters other than newline and tab
/// (escape sequences, carriage returns, C1 controls) written as octal escapes (`\033`), so text
/// that came from a repository or a model cannot drive the terminal it is shown in.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(bad) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            push_octal(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip("héllo", 2), "h…");
        assert_eq!(clip("abc", 3), "abc");
    }

    #[test]
    fn a_secret_straddling_the_cut_leaves_no_prefix() {
        let secret = "sk-abcdefghijklmnop";
        let text = format!("{}{secret} more text", "x".repeat(10));
        // Clipping at 20 bytes would keep `sk-abcdefg` if the text were clipped first.
        let naive = scrub(&clip(&text, 20), [secret], "***");
        assert!(naive.contains("sk-abcdefg"), "{naive}");
        let safe = scrub_and_clip(&text, [secret], "***", 20);
        assert!(!safe.contains("sk-"), "{safe}");
        assert_eq!(safe, "xxxxxxxxxx*** more t…");
    }

    #[test]
    fn short_secrets_and_absent_secrets_change_nothing() {
        assert_eq!(scrub("a b c", ["b"], "***"), "a b c");
        assert_eq!(
            scrub("nothing here", ["sk-long-key"], "***"),
            "nothing here"
        );
        assert_eq!(scrub("k1=aaaa k2=bbbb", ["aaaa", "bbbb"], "#"), "k1=# k2=#");
    }

    #[test]
    fn paths_are_quoted_as_git_quotes_them_and_terminals_get_no_escapes() {
        use super::{quote_path, terminal_safe};
        assert_eq!(quote_path("src/a b.rs"), "src/a b.rs");
        assert_eq!(quote_path("héllo.txt"), "héllo.txt");
        assert_eq!(quote_path("a\u{1b}[31mred"), "\"a\\033[31mred\"");
        assert_eq!(quote_path("tab\there"), "\"tab\\there\"");
        assert_eq!(quote_path("q\"uote"), "\"q\\\"uote\"");
        assert_eq!(terminal_safe("ok\nline\ttab"), "ok\nline\ttab");
        assert_eq!(
            terminal_safe("x\u{1b}]0;title\u{7}\r\u{9b}y"),
            "x\\033]0;title\\007\\015\\302\\233y"
        );
    }
}
