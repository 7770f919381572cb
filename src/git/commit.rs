//! Commits a worker's changes on its packet branch on the worker's behalf, and lists what a
//! branch changed since its base.
//!
//! Agents never commit with their own identity or configuration: the engine commits as
//! `git-orchestra` with trailers naming run, packet and role, so every commit is traceable.

use std::path::Path;

use super::{Git, GitError};

/// The identity the engine commits under.
pub const COMMITTER_NAME: &str = "git-orchestra";
/// The e-mail of the engine's identity (a reserved, non-routable domain).
pub const COMMITTER_EMAIL: &str = "git-orchestra@localhost.invalid";

/// Trailers that tie a commit to its run, packet and role.
#[derive(Debug, Clone)]
pub struct Trailers<'a> {
    pub run: &'a str,
    pub packet: &'a str,
    pub role: &'a str,
}

/// Returns the commit message for a packet's work: subject, blank line, trailers.
pub fn message(subject: &str, trailers: &Trailers<'_>) -> String {
    let subject = subject.lines().next().unwrap_or("").trim();
    let subject = if subject.is_empty() {
        trailers.packet
    } else {
        subject
    };
    format!(
        "{subject}\n\nOrchestra-Run: {}\nOrchestra-Packet: {}\nOrchestra-Role: {}\n",
        trailers.run, trailers.packet, trailers.role
    )
}

/// Stages everything in `worktree` (tracked changes, deletions, untracked files; not ignored
/// ones) and commits it. Returns the new commit id, or `None` when there was nothing to commit.
///
/// New files named like the confined writer's temporary files are left out and removed: they
/// are what a write cut short by a crash leaves behind (the tool call never completed, so the
/// turn is redone), never anyone's work.
pub fn commit_all(worktree: &Path, message: &str) -> Result<Option<String>, GitError> {
    let git = Git::new(worktree);
    git.run(["add", "--all", "--", "."])?;
    // Paths as bytes: a repository may hold names that are not UTF-8.
    let staged = git
        .command(["diff", "--cached", "--name-status", "--no-renames", "-z"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|source| GitError::Spawn { source })?;
    if !staged.status.success() {
        return Err(GitError::Failed {
            args: "diff --cached --name-status".to_string(),
            code: staged.status.code().unwrap_or(-1),
            stderr: String::new(),
        });
    }
    let fields: Vec<&[u8]> = staged
        .stdout
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .collect();
    let mut changed = 0;
    for pair in fields.chunks(2) {
        let [status, path] = pair else { continue };
        let name = path.rsplit(|b| *b == b'/').next().unwrap_or(path);
        if *status == b"A" && name.starts_with(crate::confine::TEMP_PREFIX.as_bytes()) {
            let path = String::from_utf8_lossy(path).into_owned();
            git.run(["rm", "--cached", "--quiet", "--", &path])?;
            let _ = std::fs::remove_file(worktree.join(&path));
        } else {
            changed += 1;
        }
    }
    if changed == 0 {
        return Ok(None);
    }
    // No signing prompt, and no `git maintenance run --auto` process after each of a run's
    // many commits (the user's own next git command still runs it).
    let mut cmd_args = vec![
        "-c".to_string(),
        "commit.gpgsign=false".to_string(),
        "-c".to_string(),
        "maintenance.auto=false".to_string(),
        "-c".to_string(),
        "gc.auto=0".to_string(),
        "commit".to_string(),
        "--quiet".to_string(),
        "--no-edit".to_string(),
        "--file=-".to_string(),
    ];
    // The engine's identity wins over any GIT_AUTHOR_* in the environment or user config.
    let ident = [
        ("GIT_AUTHOR_NAME", COMMITTER_NAME),
        ("GIT_AUTHOR_EMAIL", COMMITTER_EMAIL),
        ("GIT_COMMITTER_NAME", COMMITTER_NAME),
        ("GIT_COMMITTER_EMAIL", COMMITTER_EMAIL),
    ];
    let mut cmd = git.command(cmd_args.drain(..));
    for (k, v) in ident {
        cmd.env(k, v);
    }
    run_capturing(cmd, message.as_bytes(), "commit")?;
    Ok(Some(git.run(["rev-parse", "HEAD"])?))
}

fn run_capturing(
    mut cmd: std::process::Command,
    input: &[u8],
    what: &str,
) -> Result<String, GitError> {
    use std::io::Write;
    use std::process::Stdio;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|source| GitError::Spawn { source })?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    let out = child
        .wait_with_output()
        .map_err(|source| GitError::Spawn { source })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        let mut stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if stderr.is_empty() {
            stderr = String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        Err(GitError::Failed {
            args: what.to_string(),
            code: out.status.code().unwrap_or(-1),
            stderr,
        })
    }
}

