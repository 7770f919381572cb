//! Moving a branch's own commits onto a new base without any worktree, and pushing the result
//! over the old head only if the remote still has it: what restacking a pull request after its
//! parent was squash- or rebase-merged needs.
//!
//! Each commit of `upstream..tip` is replayed with `git merge-tree --write-tree` (a three-way
//! merge of the commit's own change onto the new base, in the object database), so
//! a branch checked out in a packet worktree is never touched, and a conflict names its paths.
//! Merge commits are refused rather than flattened: their resolution would be lost.

use super::{Git, GitError};

/// What replaying a range onto a new base did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replayed {
    /// Every commit moved; the new tip (the base itself when every change was already there).
    Moved(String),
    /// The change of commit `commit` conflicts with the new base in `paths`.
    Conflict { commit: String, paths: Vec<String> },
    /// The range holds this merge (or root) commit, which is not replayed.
    NotLinear(String),
}

impl Git {
    /// Replays the commits of `upstream..tip`, oldest first, onto `onto` and returns the new
    /// tip; commits whose change is already in the new base are dropped, as `git rebase` does.
    /// Writes objects only: no ref moves.
    pub fn replay_onto(&self, onto: &str, upstream: &str, tip: &str) -> Result<Replayed, GitError> {
        let range = format!("{upstream}..{tip}");
        let merges = self.run([
            "rev-list",
            "--min-parents=2",
            "--end-of-options",
            &range,
            "--",
        ])?;
        if let Some(m) = merges.lines().next() {
            return Ok(Replayed::NotLinear(m.to_string()));
        }
        let commits = self.run([
            "rev-list",
            "--reverse",
            "--topo-order",
            "--end-of-options",
            &range,
            "--",
        ])?;
        let mut current = self
            .resolve_commit(onto)?
            .unwrap_or_else(|| onto.to_string());
        for commit in commits.lines().filter(|l| !l.is_empty()) {
            let Some(parent) = self.first_parent(commit)? else {
                return Ok(Replayed::NotLinear(commit.to_string()));
            };
            // A stand-in for the new base whose only parent is the commit's parent: merging it
            // with the commit is the three-way merge of the commit's own change onto the new
            // base (what `merge-tree --merge-base` does, which git before 2.40 lacks).
            let current_tree = self.tree_of(&current)?;
            let stand_in = self.commit_tree(&current_tree, &[parent.as_str()], "restack")?;
            let out = self.finish(
                [
                    "merge-tree",
                    "--write-tree",
                    "--name-only",
                    "--no-messages",
                    "-z",
                    "--end-of-options",
                    stand_in.as_str(),
                    commit,
                ],
                None,
            )?;
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let mut fields = stdout.split('\0');
            let tree = fields.next().unwrap_or("").trim().to_string();
            match out.code {
                0 => {}
                1 => {
                    let mut paths: Vec<String> = fields
                        .take_while(|f| !f.is_empty())
                        .map(str::to_string)
                        .collect();
                    paths.dedup();
                    return Ok(Replayed::Conflict {
                        commit: commit.to_string(),
                        paths,
                    });
                }
                _ => return Err(out.into_error()),
            }
            if tree == current_tree {
                continue;
            }
            let message = self.commit_message(commit)?;
            current = self.commit_tree(&tree, &[current.as_str()], &message)?;
        }
        Ok(Replayed::Moved(current))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git as run_git;

    #[test]
    fn a_childs_own_commits_move_onto_a_squashed_parent_and_conflicts_name_their_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        run_git(&dir, &["init", "--quiet", "-b", "main"]);
        let g = Git::new(&dir);
        let commit = |file: &str, text: &str, msg: &str| {
            std::fs::write(dir.join(file), text).unwrap();
            run_git(&dir, &["add", file]);
            run_git(&dir, &["commit", "-qm", msg]);
        };
        commit("base.txt", "base\n", "base");
        run_git(&dir, &["checkout", "-qb", "p1"]);
        commit("a.txt", "one\n", "p1");
        run_git(&dir, &["checkout", "-qb", "p2"]);
        commit("b.txt", "two\n", "p2");
        run_git(&dir, &["checkout", "-q", "main"]);
        run_git(&dir, &["merge", "-q", "--squash", "p1"]);
        run_git(&dir, &["commit", "-qm", "squashed p1"]);
        let Replayed::Moved(tip) = g.replay_onto("main", "p1", "p2").unwrap() else {
            panic!("not moved");
        };
        assert!(g.is_ancestor("main", &tip).unwrap());
        assert!(!g.is_ancestor("p1", &tip).unwrap());
        assert_eq!(g.blob_at(&tip, "b.txt").unwrap().unwrap(), b"two\n");
        assert_eq!(g.commit_message(&tip).unwrap(), "p2");

        commit("b.txt", "main's\n", "main moved");
        match g.replay_onto("main", "p1", "p2").unwrap() {
            Replayed::Conflict { paths, .. } => assert_eq!(paths, ["b.txt"]),
            other => panic!("{other:?}"),
        }
    }
}
