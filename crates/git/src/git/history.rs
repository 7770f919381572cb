//! Reads a stretch of history commit by commit and moves single files between revisions in a
//! checkout: what mining tasks from a repository's own history needs.
//!
//! A range given by a user is passed after `--end-of-options`, so it can never be read as an
//! option.

use super::{Git, GitError};

/// One file a commit changes: how (`A`dded, `M`odified, `D`eleted, …) and its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// The status letter of `git diff --name-status` (renames are split into delete and add).
    pub status: char,
    pub path: String,
}

/// One first-parent commit of a range, as [`Git::first_parent_history`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryCommit {
    pub commit: String,
    /// Its first parent, `None` for a root commit.
    pub parent: Option<String>,
    /// Its full message (subject and body), without trailing blank lines.
    pub message: String,
    /// What it changes against its first parent (against the empty tree for a root commit),
    /// renames as delete plus add.
    pub changed: Vec<ChangedFile>,
}

impl Git {
    /// Returns the first-parent commits of `range`, oldest first, each with its first parent,
    /// message and changed files, read by one `git log` however long the range; a range git
    /// cannot read is the failure git reports.
    pub fn first_parent_history(&self, range: &str) -> Result<Vec<HistoryCommit>, GitError> {
        let out = self.run([
            "log",
            "--first-parent",
            "--reverse",
            "--diff-merges=first-parent",
            "--root",
            "--name-status",
            "--no-renames",
            "-z",
            "--format=%x1e%H%x1f%P%x1f%B%x1f",
            "--end-of-options",
            range,
            "--",
        ])?;
        Ok(out.split('\x1e').filter_map(history_record).collect())
    }

    /// Returns the first-parent commits of `range` (e.g. `v1.0..main`), oldest first; a range
    /// git cannot read is the failure git reports.
    pub fn first_parent_commits(&self, range: &str) -> Result<Vec<String>, GitError> {
        let out = self.run([
            "rev-list",
            "--first-parent",
            "--reverse",
            "--end-of-options",
            range,
            "--",
        ])?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// Returns the first parent of `commit`, or `None` for a root commit.
    pub fn first_parent(&self, commit: &str) -> Result<Option<String>, GitError> {
        self.resolve_commit(&format!("{commit}^1"))
    }

    /// Returns the full message (subject and body) of `commit`, without trailing blank lines.
    pub fn commit_message(&self, commit: &str) -> Result<String, GitError> {
        let out = self.run(["log", "-1", "--format=%B", "--end-of-options", commit, "--"])?;
        Ok(out.trim_end().to_string())
    }

    /// Returns the files that differ between `base` and `tip`, renames as delete plus add.
    pub fn changed_files(&self, base: &str, tip: &str) -> Result<Vec<ChangedFile>, GitError> {
        let out = self.run([
            "diff",
            "--name-status",
            "--no-renames",
            "-z",
            base,
            tip,
            "--",
        ])?;
        let mut fields = out.split('\0').filter(|f| !f.is_empty());
        let mut files = Vec::new();
        while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
            files.push(ChangedFile {
                status: status.chars().next().unwrap_or('M'),
                path: path.to_string(),
            });
        }
        Ok(files)
    }

    /// Makes `files` in this checkout as they are in `commit`: each is written from `commit`,
    /// or removed where `commit` does not have it. The index follows; nothing is committed.
    pub fn take_files_from(&self, commit: &str, files: &[ChangedFile]) -> Result<(), GitError> {
        let (gone, kept): (Vec<&ChangedFile>, Vec<&ChangedFile>) =
            files.iter().partition(|f| f.status == 'D');
        if !kept.is_empty() {
            let mut args = vec!["checkout", "--no-overlay", commit, "--"];
            args.extend(kept.iter().map(|f| f.path.as_str()));
            self.run(args)?;
        }
        if !gone.is_empty() {
            let mut args = vec!["rm", "-q", "--ignore-unmatch", "--"];
            args.extend(gone.iter().map(|f| f.path.as_str()));
            self.run(args)?;
        }
        Ok(())
    }

