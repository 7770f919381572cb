//! Commits a worker's changes on its packet branch on the worker's behalf, and lists what a
//! branch changed since its base.
//!
//! Agents never commit with their own identity or configuration: the engine commits as
//! `git-orchestra` (see `identity`) with trailers naming run, packet and role, so every commit
//! is traceable.

use std::path::Path;

use super::{Git, GitError, Identity};

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

/// Stages everything in the worktree of `git` (tracked changes, deletions, untracked files;
/// not ignored ones) and commits it under the engine's identity. Returns the new commit id, or
/// `None` when there was nothing to commit.
///
/// `git` is the worktree's pinned runner ([`Git::pinned`]): staging and committing then use
/// the worktree's registered git directory with hooks off, whatever its `.git` file says.
/// New files the confined writer made as temporary files (named by `confine::temp_name`, a
/// hash in the name telling them from any file a worker names alike) are left out and
/// removed: they are what a write cut short by a crash leaves behind (the tool call never
/// completed, so the turn is redone), never anyone's work.
pub fn commit_all(git: &Git, message: &str) -> Result<Option<String>, GitError> {
    commit_all_as(git, message, &Identity::ENGINE)
}

/// Does what [`commit_all`] does, as `identity` instead of the engine.
pub fn commit_all_as(
    git: &Git,
    message: &str,
    identity: &Identity,
) -> Result<Option<String>, GitError> {
    Ok(commit_staged(git, message, identity)?.0)
}

/// Does what [`commit_all`] does and also returns the paths the commit changed against the
/// commit it was made on (both sides of a rename, in git's order; `None` when one is not
/// UTF-8), read from what was staged: a caller that knows that commit needs no diff of its own.
pub fn commit_all_listing(
    git: &Git,
    message: &str,
) -> Result<(Option<String>, Option<Vec<String>>), GitError> {
    commit_staged(git, message, &Identity::ENGINE)
}

/// Stages everything, commits it as `identity` and returns the new HEAD (`None` when nothing
/// changed) with the staged paths (see [`commit_all_listing`]).
fn commit_staged(
    git: &Git,
    message: &str,
    identity: &Identity,
) -> Result<(Option<String>, Option<Vec<String>>), GitError> {
    // Staging writes blobs; every object the engine writes is written as `identity`.
    let git = git.writing_as(identity);
    let worktree = git.dir().to_path_buf();
    git.run(["add", "--all", "--sparse", "--", "."])?;
    // Paths as bytes: a repository may hold names that are not UTF-8.
    let staged = git.finish(
        [
            "diff",
            "--cached",
            "--name-status",
            "--no-renames",
            "--ignore-submodules=none",
            "-z",
        ],
        None,
    )?;
    if !staged.success() {
        return Err(staged.into_error());
    }
    let fields: Vec<&[u8]> = staged
        .stdout
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .collect();
    let mut changed = 0;
    let mut paths = Some(Vec::new());
    for pair in fields.chunks(2) {
        let [status, path] = pair else { continue };
        let name = path.rsplit(|b| *b == b'/').next().unwrap_or(path);
        if *status == b"A" && orchestra_sys::confine::is_writer_temp(name) {
            let path = String::from_utf8_lossy(path).into_owned();
            git.run(["rm", "--cached", "--quiet", "--", &path])?;
            let _ = std::fs::remove_file(worktree.join(&path));
        } else {
            changed += 1;
            match (std::str::from_utf8(path), paths.as_mut()) {
                (Ok(path), Some(paths)) => paths.push(path.to_string()),
                _ => paths = None,
            }
        }
    }
    if changed == 0 {
        return Ok((None, paths));
    }
    // No signing prompt, no hook (`--no-verify`, besides the pinned runner's empty hooks path),
    // and no `git maintenance run --auto` process after each of a run's many commits (the
    // user's own next git command still runs it).
    git.run_with_stdin(
        [
            "-c",
            "commit.gpgsign=false",
            "-c",
            "maintenance.auto=false",
            "-c",
            "gc.auto=0",
            "commit",
            "--quiet",
            "--no-verify",
            "--no-edit",
            "--file=-",
        ],
        Some(message.as_bytes()),
    )?;
    Ok((Some(git.head()?), paths))
}

/// Creates a repository in `dir` on branch `branch` and commits every file in it as
/// `identity`; returns the commit id.
pub fn init_with_files(
    dir: &Path,
    branch: &str,
    message: &str,
    identity: &Identity,
) -> Result<String, GitError> {
    let git = Git::new(dir);
    git.run(["init", "--quiet", &format!("--initial-branch={branch}")])?;
    commit_all_as(&git, message, identity)?
        .ok_or_else(|| GitError::failed("commit", 1, "nothing to commit".to_string()))
}

/// Moves the branch of the worktree of `git` (its pinned runner) back to `start`, keeping every
/// change in the working tree, so the next commit replaces the commits made since `start` instead of following them.
///
/// Used before every fix round: what a check or a review rejected (a file outside the packet's
/// scope, a secret) must never enter the branch's history, so what the fixed commit leaves out
/// is not reachable from it either.
pub fn uncommit_to(git: &Git, start: &str) -> Result<(), GitError> {
    // `reset` before git 2.43 refuses `--end-of-options` after its options, so it is given the
    // commit's full id, which cannot be read as an option.
    let id = git
        .resolve_commit(start)?
        .unwrap_or_else(|| start.to_string());
    // Moving the branch writes a reflog entry: under the engine's identity.
    git.writing().run(["reset", "--soft", "--quiet", &id])?;
    Ok(())
}

