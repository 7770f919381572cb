//! Configuration and remotes: reading `git config`, a remote's URL, listing and pushing refs.
//!
//! Pushes go through the git CLI so the user's credential helpers, SSH setup and hooks apply
//! exactly as they would to their own `git push`.

use super::{Git, GitError};

impl Git {
    /// Returns the value of configuration `key`, or `None` when it is not set.
    pub fn config_get(&self, key: &str) -> Result<Option<String>, GitError> {
        match self.run(["config", "--get", key]) {
            Ok(v) => Ok(Some(v)),
            Err(GitError::Failed { code: 1, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Returns configuration `key` read as an integer (`10k` and the like allowed), or `None`
    /// when it is not set or is no integer.
    pub fn config_get_int(&self, key: &str) -> Option<i64> {
        self.run(["config", "--type=int", "--get", key])
            .ok()
            .and_then(|v| v.parse().ok())
    }

    /// Returns every configuration entry whose key matches `pattern` (a regular expression), as
    /// `(lower-cased key, value)` pairs in the order git lists them.
    pub fn config_matching(&self, pattern: &str) -> Result<Vec<(String, String)>, GitError> {
        let listing = match self.run(["config", "--get-regexp", pattern]) {
            Ok(t) => t,
            Err(GitError::Failed { code: 1, .. }) => String::new(),
            Err(e) => return Err(e),
        };
        Ok(listing
            .lines()
            .map(|line| {
                let (key, value) = line.split_once(' ').unwrap_or((line, ""));
                (key.to_string(), value.trim().to_string())
            })
            .collect())
    }

    /// Returns the URL of `remote`, or `None` when there is no such remote.
    pub fn remote_url(&self, remote: &str) -> Option<String> {
        self.run(["remote", "get-url", remote]).ok()
    }

    /// Returns true if and only if `remote` has a branch ref named `refname` (`refs/heads/…`).
    pub fn remote_has_branch(&self, remote: &str, refname: &str) -> Result<bool, GitError> {
        let listed = self.run(["ls-remote", "--heads", remote, refname])?;
        Ok(!listed.trim().is_empty())
    }

    /// Pushes `refspecs` to `remote` in one `git push --porcelain`.
    pub fn push(&self, remote: &str, refspecs: &[String]) -> Result<(), GitError> {
        let mut args = vec!["push", "--porcelain", remote];
        args.extend(refspecs.iter().map(String::as_str));
        self.run(args).map(drop)
    }

    /// Pushes `commit` to branch `branch` of `remote` only if that branch still points at
    /// `expected` there (`--force-with-lease=refs/heads/<branch>:<expected>`): a push made by
    /// someone else in between is never overwritten.
    pub fn push_with_lease(
        &self,
        remote: &str,
        branch: &str,
        commit: &str,
        expected: &str,
    ) -> Result<(), GitError> {
        let lease = format!("--force-with-lease=refs/heads/{branch}:{expected}");
        let refspec = format!("{commit}:refs/heads/{branch}");
        self.run(["push", "--porcelain", &lease, remote, &refspec])
            .map(drop)
    }

    /// Fetches branch `branch` of `remote` (into `FETCH_HEAD` only, no local ref changes).
    pub fn fetch_branch(&self, remote: &str, branch: &str) -> Result<(), GitError> {
        let refspec = format!("refs/heads/{branch}");
        self.writing()
            .run(["fetch", "--quiet", "--no-tags", remote, &refspec])
            .map(drop)
    }

    /// Deletes `refname` on `remote` (`git push --delete`).
    pub fn push_delete(&self, remote: &str, refname: &str) -> Result<(), GitError> {
        self.run(["push", "--porcelain", remote, "--delete", refname])
            .map(drop)
    }
}
