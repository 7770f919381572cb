//! The reads the engine compares before and after an external worker runs, to find what the
//! worker changed outside its worktree: refs, and a working tree's HEAD and status.

use super::{Git, GitError, Untracked};

impl Git {
    /// Returns every ref with the object it points at, as `(name, id)` pairs in name order,
    /// leaving out those whose name starts with one of `skip`.
    pub fn ref_tips(&self, skip: &[&str]) -> Result<Vec<(String, String)>, GitError> {
        let out = self.run(["for-each-ref", "--format=%(refname) %(objectname)"])?;
        Ok(out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(name, _)| !skip.iter().any(|s| name.starts_with(s)))
            .map(|(name, id)| (name.to_string(), id.to_string()))
            .collect())
    }

    /// Returns the working tree's HEAD (empty when it names no commit) and its
    /// `git status --porcelain` (untracked files listed, ignored ones not).
    pub fn head_and_status(&self) -> Result<(String, String), GitError> {
        let head = self.resolve("HEAD")?.unwrap_or_default();
        let status = self.status_porcelain(Untracked::Normal)?;
        Ok((head, status))
    }
}