/// Takes back the commits a worker made on its own: when the branch of the worktree of `git`
/// (its pinned runner) is past `last` — the engine's last commit there, or `start` when that
/// is not on the branch any more — it goes back to it with every change kept in the worktree.
/// The engine's next commit then holds the worker's work, and none of the worker's commits
/// (an out-of-scope file or a secret added and removed again) enters the branch's history,
/// where only the net diff would have been checked. Returns the worker's tip, if it moved one.
pub fn take_back_worker_commits(
    git: &Git,
    start: &str,
    last: Option<&str>,
) -> Result<Option<String>, GitError> {
    let head = git.head()?;
    let base = match last {
        Some(last) if git.is_ancestor(last, &head)? => last,
        _ => start,
    };
    if head == base {
        return Ok(None);
    }
    uncommit_to(git, base)?;
    Ok(Some(head))
}

/// Returns every path that differs between `base` and `head` (both sides of a rename).
pub fn changed_paths(git: &Git, base: &str, head: &str) -> Result<Vec<String>, GitError> {
    let out = git.run([
        "diff",
        "--name-only",
        "--no-renames",
        // Explicit, over `diff.ignoreSubmodules` and `.gitmodules`: a gitlink is a change.
        "--ignore-submodules=none",
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

/// Returns how many lines the change from `base` to `head` adds and removes in all (a binary
/// file counts as one line), to compare the size of two changes.
pub fn changed_lines(git: &Git, base: &str, head: &str) -> Result<u64, GitError> {
    let out = git.run([
        "diff",
        "--numstat",
        "--no-renames",
        "--ignore-submodules=none",
        base,
        head,
        "--",
    ])?;
    Ok(out
        .lines()
        .map(|line| {
            let mut fields = line.split('\t');
            let added = fields.next().and_then(|f| f.parse::<u64>().ok());
            let removed = fields.next().and_then(|f| f.parse::<u64>().ok());
            match (added, removed) {
                (Some(a), Some(r)) => a + r,
                _ => 1,
            }
        })
        .sum())
}

/// Moves the branch of the worktree of `git` (its pinned runner) to `commit` and makes the
/// worktree and index match it; what the worktree held is discarded, so callers only do this
/// to a worktree with nothing of its own.
pub fn reset_to(git: &Git, commit: &str) -> Result<(), GitError> {
    let id = git
        .resolve_commit(commit)?
        .unwrap_or_else(|| commit.to_string());
    git.writing().run(["reset", "--hard", "--quiet", &id])?;
    Ok(())
}

/// Points `refname` at `commit` whatever it held before (a ref kept for a person to look at,
/// such as a losing candidate's).
pub fn keep_ref(git: &Git, refname: &str, commit: &str) -> Result<(), GitError> {
    git.writing()
        .run(["update-ref", "-m", "keep", refname, commit])
        .map(drop)
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
        commit_all(&git, "base").unwrap().unwrap();
        dir
    }

    #[test]
    fn a_crashed_writers_temporary_file_is_neither_committed_nor_kept() {
        let dir = repo();
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).unwrap();
        let temp = sub.join(orchestra_sys::confine::temp_name(4242, 0));
        std::fs::write(&temp, "half a fi").unwrap();
        // Nothing else changed: no commit, and the leftover is gone.
        let git = Git::new(dir.path());
        assert_eq!(commit_all(&git, "nothing").unwrap(), None);
        assert!(!temp.exists());

        std::fs::write(&temp, "half a fi").unwrap();
        std::fs::write(sub.join("real.rs"), "fn main() {}\n").unwrap();
        commit_all(&git, "work").unwrap().unwrap();
        let files = Git::new(dir.path())
            .run(["show", "--name-only", "--format=", "HEAD"])
            .unwrap();
        assert_eq!(files, "src/real.rs");
        assert!(!temp.exists());
        let status = Git::new(dir.path()).run(["status", "--porcelain"]).unwrap();
        assert_eq!(status, "");
    }

    #[test]
    fn a_workers_own_files_named_like_temporary_files_are_committed() {
        let dir = repo();
        let git = Git::new(dir.path());
        let prefix = orchestra_sys::confine::TEMP_PREFIX;
        let own = [format!("{prefix}notes.md"), format!("{prefix}4242-0")];
        for name in &own {
            std::fs::write(dir.path().join(name), "mine\n").unwrap();
        }
        commit_all(&git, "work").unwrap().unwrap();
        let files = git
            .run(["show", "--name-only", "--format=", "HEAD"])
            .unwrap();
        for name in &own {
            assert!(files.lines().any(|f| f == name), "{files}");
            assert!(dir.path().join(name).exists());
        }
    }

    #[test]
    fn the_listing_of_a_commit_is_what_a_diff_from_its_parent_names() {
        let dir = repo();
        let git = Git::new(dir.path());
        let base = git.head().unwrap();
        std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/new.rs"), "fn x() {}\n").unwrap();
        let temp = orchestra_sys::confine::temp_name(4242, 0);
        std::fs::write(dir.path().join("src").join(&temp), "half").unwrap();
        let (head, listed) = commit_all_listing(&git, "work").unwrap();
        let head = head.unwrap();
        let listed = listed.unwrap();
        assert_eq!(listed, changed_paths(&git, &base, &head).unwrap());
        assert_eq!(listed, ["a.txt", "src/new.rs"]);

        std::fs::remove_file(dir.path().join("a.txt")).unwrap();
        let (next, listed) = commit_all_listing(&git, "delete").unwrap();
        assert_eq!(
            listed.unwrap(),
            changed_paths(&git, &head, &next.unwrap()).unwrap()
        );
        assert_eq!(
            commit_all_listing(&git, "nothing").unwrap(),
            (None, Some(Vec::new()))
        );
    }
}
