//! Applying a unified diff to one file's text, for `edit_file`'s diff mode.
//!
//! Written for diffs a model produces: hunk line counts are often wrong and are ignored (a
//! hunk's body runs to the next `@@`), a blank body line counts as blank context, and a hunk
//! that moved is found near its stated line. A hunk that matches nowhere fails the whole
//! patch — nothing is written — with a message saying which hunk, where it was expected and
//! what the file holds there, so the model can regenerate it.

/// One hunk: its header, stated start line (1-based in the old file) and body lines.
struct Hunk<'d> {
    header: &'d str,
    old_start: usize,
    lines: Vec<(char, &'d str)>,
}

/// Returns `text` with `diff` applied, or a message the model can act on.
pub(super) fn apply(text: &str, diff: &str, path: &str) -> Result<String, String> {
    let hunks = parse(diff)?;
    let crlf = text.contains("\r\n");
    let ends_with_newline = text.ends_with('\n') || text.is_empty();
    let mut lines: Vec<String> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
        .collect();
    if text.is_empty() {
        lines.clear();
    }
    // Where the next hunk may start, and how far earlier hunks shifted the line numbers.
    let mut floor = 0usize;
    let mut shift: isize = 0;
    for (n, hunk) in hunks.iter().enumerate() {
        let old: Vec<&str> = hunk
            .lines
            .iter()
            .filter(|(k, _)| *k != '+')
            .map(|(_, l)| *l)
            .collect();
        let new: Vec<String> = hunk
            .lines
            .iter()
            .filter(|(k, _)| *k != '-')
            .map(|(_, l)| l.to_string())
            .collect();
        let hint = (hunk.old_start.saturating_sub(1) as isize + shift).max(0) as usize;
        let at = if old.is_empty() {
            Some(hint.clamp(floor, lines.len()))
        } else {
            find(&lines, &old, hint, floor)
        };
        let Some(at) = at else {
            return Err(mismatch(n + 1, hunk, &lines, &old, hint, path));
        };
        lines.splice(at..at + old.len(), new.iter().cloned());
        floor = at + new.len();
        shift += new.len() as isize - old.len() as isize;
    }
    let sep = if crlf { "\r\n" } else { "\n" };
    let mut out = lines.join(sep);
    if ends_with_newline && !lines.is_empty() {
        out.push_str(sep);
    }
    Ok(out)
}

/// Parses the hunks of `diff`, skipping `diff`/`---`/`+++`/`index` header lines.
fn parse(diff: &str) -> Result<Vec<Hunk<'_>>, String> {
    let mut hunks: Vec<Hunk<'_>> = Vec::new();
    for line in diff.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.starts_with("@@") {
            let old_start = line
                .trim_start_matches('@')
                .trim()
                .strip_prefix('-')
                .and_then(|r| r.split([',', ' ']).next())
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| {
                    format!("the hunk header `{line}` is not of the form `@@ -12,3 +12,4 @@`")
                })?;
            hunks.push(Hunk {
                header: line,
                old_start,
                lines: Vec::new(),
            });
            continue;
        }
        let Some(hunk) = hunks.last_mut() else {
            if line.starts_with("--- /dev/null") {
                return Err("this diff creates a new file; use write_file to create files".into());
            }
            // File headers and anything else before the first hunk.
            continue;
        };
        match line.chars().next() {
            Some(k @ (' ' | '-' | '+')) => hunk.lines.push((k, &line[1..])),
            Some('\\') => {} // "\ No newline at end of file"
            None => hunk.lines.push((' ', "")),
            Some(_) => {
                return Err(format!(
                    "line `{line}` in hunk `{}` starts with neither a space, `-` nor `+`; every line of a hunk needs one of those prefixes",
                    hunk.header
                ));
            }
        }
    }
    if hunks.is_empty() {
        return Err("the diff has no hunk (no line starting with `@@`); give a unified diff such as `@@ -3,2 +3,2 @@` followed by ` context`, `-old` and `+new` lines".into());
    }
    if let Some(empty) = hunks.iter().find(|h| h.lines.is_empty()) {
        return Err(format!("hunk `{}` has no lines", empty.header));
    }
    Ok(hunks)
}

/// Returns where `old` occurs in `lines` at or after `floor`, closest to `hint`.
fn find(lines: &[String], old: &[&str], hint: usize, floor: usize) -> Option<usize> {
    let fits = |at: usize| {
        at + old.len() <= lines.len()
            && lines[at..at + old.len()]
                .iter()
                .zip(old)
                .all(|(have, want)| have.trim_end() == want.trim_end())
    };
    let last = lines.len().checked_sub(old.len())?;
    if last < floor {
        return None;
    }
    let hint = hint.clamp(floor, last);
    (0..=last.max(hint))
        .flat_map(|d| [hint.checked_sub(d), hint.checked_add(d)])
        .flatten()
        .filter(|&at| at >= floor && at <= last)
        .find(|&at| fits(at))
}

/// Explains why hunk `n` did not apply: the first line that differs at its stated place.
fn mismatch(
    n: usize,
    hunk: &Hunk<'_>,
    lines: &[String],
    old: &[&str],
    hint: usize,
    path: &str,
) -> String {
    let detail = old
        .iter()
        .enumerate()
        .find_map(|(i, want)| {
            let have = lines.get(hint + i);
            (have.map(|h| h.trim_end()) != Some(want.trim_end())).then(|| match have {
                Some(h) => format!(
                    "line {} of `{path}` is `{h}` but the hunk expects `{want}`",
                    hint + i + 1
                ),
                None => format!(
                    "`{path}` has only {} lines but the hunk expects `{want}` at line {}",
                    lines.len(),
                    hint + i + 1
                ),
            })
        })
        .unwrap_or_else(|| "its lines overlap an earlier hunk".to_string());
    format!(
        "hunk {n} (`{}`) does not apply: its context and removed lines were found nowhere in `{path}`; {detail}. Nothing was changed. Read the file again and make the diff from its current text (or use search/replace)",
        hunk.header
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "one\ntwo\nthree\nfour\nfive\nsix\n";

    #[test]
    fn hunks_apply_even_when_moved_or_miscounted() {
        let diff = "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n two\n-three\n+THREE\n@@ -9,9 +9,9 @@\n five\n-six\n+six!\n+seven\n";
        assert_eq!(
            apply(FILE, diff, "f").unwrap(),
            "one\ntwo\nTHREE\nfour\nfive\nsix!\nseven\n"
        );
        let insert = "@@ -0,0 +1 @@\n+zero\n";
        assert!(apply(FILE, insert, "f").unwrap().starts_with("zero\none\n"));
        assert_eq!(
            apply("a\r\nb\r\n", "@@ -1 +1 @@\n-a\n+A\n", "f").unwrap(),
            "A\r\nb\r\n"
        );
    }

    #[test]
    fn a_hunk_that_does_not_match_says_where_and_what() {
        let err = apply(FILE, "@@ -3,2 +3,2 @@\n three\n-FOUR\n+4\n", "f").unwrap_err();
        assert!(
            err.contains("hunk 1")
                && err.contains("line 4 of `f` is `four` but the hunk expects `FOUR`"),
            "{err}"
        );
        let err = apply(FILE, "just replace two", "f").unwrap_err();
        assert!(err.contains("no hunk"), "{err}");
        let err = apply(FILE, "@@ -1 +1 @@\n*one\n", "f").unwrap_err();
        assert!(err.contains("prefixes"), "{err}");
        let err = apply(FILE, "--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+x\n", "f").unwrap_err();
        assert!(err.contains("write_file"), "{err}");
    }
}
