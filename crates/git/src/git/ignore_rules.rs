//! Tells whether the ignore rules a commit's tree carries differ from another's, in-process.
//!
//! A recycled worktree keeps its ignored caches only when the new commit ignores what the old
//! one did, which `git diff --name-only <a> <b> -- '**/.gitignore'` used to answer with a
//! process per recycled packet. The two trees are compared here instead, as git does: a
//! subtree whose id is the same in both is skipped unread, so the cost is that of what
//! differs, not of the repository.

use std::collections::BTreeMap;

/// A tree's entries by name: the mode is kept so that a `.gitignore` that changes kind
/// (a file becoming a link) counts as changed.
type Entries = BTreeMap<Vec<u8>, (gix::object::tree::EntryMode, gix::ObjectId)>;

/// Returns true if and only if any `.gitignore`, at any depth, differs between the trees of
/// the commits `a` and `b` (added, removed or changed), as the pathspecs `:(glob).gitignore`
/// and `:(glob)**/.gitignore` of a `git diff` would find.
pub(crate) fn differ(repo: &gix::Repository, a: &str, b: &str) -> Result<bool, String> {
    let tree_of = |commit: &str| -> Result<gix::ObjectId, String> {
        let id = gix::ObjectId::from_hex(commit.as_bytes())
            .map_err(|e| format!("reading commit {commit}: {e}"))?;
        let commit = repo
            .find_commit(id)
            .map_err(|e| format!("reading commit {id}: {e:#}"))?;
        commit
            .tree_id()
            .map(gix::Id::detach)
            .map_err(|e| format!("reading the tree of {id}: {e:#}"))
    };
    let (a, b) = (tree_of(a)?, tree_of(b)?);
    let mut pending = vec![(Some(a), Some(b))];
    while let Some((a, b)) = pending.pop() {
        if a == b {
            continue;
        }
        let (old, new) = (entries(repo, a)?, entries(repo, b)?);
        for name in old
            .keys()
            .chain(new.keys().filter(|k| !old.contains_key(*k)))
        {
            let (was, is) = (old.get(name), new.get(name));
            if was == is {
                continue;
            }
            if name.as_slice() == b".gitignore" {
                return Ok(true);
            }
            let tree = |e: Option<&(gix::object::tree::EntryMode, gix::ObjectId)>| {
                e.filter(|(mode, _)| mode.is_tree()).map(|(_, id)| *id)
            };
            let (was_tree, is_tree) = (tree(was), tree(is));
            if was_tree.is_some() || is_tree.is_some() {
                pending.push((was_tree, is_tree));
            }
        }
    }
    Ok(false)
}

/// Returns the entries of the tree `id` (none for `None`: a directory on one side only).
fn entries(repo: &gix::Repository, id: Option<gix::ObjectId>) -> Result<Entries, String> {
    let mut out = Entries::new();
    let Some(id) = id else {
        return Ok(out);
    };
    let tree = repo
        .find_tree(id)
        .map_err(|e| format!("reading tree {id}: {e:#}"))?;
    for entry in tree.iter() {
        let entry = entry.map_err(|e| format!("reading tree {id}: {e:#}"))?;
        out.insert(entry.filename().to_vec(), (entry.mode(), entry.object_id()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;
    use std::path::Path;

    /// Commits the files `(path, content)` (an empty content removes the file) in `dir`;
    /// returns the commit's id.
    fn commit(dir: &Path, files: &[(&str, &str)]) -> String {
        for (path, content) in files {
            let file = dir.join(path);
            if content.is_empty() {
                let _ = std::fs::remove_file(&file);
            } else {
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, content).unwrap();
            }
        }
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "--allow-empty", "-m", "c"]);
        git(dir, &["rev-parse", "HEAD"]).trim().to_string()
    }

    /// Returns what `git diff` says: whether any `.gitignore` differs between `a` and `b`.
    fn git_says(dir: &Path, a: &str, b: &str) -> bool {
        let out = git(
            dir,
            &[
                "diff",
                "--name-only",
                a,
                b,
                "--",
                ":(glob).gitignore",
                ":(glob)**/.gitignore",
            ],
        );
        !out.trim().is_empty()
    }

    /// Compares with git on commits that change ignore rules at the top, deep down, in a
    /// directory added or removed whole, and commits that change everything else.
    #[test]
    fn ignore_rule_changes_are_found_as_git_diff_finds_them() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        let c0 = commit(dir, &[("a.txt", "a\n"), ("src/deep/x.rs", "x\n")]);
        let c1 = commit(dir, &[("a.txt", "b\n"), ("src/deep/y.rs", "y\n")]);
        let c2 = commit(dir, &[("src/deep/.gitignore", "*.o\n")]);
        let c3 = commit(dir, &[("src/deep/x.rs", "x2\n")]);
        let c4 = commit(dir, &[("src/deep/.gitignore", "*.a\n")]);
        let c5 = commit(dir, &[("new/sub/.gitignore", "t\n"), ("new/sub/f", "f\n")]);
        let c6 = commit(dir, &[("new/sub/.gitignore", ""), ("new/sub/f", "")]);
        let c7 = commit(dir, &[(".gitignore", "target/\n")]);
        let c8 = commit(
            dir,
            &[("other/not.gitignore", "x\n"), ("b.gitignore", "y\n")],
        );
        let repo = gix::open(dir).unwrap();
        let all = [&c0, &c1, &c2, &c3, &c4, &c5, &c6, &c7, &c8];
        for a in all {
            for b in all {
                assert_eq!(
                    differ(&repo, a, b).unwrap(),
                    git_says(dir, a, b),
                    "{a} → {b}"
                );
            }
        }
        assert!(!differ(&repo, &c0, &c1).unwrap());
        assert!(differ(&repo, &c1, &c2).unwrap());
        assert!(differ(&repo, &c4, &c5).unwrap() && differ(&repo, &c5, &c6).unwrap());
    }
}
