//! A worktree's view: which blob each indexable file currently holds.
//!
//! Tracked, unmodified files take their blob id from git's index without reading them;
//! modified and untracked files are hashed with `git hash-object` (which writes nothing).
//! This is what lets an edit re-index only the changed files.

use std::collections::BTreeMap;
use std::path::Path;

use crate::git::Git;

use super::NavError;
use super::lang::Lang;

/// One indexable file of the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewFile {
    /// Blob id of the file's current contents.
    pub oid: String,
    pub lang: Lang,
}

/// Returns the indexable files of the worktree at `root`, keyed by repository-relative path.
pub fn scan(root: &Path) -> Result<BTreeMap<String, ViewFile>, NavError> {
    let git = Git::new(root);
    let mut files = BTreeMap::new();
    let mut to_hash: Vec<String> = Vec::new();

    let staged = git.run(["ls-files", "-s", "-z"])?;
    for entry in staged.split('\0').filter(|e| !e.is_empty()) {
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let Some(lang) = Lang::from_path(path) else {
            continue;
        };
        let mut parts = meta.split(' ');
        let (mode, oid, stage) = (parts.next(), parts.next(), parts.next());
        if !matches!(mode, Some("100644" | "100755")) {
            continue; // symlinks and submodules are not source files
        }
        match (oid, stage) {
            (Some(oid), Some("0")) => {
                files.insert(
                    path.to_string(),
                    ViewFile {
                        oid: oid.to_string(),
                        lang,
                    },
                );
            }
            // A conflicted path: index the working-tree copy.
            _ => to_hash.push(path.to_string()),
        }
    }

    let dirty = git.run(["diff-files", "-z", "--name-only"])?;
    for path in dirty.split('\0').filter(|p| !p.is_empty()) {
        if Lang::from_path(path).is_some() {
            files.remove(path);
            to_hash.push(path.to_string());
        }
    }
    let untracked = git.run(["ls-files", "-z", "--others", "--exclude-standard"])?;
    for path in untracked.split('\0').filter(|p| !p.is_empty()) {
        if Lang::from_path(path).is_some() {
            to_hash.push(path.to_string());
        }
    }
    to_hash.sort();
    to_hash.dedup();
    // Deleted files show up as dirty; they leave the view.
    to_hash.retain(|p| !p.contains('\n') && root.join(p).is_file());
    if !to_hash.is_empty() {
        let mut input = to_hash.join("\n");
        input.push('\n');
        let out = git.run_with_stdin(["hash-object", "--stdin-paths"], Some(input.as_bytes()))?;
        for (path, oid) in to_hash.iter().zip(out.lines()) {
            if let Some(lang) = Lang::from_path(path) {
                files.insert(
                    path.clone(),
                    ViewFile {
                        oid: oid.trim().to_string(),
                        lang,
                    },
                );
            }
        }
    }
    Ok(files)
}
