//! Records kept in git as commits of small trees under the engine's own refs: a tree built
//! from blobs with `mktree`, committed with `commit-tree` under the engine's identity, so that
//! it works in a repository with no identity configured and touches no working tree or index.

use super::{Git, GitError};

impl Git {
    /// Writes a tree holding each `(name, blob id)` of `files` as a regular file at its top and
    /// returns its id; names must not contain `/`.
    pub fn mktree(&self, files: &[(&str, &str)]) -> Result<String, GitError> {
        let mut listing = String::new();
        for (name, blob) in files {
            listing.push_str(&format!("100644 blob {blob}\t{name}\n"));
        }
        self.writing()
            .run_with_stdin(["mktree"], Some(listing.as_bytes()))
    }

    /// Returns every ref under `prefix` (which ends with `/`) with the object it points at, as
    /// `(name, id)` pairs in name order.
    pub fn refs_under(&self, prefix: &str) -> Result<Vec<(String, String)>, GitError> {
        let out = self.run(["for-each-ref", "--format=%(refname) %(objectname)", prefix])?;
        Ok(out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(name, id)| (name.to_string(), id.to_string()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::git::Git;
    use crate::git::testing::git as run;

    #[test]
    fn a_tree_written_with_mktree_holds_its_files_and_refs_under_lists_them() {
        let dir = tempfile::tempdir().unwrap();
        run(dir.path(), &["init", "--quiet", "-b", "main"]);
        let git = Git::new(dir.path());
        let blob = git.hash_object("blob", b"{\"a\": 1}\n", true).unwrap();
        let tree = git.mktree(&[("results.json", &blob)]).unwrap();
        let commit = git.commit_tree(&tree, &[], "results").unwrap();
        git.set_ref("refs/orchestra/eval/e1", &commit).unwrap();
        assert_eq!(
            git.blob_at(&commit, "results.json").unwrap().unwrap(),
            b"{\"a\": 1}\n"
        );
        assert_eq!(
            git.refs_under("refs/orchestra/eval/").unwrap(),
            vec![("refs/orchestra/eval/e1".to_string(), commit)]
        );
    }
}
