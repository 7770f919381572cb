//! A repository that holds one commit's history and nothing else: what an evaluation attempt
//! starts from, so that no later commit (the task's solution among them) can be read in it.
//!
//! `git clone --local` would share the source's object files through hardlinks or alternates,
//! and a plain clone copies every ref; instead a new repository fetches exactly one commit by
//! id over the pack protocol, which sends only the objects that commit reaches. No tags,
//! notes, remotes, `FETCH_HEAD` or reflogs of the source come along.

use std::path::Path;

use super::{Git, GitError};

/// Creates a repository at `dest` (which must not exist yet) whose only ref is `branch` at
/// `commit` of the repository `source`, checked out, holding only the objects `commit`
/// reaches; returns an error naming the git command that failed.
pub fn init_at_commit(
    source: &Path,
    commit: &str,
    dest: &Path,
    branch: &str,
) -> Result<(), GitError> {
    if let Some(parent) = dest.parent() {
        fs_err::create_dir_all(parent).map_err(|source| GitError::Spawn { source })?;
    }
    let dest_text = dest.to_string_lossy().into_owned();
    Git::new(source).run([
        "init",
        "--quiet",
        &format!("--initial-branch={branch}"),
        "--",
        &dest_text,
    ])?;
    let git = Git::new(dest)
        // Protocol v2 serves any commit the source reaches by id, whatever the user's default;
        // the source is a local path, which `protocol.file.allow=user` alone may refuse.
        .with_config("protocol.version=2")
        .with_config("protocol.file.allow=always");
    let source_text = source.to_string_lossy().into_owned();
    git.writing().run([
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        "--update-head-ok",
        "--",
        &source_text,
        &format!("{commit}:refs/heads/{branch}"),
    ])?;
    git.writing().run(["reset", "--quiet", "--hard", commit])?;
    // The reflog would only name `commit`; dropped all the same, so the repository starts as
    // if made by hand at that commit.
    git.run(["reflog", "expire", "--expire=all", "--all"])
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@e"])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    #[test]
    fn holds_the_commit_and_its_ancestors_only() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        std::fs::create_dir(&src).unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("a"), "a\n").unwrap();
        git(&src, &["add", "a"]);
        git(&src, &["commit", "-qm", "a"]);
        let base = git(&src, &["rev-parse", "HEAD"]);
        std::fs::write(src.join("s"), "solution\n").unwrap();
        git(&src, &["add", "s"]);
        git(&src, &["commit", "-qm", "s"]);
        let later = git(&src, &["rev-parse", "HEAD"]);
        let dest = tmp.path().join("attempt");
        init_at_commit(&src, &base, &dest, "main").unwrap();
        assert_eq!(git(&dest, &["rev-parse", "HEAD"]), base);
        assert_eq!(git(&dest, &["log", "--all", "--format=%H"]), base);
        assert_eq!(git(&dest, &["cat-file", "-t", &later]), "");
        assert!(dest.join("a").exists() && !dest.join("s").exists());
    }
}
