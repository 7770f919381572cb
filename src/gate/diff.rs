//! Reads what a commit range adds: the changed files with their blob sizes and every added
//! line with its line number in the new version.
//!
//! The checks only look at added lines, so a conflict marker or a key that was already in the
//! base is not blamed on the range. `git diff -U0` gives exactly those lines; hunk headers give
//! their numbers.

use super::GateError;
use crate::git::Git;

/// One file the range changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// Repository-relative path in the new version (the old one for deletions).
    pub path: String,
    /// `A`dded, `M`odified, `D`eleted, `T`ype changed (git's status letter).
    pub status: char,
    /// Size of the old blob in bytes, `None` when the file is new or not a blob.
    pub old_size: Option<u64>,
    /// Size of the new blob in bytes, `None` when deleted or not a blob (a submodule).
    pub new_size: Option<u64>,
}

/// One line the range added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedLine {
    pub path: String,
    /// 1-based line number in the new version of the file.
    pub line: u32,
    pub text: String,
}

/// Everything the deterministic checks need to know about a range.
#[derive(Debug, Clone, Default)]
pub struct RangeDiff {
    pub files: Vec<ChangedFile>,
    pub added: Vec<AddedLine>,
}

impl RangeDiff {
    /// Returns the changed paths (both sides of a rename are listed, renames are not detected).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.path.as_str())
    }
}

/// Returns the files and added lines between `base` and `tip` (both commit or tree ids).
pub fn read_diff(git: &Git, base: &str, tip: &str) -> Result<RangeDiff, GateError> {
    let files = changed_files(git, base, tip)?;
    // A diff with bytes that are not UTF-8 is read lossily.
    let patch = git.diff_zero_context(base, tip, &[])?;
    Ok(RangeDiff {
        files,
        added: parse_added(&patch),
    })
}

/// Lists changed files with `diff --raw`, then sizes every blob in one `cat-file` batch.
fn changed_files(git: &Git, base: &str, tip: &str) -> Result<Vec<ChangedFile>, GateError> {
    let raw = git.diff_raw(base, tip)?;
    let mut parts = raw.split('\0').filter(|s| !s.is_empty());
    let mut entries = Vec::new();
    while let (Some(meta), Some(path)) = (parts.next(), parts.next()) {
        // ":100644 100644 <old> <new> M"
        let fields: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        if fields.len() < 5 {
            continue;
        }
        let blob = |mode: &str, id: &str| {
            (mode.starts_with("100") || mode == "120000") && !id.bytes().all(|b| b == b'0')
        };
        let old = blob(fields[0], fields[2]).then(|| fields[2].to_string());
        let new = blob(fields[1], fields[3]).then(|| fields[3].to_string());
        let status = fields[4].chars().next().unwrap_or('M');
        entries.push((path.to_string(), status, old, new));
    }
    let ids: Vec<&str> = entries
        .iter()
        .flat_map(|(_, _, o, n)| [o.as_deref(), n.as_deref()])
        .flatten()
        .collect();
    let sizes = git.object_sizes(&ids)?;
    Ok(entries
        .into_iter()
        .map(|(path, status, old, new)| ChangedFile {
            path,
            status,
            old_size: old.and_then(|id| sizes.get(&id).copied()),
            new_size: new.and_then(|id| sizes.get(&id).copied()),
        })
        .collect())
}

/// Parses a `-U0` patch into added lines, counting each hunk's new lines so that an added line
/// which itself starts with `++` is never mistaken for a file header.
fn parse_added(patch: &str) -> Vec<AddedLine> {
    let mut out = Vec::new();
    let mut path: Option<String> = None;
    let mut next_line = 0u32;
    let mut remaining = 0u32;
    for line in patch.lines() {
        if remaining > 0 {
            if let Some(text) = line.strip_prefix('+') {
                if let Some(p) = &path {
                    out.push(AddedLine {
                        path: p.clone(),
                        line: next_line,
                        text: text.to_string(),
                    });
                }
                next_line += 1;
                remaining -= 1;
            }
            // '-' lines and "\ No newline" markers do not count against new lines.
            continue;
        }
        if let Some(rest) = line.strip_prefix("+++ ") {
            path = if rest == "/dev/null" {
                None
            } else {
                Some(unquote(rest.strip_prefix("b/").unwrap_or(rest)))
            };
        } else if let Some(header) = line.strip_prefix("@@ ") {
            // "@@ -a,b +c,d @@"
            if let Some(new) = header.split(' ').find(|s| s.starts_with('+')) {
                let new = &new[1..];
                let (start, count) = match new.split_once(',') {
                    Some((s, c)) => (s.parse().unwrap_or(0), c.parse().unwrap_or(0)),
                    None => (new.parse().unwrap_or(0), 1),
                };
                next_line = start;
                remaining = count;
            }
        }
    }
    out
}

/// Removes git's C-style quoting from a path it had to quote (tabs, newlines, quotes).
fn unquote(p: &str) -> String {
    let Some(inner) = p.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
        return p.to_string();
    };
    let inner = inner.strip_prefix("b/").unwrap_or(inner);
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_lines_carry_new_line_numbers() {
        let patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -2,0 +3,2 @@ fn\n++++ odd\n+two\n@@ -9 +10 @@\n-old\n+new\ndiff --git a/gone b/gone\n--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
        let added = parse_added(patch);
        let got: Vec<(&str, u32, &str)> = added
            .iter()
            .map(|a| (a.path.as_str(), a.line, a.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![("x", 3, "+++ odd"), ("x", 4, "two"), ("x", 10, "new")]
        );
    }

    #[test]
    fn quoted_paths_are_unquoted() {
        assert_eq!(unquote("\"b/a\\tb\""), "a\tb");
        assert_eq!(unquote("plain"), "plain");
    }
}
