//! The deterministic checks: each looks at a range's diff and returns findings, never errors,
//! so one review reports every problem at once.

use serde::{Deserialize, Serialize};

use super::diff::RangeDiff;
use super::{links, secrets};
use crate::plan::Scope;

/// Default largest size of an added file, in bytes (1 MiB).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 1024 * 1024;

/// How much a finding matters. `blocker` and `major` reject; `minor` and `nit` only inform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Blocker,
    Major,
    Minor,
    Nit,
}

impl Severity {
    /// Returns true if and only if a finding of this severity rejects the range.
    pub fn rejects(self) -> bool {
        matches!(self, Severity::Blocker | Severity::Major)
    }

    /// Returns the lower-case name shown to users.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Blocker => "blocker",
            Severity::Major => "major",
            Severity::Minor => "minor",
            Severity::Nit => "nit",
        }
    }
}

/// One problem a reviewer found, with where it is and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    /// The check or concern: `scope`, `conflict-marker`, `secret`, `file-size`, `validation`.
    pub category: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// What was seen; never a secret in clear.
    pub evidence: String,
    pub suggestion: String,
}

/// Settings of the deterministic checks.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Largest size in bytes an added (or newly grown) file may have.
    pub max_file_size: u64,
    /// How validation commands are confined (only `validation` is used).
    pub sandboxes: orchestra_sys::exec::process::Sandboxes,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            sandboxes: Default::default(),
        }
    }
}

/// Returns a blocker for every changed path outside the packet's declared `scope`.
pub fn check_scope(diff: &RangeDiff, scope: &Scope, packet: &str) -> Vec<Finding> {
    scope
        .violations(diff.paths())
        .into_iter()
        .map(|path| secrets::redact_text(&path))
        .map(|path| Finding {
            severity: Severity::Blocker,
            category: "scope".into(),
            file: Some(path.clone()),
            line: None,
            evidence: format!(
                "`{path}` is outside packet `{packet}`'s declared files ({})",
                scope.patterns().collect::<Vec<_>>().join(", ")
            ),
            suggestion:
                "revert the change to this path, or add it to the packet's `files` in the plan"
                    .into(),
        })
        .collect()
}

