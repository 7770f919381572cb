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
}
