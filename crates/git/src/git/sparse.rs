//! Sparse packet worktrees (`[worktree] sparse`): a cone-mode sparse checkout of the
//! directories a packet declares plus those the project names, for repositories where a full
//! checkout per packet is too big.
//!
//! The worktree is registered without a checkout, its sparsity is set (per worktree, in its
//! `config.worktree`: git turns on `extensions.worktreeConfig` for the repository), and only
//! the files inside the cone are written. Files outside it stay in the index, marked
//! skip-worktree, so commits never delete them; the engine stages with `--sparse`, so a file a
//! worker writes outside the cone is committed (and judged by the scope check), never dropped.

use std::path::Path;

use super::checkout;
use super::registry::{self, same_path};
use super::worktree::{Created, WorktreeError, WorktreeRequest, validate};
use super::{Git, GitError};

/// Returns the cone of a packet declaring `files` (glob patterns) with `include` (directories
/// every sparse worktree gets): the directory each pattern's literal prefix names (a pattern
/// naming a file gives its parent; top-level files are always in a cone), sorted and without
/// directories inside others. `None` when a pattern starts with a wildcard (`**/*.rs`): such a
/// packet needs the whole tree. `toplevel` tells a literal directory from a file.
pub fn cone(files: &[String], include: &[String], toplevel: &Path) -> Option<Vec<String>> {
    let mut dirs = Vec::new();
    let named = files
        .iter()
        .map(|p| (p, false))
        .chain(include.iter().map(|p| (p, true)));
    for (pattern, always_dir) in named {
        // `sparse_include` names directories, and so does a pattern ending in a slash.
        let is_dir = always_dir || pattern.ends_with('/');
        let pattern = pattern.trim_start_matches("./").trim_matches('/');
        let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
        let literal = parts
            .iter()
            .take_while(|p| !p.contains(['*', '?', '[', '{', '!']))
            .count();
        if literal == 0 {
            if parts.is_empty() {
                continue;
            }
            return None;
        }
        let dir = if literal == parts.len() && !is_dir && !toplevel.join(pattern).is_dir() {
            parts[..literal - 1].join("/")
        } else {
            parts[..literal].join("/")
        };
        if !dir.is_empty() {
            dirs.push(dir);
        }
    }
    dirs.sort();
    dirs.dedup();
    let mut kept: Vec<String> = Vec::new();
    for d in dirs {
        if !kept.iter().any(|k| d.starts_with(&format!("{k}/"))) {
            kept.push(d);
        }
    }
    Some(kept)
}

/// Turns on per-worktree configuration (`extensions.worktreeConfig`, repository format 1)
/// where sparse worktrees keep their cone, unless it is on already. A run with sparse
/// worktrees calls this before any worker starts, so the common `config` does not change under
/// a running worker (whose watch would take that for the worker's doing).
pub fn enable_worktree_config(git: &Git) -> Result<(), WorktreeError> {
    let on = git.finish(
        ["config", "--bool", "--get", "extensions.worktreeConfig"],
        None,
    )?;
    if on.success() && String::from_utf8_lossy(&on.stdout).trim() == "true" {
        return Ok(());
    }
    let version = git.finish(["config", "--get", "core.repositoryformatversion"], None)?;
    if String::from_utf8_lossy(&version.stdout).trim() != "1" {
        git.run(["config", "core.repositoryformatversion", "1"])?;
    }
    git.run(["config", "extensions.worktreeConfig", "true"])?;
    Ok(())
}

/// Creates the worktree of `req`, which must not exist or be registered yet, checked out
/// sparsely to `cone` (see [`cone`]); the branch is created at the base unless it exists (and
/// is checked out nowhere else). The result validates clean.
pub fn create_sparse(req: &WorktreeRequest<'_>, cone: &[String]) -> Result<Created, WorktreeError> {
    let _registrations = super::registration_lock();
    let path = std::path::absolute(req.path).map_err(|source| WorktreeError::Io {
        path: req.path.to_path_buf(),
        source,
    })?;
    let entries = registry::registrations(req.repo);
    if path.exists() || entries.iter().any(|e| same_path(&e.path, &path)) {
        return Err(WorktreeError::PathOccupied { path });
    }
    let repo = checkout::open(&req.repo.toplevel)?;
    let full_ref = checkout::branch_ref(req.branch)?;
    let full_ref_text = full_ref.as_bstr().to_string();
    let kind = match checkout::branch_tip(&repo, &full_ref)? {
        Some(_) => {
            if let Some(other) = entries
                .iter()
                .find(|e| e.branch.as_deref() == Some(full_ref_text.as_str()))
            {
                return Err(WorktreeError::BranchCheckedOut {
                    branch: req.branch.to_string(),
                    path: other.path.clone(),
                });
            }
            Created::Recreated
        }
        None => {
            checkout::create_branch(&repo, &full_ref, req.base)?;
            Created::Fresh
        }
    };
    let populated = populate(req, &path, cone);
    if let Err(e) = populated {
        if kind == Created::Fresh && !path.exists() {
            // Nothing was registered: only the branch this call created goes, and only if it
            // still points at the base.
            let _ = req.repo.git().delete_ref(&full_ref_text, req.base);
        }
        return Err(e);
    }
    let status = validate(req.repo, &path, req.branch)?;
    if status.dirty() {
        return Err(WorktreeError::Checkout {
            path,
            message: format!(
                "the sparse checkout is not clean ({} path(s) differ from the branch)",
                status.changed
            ),
        });
    }
    Ok(kind)
}

/// Registers the worktree without a checkout, sets its cone and writes the files in it.
fn populate(req: &WorktreeRequest<'_>, path: &Path, cone: &[String]) -> Result<(), WorktreeError> {
    let path_text = path.to_str().ok_or_else(|| WorktreeError::Checkout {
        path: path.to_path_buf(),
        message: "the worktree path is not valid UTF-8".into(),
    })?;
    // `--no-checkout` also runs no post-checkout hook.
    req.repo.git().run([
        "worktree",
        "add",
        "--no-checkout",
        "--quiet",
        path_text,
        req.branch,
    ])?;
    let git: Git = Git::pinned(&req.repo.common_dir, path)?;
    let mut dirs = cone.join("\n");
    dirs.push('\n');
    git.run_with_stdin(
        ["sparse-checkout", "set", "--cone", "--stdin"],
        Some(dirs.as_bytes()),
    )
    .map_err(|e: GitError| WorktreeError::Checkout {
        path: path.to_path_buf(),
        message: format!("setting the sparse checkout: {e}"),
    })?;
    git.run(["read-tree", "-m", "-u", "HEAD"])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_cone_holds_the_directories_patterns_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs/guide")).unwrap();
        let cone = cone(
            &s(&[
                "src/engine/**",
                "src/engine/mod.rs",
                "src/lib.rs",
                "README.md",
                "docs/guide",
            ]),
            &s(&["tests/", "src/engine/sub"]),
            dir.path(),
        );
        assert_eq!(cone.unwrap(), s(&["docs/guide", "src", "tests"]));
        assert_eq!(cone_of(&["**/*.rs"]), None);
        assert_eq!(cone_of(&["*.md"]), None);
        assert_eq!(cone_of(&["Cargo.toml"]), Some(vec![]));
        assert_eq!(cone_of(&["a/b*/c.rs"]), Some(s(&["a"])));
    }

    fn cone_of(files: &[&str]) -> Option<Vec<String>> {
        cone(&s(files), &[], Path::new("/nonexistent"))
    }
}