/// The result of merging two commits without touching any working tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// The merged commit (one of the inputs when the other was already contained in it).
    Merged(String),
    /// The two sides conflict in these paths.
    Conflict(Vec<String>),
}

/// Merges `theirs` into `ours` in memory (`git merge-tree --write-tree`) and, when clean,
/// returns a merge commit with both as parents made under the engine's identity. When one side
/// already contains the other, no commit is made and the containing side is returned.
pub fn merge_in_memory(
    repo: &Path,
    ours: &str,
    theirs: &str,
    message: &str,
) -> Result<MergeOutcome, GitError> {
    let git = Git::new(repo);
    if git.succeeds(["merge-base", "--is-ancestor", theirs, ours])? {
        return Ok(MergeOutcome::Merged(ours.to_string()));
    }
    if git.succeeds(["merge-base", "--is-ancestor", ours, theirs])? {
        return Ok(MergeOutcome::Merged(theirs.to_string()));
    }
    let out = git
        .command([
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            ours,
            theirs,
        ])
        .output()
        .map_err(|source| GitError::Spawn { source })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    let tree = lines.next().unwrap_or("").trim().to_string();
    match out.status.code() {
        Some(0) => {}
        // Exit 1 means conflicts; the listed names are what conflicts (never infer "clean"
        // from an empty list).
        Some(1) => {
            let mut paths: Vec<String> = lines
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            paths.dedup();
            return Ok(MergeOutcome::Conflict(paths));
        }
        code => {
            return Err(GitError::Failed {
                args: format!("merge-tree --write-tree {ours} {theirs}"),
                code: code.unwrap_or(-1),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
    }
    let mut cmd = git.command(["commit-tree", &tree, "-p", ours, "-p", theirs, "-F", "-"]);
    for (k, v) in [
        ("GIT_AUTHOR_NAME", COMMITTER_NAME),
        ("GIT_AUTHOR_EMAIL", COMMITTER_EMAIL),
        ("GIT_COMMITTER_NAME", COMMITTER_NAME),
        ("GIT_COMMITTER_EMAIL", COMMITTER_EMAIL),
    ] {
        cmd.env(k, v);
    }
    let id = run_capturing(cmd, message.as_bytes(), "commit-tree")?;
    Ok(MergeOutcome::Merged(id))
}

/// Moves the worktree's branch back to `start`, keeping every change in the working tree, so
/// the next commit replaces the commits made since `start` instead of following them.
///
/// Used before a fix round for work that must never enter the branch's history (files outside
/// the packet's scope), so what the fixed commit leaves out is not reachable from it either.
pub fn uncommit_to(worktree: &Path, start: &str) -> Result<(), GitError> {
    Git::new(worktree).run(["reset", "--soft", "--quiet", start])?;
    Ok(())
}

/// Returns every path that differs between `base` and `head` (both sides of a rename).
pub fn changed_paths(repo: &Path, base: &str, head: &str) -> Result<Vec<String>, GitError> {
    let out = Git::new(repo).run([
        "diff",
        "--name-only",
        "--no-renames",
        "-z",
        base,
        head,
        "--",
    ])?;
    Ok(out
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_has_subject_and_trailers() {
        let t = Trailers {
            run: "r-1",
            packet: "p1",
            role: "coder",
        };
        assert_eq!(
            message("Validate input\nmore", &t),
            "Validate input\n\nOrchestra-Run: r-1\nOrchestra-Packet: p1\nOrchestra-Role: coder\n"
        );
        assert!(message("  ", &t).starts_with("p1\n"));
    }

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::new(dir.path());
        git.run(["init", "--quiet", "-b", "main"]).unwrap();
        std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        commit_all(dir.path(), "base").unwrap().unwrap();
        dir
    }

    #[test]
    fn a_crashed_writers_temporary_file_is_neither_committed_nor_kept() {
        let dir = repo();
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).unwrap();
        let temp = sub.join(format!("{}4242-0", crate::confine::TEMP_PREFIX));
        std::fs::write(&temp, "half a fi").unwrap();
        // Nothing else changed: no commit, and the leftover is gone.
        assert_eq!(commit_all(dir.path(), "nothing").unwrap(), None);
        assert!(!temp.exists());

        std::fs::write(&temp, "half a fi").unwrap();
        std::fs::write(sub.join("real.rs"), "fn main() {}\n").unwrap();
        commit_all(dir.path(), "work").unwrap().unwrap();
        let files = Git::new(dir.path())
            .run(["show", "--name-only", "--format=", "HEAD"])
            .unwrap();
        assert_eq!(files, "src/real.rs");
        assert!(!temp.exists());
        let status = Git::new(dir.path()).run(["status", "--porcelain"]).unwrap();
        assert_eq!(status, "");
    }
}