    /// Applies the unified diff `patch` to this checkout's files and index; a patch that does
    /// not apply changes nothing and is the failure git reports.
    pub fn apply_patch(&self, patch: &str) -> Result<(), GitError> {
        self.run_with_stdin(["apply", "--index", "-"], Some(patch.as_bytes()))
            .map(|_| ())
    }
}

/// Reads one record of [`Git::first_parent_history`]'s log: `<id>\x1f<parents>\x1f<message>
/// \x1f` then `-z` name-status pairs; `None` for what is not a record.
fn history_record(record: &str) -> Option<HistoryCommit> {
    let mut fields = record.splitn(4, '\x1f');
    let commit = fields.next()?.trim();
    if commit.is_empty() || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let parent = fields.next()?.split_whitespace().next().map(str::to_string);
    let message = fields.next()?.trim_end().to_string();
    let diff = fields.next().unwrap_or_default();
    let mut names = diff
        .split('\0')
        .map(|f| f.trim_start_matches('\n'))
        .filter(|f| !f.is_empty());
    let mut changed = Vec::new();
    while let (Some(status), Some(path)) = (names.next(), names.next()) {
        changed.push(ChangedFile {
            status: status.chars().next().unwrap_or('M'),
            path: path.to_string(),
        });
    }
    Some(HistoryCommit {
        commit: commit.to_string(),
        parent,
        message,
        changed,
    })
}

#[cfg(test)]
mod tests {
    use super::ChangedFile;
    use crate::git::Git;
    use crate::git::testing::git;

    #[test]
    fn files_of_a_later_commit_are_taken_with_renames_as_delete_and_add() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        git(p, &["init", "--quiet", "-b", "main"]);
        std::fs::create_dir_all(p.join("tests")).unwrap();
        std::fs::write(p.join("tests/old.sh"), "old\n").unwrap();
        std::fs::write(p.join("tests/kept.sh"), "v1\n").unwrap();
        git(p, &["add", "-A"]);
        git(p, &["commit", "--quiet", "-m", "base"]);
        let base = git(p, &["rev-parse", "HEAD"]).trim().to_string();
        git(p, &["mv", "tests/old.sh", "tests/new.sh"]);
        std::fs::write(p.join("tests/kept.sh"), "v2\n").unwrap();
        git(p, &["commit", "--quiet", "-am", "Move\n\nwith a body"]);
        let tip = git(p, &["rev-parse", "HEAD"]).trim().to_string();
        let repo = Git::new(p);
        assert_eq!(repo.commit_message(&tip).unwrap(), "Move\n\nwith a body");
        assert_eq!(repo.first_parent(&tip).unwrap(), Some(base.clone()));
        assert_eq!(repo.first_parent(&base).unwrap(), None);
        assert_eq!(
            repo.first_parent_commits(&format!("{base}..{tip}"))
                .unwrap(),
            vec![tip.clone()]
        );
        let changed = repo.changed_files(&base, &tip).unwrap();
        let f = |status, path: &str| ChangedFile {
            status,
            path: path.to_string(),
        };
        let history = repo.first_parent_history(&tip).unwrap();
        assert_eq!(history.len(), 2);
        assert_eq!(history[0].commit, base);
        assert_eq!(history[0].parent, None);
        assert_eq!(history[0].message, "base");
        assert_eq!(
            history[0].changed,
            vec![f('A', "tests/kept.sh"), f('A', "tests/old.sh")]
        );
        assert_eq!(history[1].commit, tip);
        assert_eq!(history[1].parent, Some(base.clone()));
        assert_eq!(history[1].message, "Move\n\nwith a body");
        assert_eq!(history[1].changed, changed);
        assert_eq!(
            changed,
            vec![
                f('M', "tests/kept.sh"),
                f('A', "tests/new.sh"),
                f('D', "tests/old.sh")
            ]
        );
        git(p, &["checkout", "--quiet", "--detach", &base]);
        repo.take_files_from(&tip, &changed).unwrap();
        assert_eq!(
            std::fs::read_to_string(p.join("tests/kept.sh")).unwrap(),
            "v2\n"
        );
        assert!(p.join("tests/new.sh").is_file());
        assert!(!p.join("tests/old.sh").exists());
    }
}
