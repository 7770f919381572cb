//! Diffs of a range: the patch a person or a model reads, zero-context hunks the checks parse,
//! and the raw listing of changed files.
//!
//! All of them switch off what a user's — or a worker's — configuration could change in the
//! output a program parses (colour, external diff drivers, text conversion, renames, ignored
//! submodules); replace refs are off for every engine git command (see `cli`).

use super::{Git, GitError};

impl Git {
    /// Returns the patch from `base` to `tip` as git prints it, for reading.
    pub fn diff_patch(&self, base: &str, tip: &str) -> Result<String, GitError> {
        self.run([
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--ignore-submodules=none",
            base,
            tip,
        ])
    }

    /// Returns the `-U0` patch from `base` to `tip`, limited to `paths` when any are given,
    /// with unquoted paths and renames shown as delete + add; bytes that are not UTF-8 are
    /// replaced, never an error.
    pub fn diff_zero_context(
        &self,
        base: &str,
        tip: &str,
        paths: &[&str],
    ) -> Result<String, GitError> {
        let mut args = vec![
            "-c",
            "core.quotePath=false",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "--no-textconv",
            "--ignore-submodules=none",
            "-U0",
            base,
            tip,
            "--",
        ];
        args.extend(paths);
        let out = self.finish(args, None)?;
        if !out.success() {
            return Err(out.into_error());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Returns `git diff --raw -z` from `base` to `tip` (full ids, no renames): NUL-separated
    /// metadata and path fields.
    pub fn diff_raw(&self, base: &str, tip: &str) -> Result<String, GitError> {
        self.run([
            "diff",
            "--raw",
            "--no-renames",
            "--ignore-submodules=none",
            "--no-abbrev",
            "-z",
            base,
            tip,
            "--",
        ])
    }
}
