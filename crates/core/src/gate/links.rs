//! Resolves a symbolic link of a tree the way a checkout would follow it: step by step through
//! the tree's other links, not by reading its target alone.
//!
//! Each link of a chain can look harmless on its own — `a/b -> ..` stays inside, and so does
//! `c -> a/b/..` read as text — while the chain leads out: `c` is the top's parent once `a/b`
//! is followed. The tree given is the one at the range's end (never the filesystem, which a
//! worker controls), and a resolution follows at most [`MAX_HOPS`] links, as the kernel does.

use std::collections::BTreeMap;

/// The most links one resolution follows (Linux's own limit); a longer chain or a loop is
/// treated as leading out, since nothing shows where it ends.
pub const MAX_HOPS: usize = 40;

/// Where a link that does not stay inside the working tree leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// To an absolute path (or an empty target).
    Absolute,
    /// Above the top of the repository, with `..`.
    AboveTop,
    /// Into the git directory (`.git` under any case, or a name Windows or macOS read as it).
    GitDir,
    /// Through more than [`MAX_HOPS`] links, or round a loop.
    TooDeep,
}

impl Escape {
    /// Returns the words that finish "… is a symbolic link to `…`, …" in a finding.
    pub fn describe(self) -> String {
        match self {
            Escape::Absolute | Escape::AboveTop => "outside the repository".into(),
            Escape::GitDir => "into the repository's git directory".into(),
            Escape::TooDeep => {
                format!("through more than {MAX_HOPS} links (a loop, or a chain that long)")
            }
        }
    }
}

/// How a link resolved: where it leads out, if it does, and the links followed on the way
/// (the link itself first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub escape: Option<Escape>,
    pub through: Vec<String>,
}

/// Returns how the link at repository path `path` pointing at `target` resolves when every
/// other link of `links` (path → target, the tree's) on its way is followed.
pub fn resolve(path: &str, target: &str, links: &BTreeMap<String, String>) -> Resolution {
    let mut through = vec![path.to_string()];
    let escape = walk(path, target, links, &mut through);
    Resolution { escape, through }
}

/// Walks `target` from the directory of `path`, component by component, replacing each link
/// met by its target; returns where it leads out, `None` when it stays inside.
fn walk<'a>(
    path: &'a str,
    target: &'a str,
    links: &'a BTreeMap<String, String>,
    through: &mut Vec<String>,
) -> Option<Escape> {
    if target.is_empty() || target.starts_with('/') {
        return Some(Escape::Absolute);
    }
    let mut dir: Vec<&'a str> = path.split('/').collect();
    dir.pop();
    let mut pending: std::collections::VecDeque<&'a str> = target.split('/').collect();
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        match part {
            "" | "." => {}
            ".." => {
                if dir.pop().is_none() {
                    return Some(Escape::AboveTop);
                }
            }
            name => {
                if is_git_dir(name) {
                    return Some(Escape::GitDir);
                }
                dir.push(name);
                let here = dir.join("/");
                let Some((seen, next)) = links.get_key_value(&here) else {
                    continue;
                };
                hops += 1;
                if hops > MAX_HOPS {
                    return Some(Escape::TooDeep);
                }
                through.push(seen.clone());
                if next.is_empty() || next.starts_with('/') {
                    return Some(Escape::Absolute);
                }
                dir.pop();
                for step in next.split('/').rev() {
                    pending.push_front(step);
                }
            }
        }
    }
    None
}

/// Returns true if and only if a checkout may read the path component `name` as `.git`: under
/// any case, with the trailing dots and spaces Windows drops, its 8.3 short name `git~1`, or
/// with the invisible characters macOS ignores (git's own `is_ntfs_dotgit`/`is_hfs_dotgit`).
fn is_git_dir(name: &str) -> bool {
    let ignorable = |c: char| matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2063}' | '\u{206A}'..='\u{206F}' | '\u{FEFF}');
    let visible: String = name.chars().filter(|c| !ignorable(*c)).collect();
    let trimmed = visible.trim_end_matches(['.', ' ']);
    trimmed.eq_ignore_ascii_case(".git") || trimmed.eq_ignore_ascii_case("git~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escape(path: &str, target: &str, links: &[(&str, &str)]) -> Option<Escape> {
        let map = links
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        resolve(path, target, &map).escape
    }

    #[test]
    fn targets_read_alone_lead_out_by_absolute_paths_and_dot_dot() {
        assert_eq!(
            escape("out.txt", "/etc/passwd", &[]),
            Some(Escape::Absolute)
        );
        assert_eq!(escape("out.txt", "../x", &[]), Some(Escape::AboveTop));
        assert_eq!(
            escape("a/b/out.txt", "../../../x", &[]),
            Some(Escape::AboveTop)
        );
        assert_eq!(
            escape("a/out.txt", "b/../../../x", &[]),
            Some(Escape::AboveTop)
        );
        assert_eq!(escape("a/b/out.txt", "../../x", &[]), None);
        assert_eq!(escape("a/out.txt", "./c/../d", &[]), None);
    }

    #[test]
    fn chains_are_followed_through_the_tree() {
        let links = [("a/b", ".."), ("c", "a/b/..")];
        assert_eq!(escape("c", "a/b/..", &links), Some(Escape::AboveTop));
        assert_eq!(escape("ok", "a/b/README.md", &links), None);
        let r = resolve(
            "c",
            "a/b/..",
            &links
                .iter()
                .map(|(p, t)| (p.to_string(), t.to_string()))
                .collect(),
        );
        assert_eq!(r.through, vec!["c", "a/b"]);
        let looped = [("l1", "l2"), ("l2", "l1")];
        assert_eq!(escape("l1", "l2", &looped), Some(Escape::TooDeep));
        assert_eq!(
            escape("x", "abs", &[("abs", "/tmp")]),
            Some(Escape::Absolute)
        );
    }

    #[test]
    fn the_git_directory_under_any_spelling_is_out() {
        for target in [
            ".git",
            ".GIT/hooks",
            "d/../.Git/config",
            ".git. ",
            "GIT~1",
            ".g\u{200C}it",
        ] {
            assert_eq!(escape("l", target, &[]), Some(Escape::GitDir), "{target}");
        }
        assert_eq!(escape("l", ".github/workflows", &[]), None);
        assert_eq!(
            escape("l", "up/config", &[("up", ".git")]),
            Some(Escape::GitDir)
        );
    }
}
