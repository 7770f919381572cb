//! Checks that a packet with declared symbols kept its edits of a file inside them.
//!
//! Symbol-aware scheduling lets two packets edit one file at once on the word of the plan; this
//! check tells when that word was not kept. A finding does not fail the packet: its commit is
//! kept and the merge coordinator's in-memory merge, with its conflict path, is the safety
//! net. The spans are looked up again at the packet's own start commit (its dependencies' work
//! may have moved lines since the run's base), and the diff is read against that same commit.

use std::path::Path;

use crate::plan::{LineSpan, Packet, SymbolEntry, parse_entry, spans_at};
use orchestra_git::git::Git;

/// Changed lines of one file outside the packet's declared symbols.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Finding {
    pub file: String,
    /// The lines of the start commit, as ranges (`12-14, after 30`).
    pub lines: String,
    /// The packet's declared symbols in that file, as written.
    pub declared: Vec<String>,
}

/// Returns one finding per file in `changed` where `packet` declared symbols but changed lines
/// outside their spans between `start` and `head`.
///
/// Files whose spans cannot be found at `start` (the symbol was renamed by a dependency, the
/// file is no longer parsable) are skipped: there is nothing to measure against.
pub(super) fn findings(
    repo: &Path,
    packet: &Packet,
    start: &str,
    head: &str,
    changed: &[String],
) -> Vec<Finding> {
    let entries: Vec<(SymbolEntry, &String)> = packet
        .symbols
        .iter()
        .filter_map(|w| parse_entry(w).ok().map(|e| (e, w)))
        .collect();
    let mut files: Vec<&str> = entries.iter().map(|(e, _)| e.file.as_str()).collect();
    files.sort_unstable();
    files.dedup();
    let mut out = Vec::new();
    for file in files {
        if !changed.iter().any(|c| c == file) {
            continue;
        }
        let mine: Vec<SymbolEntry> = entries
            .iter()
            .filter(|(e, _)| e.file == file)
            .map(|(e, _)| e.clone())
            .collect();
        let Some(spans) = spans_at(repo, start, file, &mine) else {
            continue;
        };
        let Ok(diff) = Git::new(repo).diff_zero_context(start, head, &[file]) else {
            continue;
        };
        let outside: Vec<String> = hunks(&diff)
            .into_iter()
            .filter_map(|h| h.outside(&spans))
            .collect();
        if !outside.is_empty() {
            out.push(Finding {
                file: file.to_string(),
                lines: outside.join(", "),
                declared: entries
                    .iter()
                    .filter(|(e, _)| e.file == file)
                    .map(|(_, w)| (*w).clone())
                    .collect(),
            });
        }
    }
    out
}

/// The old side of one diff hunk: `count` lines from `start`, or an insertion after line
/// `start` when `count` is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hunk {
    start: u32,
    count: u32,
}

impl Hunk {
    /// Returns the part of the hunk outside every span, as text, or `None` when it is inside.
    fn outside(&self, spans: &[LineSpan]) -> Option<String> {
        if self.count == 0 {
            // Inserted between lines `start` and `start + 1`: inside only when both are.
            let inside = spans
                .iter()
                .any(|s| s.contains(self.start) && s.contains(self.start + 1));
            return (!inside).then(|| format!("after {}", self.start));
        }
        let lines: Vec<u32> = (self.start..self.start + self.count)
            .filter(|l| !spans.iter().any(|s| s.contains(*l)))
            .collect();
        let (first, last) = (lines.first()?, lines.last()?);
        Some(if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        })
    }
}

/// Returns the old-side ranges of the hunks of a `git diff -U0` output.
fn hunks(diff: &str) -> Vec<Hunk> {
    diff.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("@@ -")?;
            let old = rest.split_whitespace().next()?;
            let (start, count) = match old.split_once(',') {
                Some((s, c)) => (s.parse().ok()?, c.parse().ok()?),
                None => (old.parse().ok()?, 1),
            };
            Some(Hunk { start, count })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers_are_read() {
        let diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -3 +3 @@ fn a\n-x\n+y\n@@ -10,0 +11,2 @@\n+a\n+b\n@@ -20,4 +22,0 @@\n";
        assert_eq!(
            hunks(diff),
            vec![
                Hunk { start: 3, count: 1 },
                Hunk {
                    start: 10,
                    count: 0
                },
                Hunk {
                    start: 20,
                    count: 4
                },
            ]
        );
    }

    #[test]
    fn outside_parts_are_named() {
        let spans = [LineSpan { start: 5, end: 9 }];
        assert_eq!(Hunk { start: 6, count: 2 }.outside(&spans), None);
        assert_eq!(
            Hunk { start: 8, count: 4 }.outside(&spans).as_deref(),
            Some("10-11")
        );
        assert_eq!(Hunk { start: 6, count: 0 }.outside(&spans), None);
        assert_eq!(
            Hunk { start: 9, count: 0 }.outside(&spans).as_deref(),
            Some("after 9")
        );
        assert_eq!(
            Hunk { start: 2, count: 1 }.outside(&spans).as_deref(),
            Some("2")
        );
    }
}
