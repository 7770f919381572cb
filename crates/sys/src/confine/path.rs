//! Parses the paths callers give into normalised worktree-relative paths, and recognises the
//! names that always denote git metadata.
//!
//! Parsing is lexical and only decides what a path *means*; it is never the boundary. The
//! boundary is the capability handle on the root plus the symlink-free walk in `walk.rs`.

use std::path::{Path, PathBuf};

use super::ConfineError;

/// A path beneath the worktree root: zero or more plain names, without `.`, `..` or empty parts.
///
/// Zero names denote the root itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RelPath {
    names: Vec<String>,
}

impl RelPath {
    /// Returns the path made of `names`, which the caller guarantees are plain names.
    pub(crate) fn from_names(names: Vec<String>) -> RelPath {
        RelPath { names }
    }

    /// Parses `input` as a path relative to `root`, the way every public operation reads paths.
    ///
    /// The rules, chosen so that a model's mistakes get an explanation rather than a surprise:
    /// empty and NUL-containing paths are refused; absolute paths (`/x`, `C:\x`, `C:/x`,
    /// `\\server\share`) are refused; any other backslash is refused because on Linux it would
    /// silently become part of a file name; a leading `~` is refused because it reads as home
    /// expansion (`./~x` names such a file); empty parts and `.` are dropped; `..` removes the
    /// previous name and is refused when nothing is left to remove. `..` is therefore resolved
    /// lexically, before any lookup, so `link/..` never means "the parent of the link's target".
    pub(crate) fn parse(input: &str, root: &Path) -> Result<RelPath, ConfineError> {
        if input.is_empty() {
            return Err(ConfineError::Empty);
        }
        if input.contains('\0') {
            return Err(ConfineError::Nul {
                path: input.escape_debug().to_string(),
            });
        }
        if input.starts_with('/') {
            return Err(ConfineError::Absolute {
                path: input.to_string(),
                root: root.to_path_buf(),
            });
        }
        if is_windows_absolute(input) {
            return Err(ConfineError::WindowsPath {
                path: input.to_string(),
                root: root.to_path_buf(),
            });
        }
        if input.contains('\\') {
            return Err(ConfineError::Backslash {
                path: input.to_string(),
            });
        }
        if input.starts_with('~') {
            return Err(ConfineError::Tilde {
                path: input.to_string(),
                root: root.to_path_buf(),
            });
        }
        let mut names: Vec<String> = Vec::new();
        for part in input.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    if names.pop().is_none() {
                        return Err(ConfineError::LeavesRoot {
                            path: input.to_string(),
                            root: root.to_path_buf(),
                        });
                    }
                }
                name => names.push(name.to_string()),
            }
        }
        Ok(RelPath { names })
    }

    /// Returns true if and only if the path denotes the worktree root itself.
    pub(crate) fn is_root(&self) -> bool {
        self.names.is_empty()
    }

    /// Returns the plain names of the path, outermost first.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// Returns the parent's names and the last name, or `None` for the root.
    pub(crate) fn split_last(&self) -> Option<(&[String], &str)> {
        self.names
            .split_last()
            .map(|(last, parent)| (parent, last.as_str()))
    }

    /// Returns the path as a relative `PathBuf` (`.` for the root) for handing to cap-std.
    pub(crate) fn to_path_buf(&self) -> PathBuf {
        if self.names.is_empty() {
            PathBuf::from(".")
        } else {
            self.names.iter().collect()
        }
    }

    /// Returns the first prefix (for example `a/.git`) whose last name is git metadata.
    pub(crate) fn git_prefix(&self) -> Option<String> {
        self.names
            .iter()
            .position(|n| is_git_name(n))
            .map(|i| join(&self.names[..=i]))
    }
}

impl std::fmt::Display for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.names.is_empty() {
            f.write_str(".")
        } else {
            f.write_str(&join(&self.names))
        }
    }
}

/// Returns `names` joined with `/`, or `.` when there are none.
pub(crate) fn join(names: &[String]) -> String {
    if names.is_empty() {
        ".".to_string()
    } else {
        names.join("/")
    }
}

