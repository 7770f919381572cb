//! Diffs of a range: the patch a person or a model reads, zero-context hunks the checks parse,
//! and the raw listing of changed files.
//!
//! All of them switch off what a user's — or a worker's — configuration could change in the
//! output a program parses (colour, external diff drivers, text conversion, renames, ignored
//! submodules); replace refs are off for every engine git command (see `cli`).

use super::{Git, GitError};

impl Git {
    /// Returns the patch from `base` to `tip` as git prints it, for reading; a range of two
    /// object ids read lately in the process is not read again (see `patch_memo`).
    pub fn diff_patch(&self, base: &str, tip: &str) -> Result<String, GitError> {
        if let Some(patch) = super::patch_memo::get(self.dir(), base, tip) {
            return Ok(patch);
        }
        let patch = self.run([
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--ignore-submodules=none",
            base,
            tip,
        ])?;
        super::patch_memo::keep(self.dir(), base, tip, &patch);
        Ok(patch)
    }

    /// Returns the `-U0` patch from `base` to `tip`, limited to `paths` when any are given,
    /// with unquoted paths and renames shown as delete + add, every file as text; bytes that
    /// are not UTF-8 are replaced, never an error.
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
            // Files git would call binary (a NUL byte, `-diff` in .gitattributes) are shown
            // as text: a credential in them is still a credential.
            "--text",
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

    /// Returns every commit of `base..tip` (all of `tip`'s history without a base), oldest
    /// first, each as a line `\x01commit <id>`, a line of its parents' ids (space-separated,
    /// empty for a root), its message, a line `\x01end`, then its `-U0`
    /// patch against its parent — a merge's as a dense combined diff, the lines no parent had —
    /// with every file as text; bytes that are not UTF-8 are replaced.
    pub fn log_patches(&self, base: Option<&str>, tip: &str) -> Result<String, GitError> {
        let mut args = vec![
            "-c",
            "core.quotePath=false",
            "log",
            "--reverse",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            "--ignore-submodules=none",
            "--text",
            "-p",
            "--cc",
            "-U0",
            "--format=%x01commit %H%n%P%n%B%x01end",
            tip,
        ];
        let not_base = base.map(|b| format!("^{b}"));
        args.extend(not_base.as_deref());
        args.push("--");
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