/// Returns a blocker for every symbolic link that, resolved through the other links of the
/// tip's tree, leads outside the repository (an absolute target, `..` above the top, more links
/// than [`links::MAX_HOPS`]) or into its git directory, when the range adds or changes it or a
/// link it passes through: whatever path it sits at, in scope or not, what it makes readable or
/// writable through it is not.
pub fn check_symlinks(diff: &RangeDiff) -> Vec<Finding> {
    let changed: std::collections::HashSet<&str> = diff
        .files
        .iter()
        .filter(|f| f.symlink.is_some())
        .map(|f| f.path.as_str())
        .collect();
    if changed.is_empty() {
        return Vec::new();
    }
    // The tip's links, and the changed ones even when the diff was put together by hand.
    let mut all = diff.links.clone();
    for f in &diff.files {
        if let Some(target) = &f.symlink {
            all.insert(f.path.clone(), target.clone());
        }
    }
    let mut out = Vec::new();
    for (path, target) in &all {
        let resolved = links::resolve(path, target, &all);
        let Some(escape) = resolved.escape else {
            continue;
        };
        if !resolved
            .through
            .iter()
            .any(|p| changed.contains(p.as_str()))
        {
            continue;
        }
        let via = match resolved.through.get(1..) {
            Some(rest) if !rest.is_empty() => format!(
                " once the links on its way are followed ({})",
                rest.iter()
                    .map(|p| format!("`{}`", secrets::safe_to_show(p)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => String::new(),
        };
        out.push(Finding {
            severity: Severity::Blocker,
            category: "symlink".into(),
            file: Some(secrets::redact_text(path)),
            line: None,
            evidence: format!(
                "`{}` is a symbolic link to `{}`, which leads {}{via}",
                secrets::safe_to_show(path),
                secrets::safe_to_show(target),
                escape.describe()
            ),
            suggestion: "replace the link with the file itself, or point it inside the repository (outside `.git`)"
                .into(),
        });
    }
    out
}

/// Returns a blocker for every added conflict marker line.
///
/// `<<<<<<<`, `|||||||` and `>>>>>>>` always count; a bare `=======` only in a file that also
/// gained an opening marker, since it doubles as a Markdown/reST heading underline.
pub fn check_conflict_markers(diff: &RangeDiff) -> Vec<Finding> {
    let is_marker = |text: &str, marker: &str| {
        text.strip_prefix(marker)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
    };
    let opened: std::collections::HashSet<&str> = diff
        .added
        .iter()
        .filter(|a| is_marker(&a.text, "<<<<<<<"))
        .map(|a| a.path.as_str())
        .collect();
    diff.added
        .iter()
        .filter(|a| {
            is_marker(&a.text, "<<<<<<<")
                || is_marker(&a.text, ">>>>>>>")
                || is_marker(&a.text, "|||||||")
                || (a.text == "=======" && opened.contains(a.path.as_str()))
        })
        .map(|a| Finding {
            severity: Severity::Blocker,
            category: "conflict-marker".into(),
            file: Some(a.path.clone()),
            line: Some(a.line),
            // Redacted before it is cut: a credential cut in two would no longer be recognised.
            evidence: secrets::redact_text(&a.text).chars().take(80).collect(),
            suggestion: "resolve the merge conflict and remove the marker lines".into(),
        })
        .collect()
}

/// Returns a blocker for every credential in an added line or in the name of a changed file,
/// reported only in redacted form.
pub fn check_secrets(diff: &RangeDiff) -> Vec<Finding> {
    let mut out = Vec::new();
    for f in &diff.files {
        for m in secrets::scan_line(&f.path) {
            out.push(Finding {
                severity: Severity::Blocker,
                category: "secret".into(),
                file: Some(secrets::redact_text(&f.path)),
                line: None,
                evidence: format!("{} `{}` in the file's name", m.kind.describe(), m.redacted),
                suggestion:
                    "rename the file and rewrite the commits that added it, revoke the credential"
                        .into(),
            });
        }
    }
    for a in &diff.added {
        for m in secrets::scan_line(&a.text) {
            out.push(Finding {
                severity: Severity::Blocker,
                category: "secret".into(),
                file: Some(a.path.clone()),
                line: Some(a.line),
                evidence: format!("{} `{}`", m.kind.describe(), m.redacted),
                suggestion: "remove it from the commits (rewrite them, do not just delete the line), revoke the credential, and load it from the environment or a secret store".into(),
            });
        }
    }
    out
}

/// Returns a blocker for every credential the range's history holds that its net diff does not
/// show: added by one commit and removed by a later one, in a commit message, or in the name of
/// a file that no longer exists — all published with the commits, whatever the tip looks like.
pub fn check_history_secrets(diff: &RangeDiff) -> Vec<Finding> {
    let in_tip: std::collections::HashSet<(String, String)> = diff
        .added
        .iter()
        .flat_map(|a| {
            secrets::scan_line(&a.text)
                .into_iter()
                .map(|m| (a.path.clone(), m.redacted))
        })
        .chain(diff.files.iter().flat_map(|f| {
            secrets::scan_line(&f.path)
                .into_iter()
                .map(|m| (secrets::redact_text(&f.path), m.redacted))
        }))
        .collect();
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for c in &diff.history {
        let short = &c.commit[..c.commit.len().min(12)];
        let mut found = |file: Option<String>,
                         line: Option<u32>,
                         m: secrets::SecretMatch,
                         where_: &str| {
            let key = (file.clone().unwrap_or_default(), m.redacted.clone());
            if in_tip.contains(&key) || !seen.insert(key) {
                return;
            }
            out.push(Finding {
                severity: Severity::Blocker,
                category: "secret".into(),
                file,
                line,
                evidence: format!("{} `{}` {where_} commit {short}; the tip no longer shows it, the history does", m.kind.describe(), m.redacted),
                suggestion: "rewrite the commits so none of them holds it (a later commit that removes it is not enough), and revoke the credential".into(),
            });
        };
        for a in &c.added {
            for m in secrets::scan_line(&a.text) {
                found(Some(a.path.clone()), Some(a.line), m, "was added by");
            }
        }
        for line in c.message.lines() {
            for m in secrets::scan_line(line) {
                found(None, None, m, "is in the message of");
            }
        }
        for path in &c.paths {
            for m in secrets::scan_line(path) {
                found(
                    Some(secrets::redact_text(path)),
                    None,
                    m,
                    "is in a file name in",
                );
            }
        }
    }
    out
}

/// Returns a blocker for every file the range adds, changes or removes whose content decides
/// what runs, where keys go or how agents review (`.orchestra/config.toml`, `.mcp.json`, role
/// files): a person must read such a change, since once merged it is the repository's own
/// configuration, and a trusted repository's configuration runs as the user.
pub fn check_trust_config(diff: &RangeDiff) -> Vec<Finding> {
    diff.files
        .iter()
        .filter(|f| crate::config::trust::is_trust_relevant(&f.path))
        .map(|f| Finding {
            severity: Severity::Blocker,
            category: "trust-config".into(),
            file: Some(f.path.clone()),
            line: None,
            evidence: format!(
                "changes trust-relevant configuration (`{}`): commands, servers, URLs, key names or roles the repository gives every user",
                f.path
            ),
            suggestion: "review the change yourself and merge it by hand, or revert it from the packet".into(),
        })
        .collect()
}

/// Returns a major finding for every file the range adds, or grows past the limit, that is
/// larger than `max` bytes. Files that were already that large are not blamed on the range.
pub fn check_file_sizes(diff: &RangeDiff, max: u64) -> Vec<Finding> {
    diff.files
        .iter()
        .filter(|f| {
            f.new_size.is_some_and(|n| n > max) && f.old_size.is_none_or(|old| old <= max)
        })
        .map(|f| Finding {
            severity: Severity::Major,
            category: "file-size".into(),
            file: Some(f.path.clone()),
            line: None,
            evidence: format!(
                "{} bytes, over the limit of {max} bytes",
                f.new_size.unwrap_or(0)
            ),
            suggestion: "keep large or generated files out of the repository (Git LFS, a release asset), or raise `orchestra.gate.maxFileSize`".into(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::diff::{AddedLine, ChangedFile};

    fn added(path: &str, line: u32, text: &str) -> AddedLine {
        AddedLine {
            path: path.into(),
            line,
            text: text.into(),
        }
    }

    #[test]
    fn conflict_markers_need_an_opening_for_bare_separators() {
        let diff = RangeDiff {
            files: vec![],
            added: vec![
                added("doc.md", 2, "======="),
                added("a.rs", 1, "<<<<<<< HEAD"),
                added("a.rs", 3, "======="),
                added("a.rs", 5, ">>>>>>> feature"),
                added("b.rs", 1, "<<<<<<<<<< not a marker"),
            ],
            history: vec![],
            links: Default::default(),
        };
        let lines: Vec<(String, u32)> = check_conflict_markers(&diff)
            .into_iter()
            .map(|f| (f.file.unwrap_or_default(), f.line.unwrap_or(0)))
            .collect();
        assert_eq!(
            lines,
            vec![("a.rs".into(), 1), ("a.rs".into(), 3), ("a.rs".into(), 5)]
        );
    }

    #[test]
    fn links_leading_out_of_the_repository_are_blockers() {
        let f = |path: &str, target: &str| ChangedFile {
            path: path.into(),
            status: 'A',
            old_size: None,
            new_size: Some(1),
            symlink: Some(target.into()),
        };
        let diff = RangeDiff {
            files: vec![
                f("out.txt", "/home/u/.ssh/id_rsa"),
                f("docs/x", "../README.md"),
            ],
            added: vec![],
            history: vec![],
            links: Default::default(),
        };
        let found = check_symlinks(&diff);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].file.as_deref(), Some("out.txt"));
        assert_eq!(found[0].severity, Severity::Blocker);
    }

    #[test]
    fn out_of_scope_paths_are_named_with_credentials_redacted() {
        let token = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A";
        let path = format!("keys/{token}.txt");
        let diff = RangeDiff {
            files: vec![ChangedFile {
                path: path.clone(),
                status: 'A',
                old_size: None,
                new_size: Some(1),
                symlink: None,
            }],
            ..RangeDiff::default()
        };
        let scope = Scope::new(&["src/"]).unwrap();
        let found = check_scope(&diff, &scope, "p1");
        assert_eq!(found.len(), 1);
        let shown = format!("{found:?}");
        assert!(!shown.contains(token), "{shown}");
        assert_eq!(
            found[0].file.as_deref(),
            Some(format!("keys/{}.txt", secrets::redact(token)).as_str())
        );
    }

    #[test]
    fn sizes_blame_only_new_growth() {
        let f = |path: &str, old: Option<u64>, new: Option<u64>| ChangedFile {
            path: path.into(),
            status: 'M',
            old_size: old,
            new_size: new,
            symlink: None,
        };
        let diff = RangeDiff {
            files: vec![
                f("new-big", None, Some(2000)),
                f("grew", Some(10), Some(2000)),
                f("was-big", Some(3000), Some(4000)),
                f("small", None, Some(1000)),
            ],
            added: vec![],
            history: vec![],
            links: Default::default(),
        };
        let files: Vec<String> = check_file_sizes(&diff, 1000)
            .into_iter()
            .filter_map(|f| f.file)
            .collect();
        assert_eq!(files, vec!["new-big", "grew"]);
    }
}