/// Returns true if and only if `input` is a Windows absolute path (`C:\`, `C:/`, `C:`, `\\x`).
fn is_windows_absolute(input: &str) -> bool {
    let bytes = input.as_bytes();
    let drive = bytes.len() >= 2
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && (bytes.len() == 2 || bytes[2] == b'\\' || bytes[2] == b'/');
    drive || input.starts_with("\\\\")
}

/// Returns true if and only if `name` is, or some file system may treat it as, `.git`.
///
/// Mirrors git's own `verify_path` protections so that a name git refuses to check out is also
/// refused here: ASCII case is ignored (case-insensitive and case-folding file systems), the
/// code points HFS+ ignores are dropped (`.g\u{200c}it`), an NTFS stream suffix (`.git::$DATA`)
/// and trailing dots and spaces (`.git.`, `.GIT `) are stripped as Windows does, and the
/// Windows short name `git~1` counts too. Names that merely start with `.git` (`.gitignore`,
/// `.github`) and plain `git` are ordinary.
pub(crate) fn is_git_name(name: &str) -> bool {
    let visible: String = name.chars().filter(|c| !is_hfs_ignorable(*c)).collect();
    let before_stream = visible.split(':').next().unwrap_or_default();
    let trimmed = before_stream.trim_end_matches(['.', ' ']);
    trimmed.eq_ignore_ascii_case(".git") || trimmed.eq_ignore_ascii_case("git~1")
}

/// Returns true if and only if HFS+ ignores `c` when comparing names (git's list in `utf8.c`).
fn is_hfs_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(input: &str) -> Result<RelPath, ConfineError> {
        RelPath::parse(input, Path::new("/wt"))
    }

    #[test]
    fn normalises_dots_and_empty_parts() {
        assert_eq!(parse("a//b/./c/").unwrap().to_string(), "a/b/c");
        assert_eq!(parse("a/../b").unwrap().to_string(), "b");
        assert!(parse(".").unwrap().is_root());
        assert!(parse("a/..").unwrap().is_root());
        assert_eq!(parse("./~x").unwrap().to_string(), "~x");
        assert_eq!(parse("a/~b/c~").unwrap().to_string(), "a/~b/c~");
        assert_eq!(parse("C:foo").unwrap().to_string(), "C:foo");
    }

    #[test]
    fn refuses_paths_that_leave_or_do_not_mean_a_relative_path() {
        for (input, want) in [
            ("", "empty"),
            ("..", "leaves the worktree"),
            ("../x", "leaves the worktree"),
            ("a/../../x", "leaves the worktree"),
            ("/etc/passwd", "absolute"),
            ("C:\\Windows", "Windows"),
            ("c:/x", "Windows"),
            ("\\\\server\\share", "Windows"),
            ("a\\..\\..\\x", "backslash"),
            ("~/x", "`~`"),
            ("~root/x", "`~`"),
            ("a\0b", "NUL"),
        ] {
            let err = parse(input).unwrap_err().to_string();
            assert!(err.contains(want), "{input:?}: {err}");
        }
    }

    #[test]
    fn recognises_git_names_like_git_does() {
        for name in [
            ".git",
            ".GIT",
            ".Git",
            ".git.",
            ".GIT ",
            ".git. . ",
            ".git::$INDEX_ALLOCATION",
            ".g\u{200c}it",
            "\u{feff}.git",
            "git~1",
            "GIT~1",
        ] {
            assert!(is_git_name(name), "{name:?}");
        }
        for name in [
            ".gitignore",
            ".github",
            "git",
            ".gitmodules",
            "x.git",
            "..git",
        ] {
            assert!(!is_git_name(name), "{name:?}");
        }
    }

    #[test]
    fn finds_the_git_prefix() {
        assert_eq!(
            parse("a/.GIT./b").unwrap().git_prefix().as_deref(),
            Some("a/.GIT.")
        );
        assert_eq!(parse(".github/x").unwrap().git_prefix(), None);
    }
}
