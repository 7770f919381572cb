//! A diff cut into parts small enough for one review prompt each, so every file of a large
//! change reaches a reviewer: padding one file cannot push another out of sight.
//!
//! Files go whole into a part while they fit; a file larger than a part is cut at line
//! boundaries into parts of its own. A diff that needs more than a bounded number of parts
//! is not reviewed by the model at all: it is rejected as too large to review.

/// Most bytes of the diff in one review prompt; the reviewer reads more with its tools.
pub(crate) const PART_BYTES: usize = 40_000;

/// Most parts a diff is reviewed in; a larger diff is rejected as too large to review.
pub(crate) const MAX_PARTS: usize = 8;

/// How a diff is reviewed: in these parts, or not at all because it is too large.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Split {
    /// The parts, in the diff's order; one (maybe empty) for a small diff.
    Parts(Vec<String>),
    /// More than [`MAX_PARTS`] parts would be needed: the diff's size and its files.
    TooLarge { bytes: usize, files: usize },
}

/// Returns `diff` cut into parts of at most `max_bytes` bytes each, files kept whole while
/// they fit, or [`Split::TooLarge`] when more than `max_parts` parts would be needed.
pub(crate) fn split(diff: &str, max_bytes: usize, max_parts: usize) -> Split {
    let files = file_sections(diff);
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    for file in &files {
        if current.len() + file.len() > max_bytes && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        if file.len() <= max_bytes {
            current.push_str(file);
        } else {
            parts.extend(pieces(file, max_bytes));
        }
    }
    if !current.is_empty() || parts.is_empty() {
        parts.push(current);
    }
    if parts.len() > max_parts {
        return Split::TooLarge {
            bytes: diff.len(),
            files: files.len(),
        };
    }
    Split::Parts(parts)
}

/// Returns the diff's file sections: each starts at a `diff --git` line (text before the
/// first one, if any, is a section of its own).
fn file_sections(diff: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in diff.split_inclusive('\n') {
        if line.starts_with("diff --git ") || at == 0 {
            starts.push(at);
        }
        at += line.len();
    }
    starts.dedup();
    let mut sections = Vec::with_capacity(starts.len());
    for (i, start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(diff.len());
        sections.push(&diff[*start..end]);
    }
    sections
}

/// Returns `text` cut into pieces of at most `max_bytes` bytes, at line ends where a line
/// fits and at character boundaries where one does not.
fn pieces(text: &str, max_bytes: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.split_inclusive('\n') {
        if current.len() + line.len() > max_bytes && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        let mut rest = line;
        while rest.len() > max_bytes {
            let mut cut = max_bytes;
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            out.push(rest[..cut].to_string());
            rest = &rest[cut..];
        }
        current.push_str(rest);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, lines: usize) -> String {
        let mut s = format!("diff --git a/{name} b/{name}\n");
        for i in 0..lines {
            s.push_str(&format!("+line {i}\n"));
        }
        s
    }

    #[test]
    fn small_files_share_a_part_and_a_large_one_is_cut_at_lines() {
        let diff = format!("{}{}{}", file("a", 2), file("b", 200), file("c", 2));
        let Split::Parts(parts) = split(&diff, 500, 8) else {
            panic!("too large")
        };
        assert!(parts.len() > 3, "{parts:?}");
        assert!(parts.iter().all(|p| p.len() <= 500));
        assert_eq!(parts.concat(), diff, "every byte reaches a part");
        assert!(parts.last().unwrap().contains("diff --git a/c b/c"));
        assert!(parts.iter().all(|p| p.ends_with('\n')));
    }

    #[test]
    fn a_diff_needing_too_many_parts_is_too_large_and_an_empty_one_is_one_part() {
        let diff = file("a", 1_000);
        assert_eq!(
            split(&diff, 100, 3),
            Split::TooLarge {
                bytes: diff.len(),
                files: 1
            }
        );
        assert_eq!(split("", 100, 3), Split::Parts(vec![String::new()]));
        let long = "é".repeat(100);
        let Split::Parts(parts) = split(&long, 9, 100) else {
            panic!("too large")
        };
        assert_eq!(parts.concat(), long);
    }
}
