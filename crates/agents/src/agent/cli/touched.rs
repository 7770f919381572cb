//! Which of the paths a CLI says it edited are files of the packet: only those inside its
//! worktree. A CLI that writes `/tmp/x` or edits `/etc/hosts` did not touch the packet, and
//! listing those as "files touched" would mislead whoever reads the packet's activity.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// Returns the paths of `files` that lie inside `worktree`, relative to it, in `/` form.
///
/// A relative path is taken from the worktree (where the CLI runs). A path that leaves it —
/// absolute elsewhere, through `..`, or through a symbolic link inside the worktree that
/// leads out — is dropped, as is the worktree itself and anything under its `.git`.
pub fn inside_worktree(worktree: &Path, files: &BTreeSet<String>) -> BTreeSet<String> {
    let root = fs_err::canonicalize(worktree).unwrap_or_else(|_| normal(worktree));
    files
        .iter()
        .filter_map(|f| {
            let full = resolved(&normal(&worktree.join(f)));
            let rel = full.strip_prefix(&root).ok()?;
            let first = rel.components().next()?;
            if first.as_os_str() == ".git" {
                return None;
            }
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            Some(parts.join("/"))
        })
        .collect()
}

/// Returns `path` with `.` dropped and `..` applied, without asking the file system.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Returns `path` with its longest existing ancestor's symbolic links resolved, so a link
/// inside the worktree that points elsewhere is seen for where it leads.
fn resolved(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = fs_err::canonicalize(at) {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn only_paths_inside_the_worktree_count() {
        let dir = tempfile::tempdir().unwrap();
        let wt = dir.path().join("wt");
        fs_err::create_dir_all(wt.join("src")).unwrap();
        std::os::unix::fs::symlink("/etc", wt.join("etc-link")).unwrap();
        let absolute = wt.join("src/b.rs").to_string_lossy().into_owned();
        let files = set(&[
            "src/a.rs",
            &absolute,
            "./src/new/c.rs",
            "/etc/hosts",
            "/tmp/scratch.txt",
            "../beside.txt",
            "src/../../beside.txt",
            "etc-link/hosts",
            ".git/config",
            ".",
        ]);
        assert_eq!(
            inside_worktree(&wt, &files),
            set(&["src/a.rs", "src/b.rs", "src/new/c.rs"])
        );
    }
}
