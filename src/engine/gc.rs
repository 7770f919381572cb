//! Cleanup of finished runs: removes packet worktrees, the run's worktree directory once empty,
//! and empty or merged packet branches, never losing work — unsaved changes are saved to a
//! backup ref first, and branches holding unmerged commits are kept.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{EngineError, Journal};
use crate::exec::{RunLock, run_dir};
use crate::git::{self as gitops, Git, RepoInfo};
use crate::names;
use crate::store::{Event, PacketRecord, RunRecord, Store};

/// One thing gc removes or keeps.
#[derive(Debug, Clone, Serialize)]
pub struct GcItem {
    pub run: String,
    pub packet: String,
    /// The worktree to remove, if it still exists.
    pub worktree: Option<PathBuf>,
    /// Bytes the worktree occupies on disk.
    pub bytes: u64,
    /// The packet branch, and whether gc deletes it.
    pub branch: String,
    pub delete_branch: bool,
    /// Why the branch is kept, when it is.
    pub keep_reason: Option<String>,
    /// Where unsaved work was (or, in a dry run, would be) saved.
    pub backup: Option<String>,
}

/// What a gc did or would do.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GcReport {
    pub items: Vec<GcItem>,
    pub bytes: u64,
    pub dry_run: bool,
}

/// Plans (and unless `dry_run`, performs) the cleanup of every finished run, or only `only`.
pub fn gc(repo: &RepoInfo, only: Option<&str>, dry_run: bool) -> Result<GcReport, EngineError> {
    let Some(store) = Store::open_existing(&repo.common_dir)? else {
        return Ok(GcReport {
            dry_run,
            ..GcReport::default()
        });
    };
    let runs: Vec<RunRecord> = match only {
        Some(id) => vec![store.require_run(id)?],
        None => store
            .runs()?
            .into_iter()
            .filter(|r| r.state.is_finished())
            .collect(),
    };
    let mut report = GcReport {
        dry_run,
        ..GcReport::default()
    };
    let noop = |_: &str, _: &Event| {};
    let mut store = Some(store);
    for run in runs {
        if !run.state.is_finished() {
            return Err(EngineError::NotFinished { run: run.id });
        }
        let dir = run_dir(&repo.common_dir, &run.id);
        let _lock = RunLock::acquire(&dir, &run.id)?;
        let Some(s) = store.take() else { break };
        let journal = Journal::new(s, &run.id, &noop, None);
        let packets = journal.packets()?;
        // Nothing a crashed process of the run left running keeps writing in a worktree that
        // is about to be saved and removed.
        if !dry_run {
            super::kill_recorded_groups(&run.id, &packets);
        }
        for p in &packets {
            let wt = PathBuf::from(&p.worktree);
            let live = (!p.removed && wt.exists()).then_some(wt);
            let item = sweep(
                repo,
                &run,
                &p.id,
                live,
                &p.branch,
                p.backup.clone(),
                dry_run,
            )?;
            if item.worktree.is_some() && !dry_run {
                journal.record(Event::WorktreeRemoved {
                    packet: p.id.clone(),
                    backup: item.backup.clone(),
                })?;
            }
            report.bytes += item.bytes;
            if item.worktree.is_some() || item.delete_branch || item.keep_reason.is_some() {
                report.items.push(item);
            }
        }
        // Worktrees on the run's branches that no packet record names: subtasks spawned by
        // agents (`orchestra/<run>/<packet>-s1`), or leftovers of an interrupted creation.
        let prefix = format!("refs/heads/orchestra/{}/", run.id);
        for entry in gitops::list(repo).map_err(worktree_err)? {
            let Some(branch) = entry
                .branch
                .as_deref()
                .and_then(|b| b.strip_prefix("refs/heads/"))
            else {
                continue;
            };
            let Some(id) = entry
                .branch
                .as_deref()
                .and_then(|b| b.strip_prefix(&prefix))
            else {
                continue;
            };
            if packets.iter().any(|p| p.branch == branch) || entry.prunable.is_some() {
                continue;
            }
            let item = sweep(
                repo,
                &run,
                id,
                Some(entry.path.clone()),
                branch,
                None,
                dry_run,
            )?;
            report.bytes += item.bytes;
            report.items.push(item);
        }
        if !dry_run {
            remove_empty_run_dirs(&run.id, packets.iter().map(|p| Path::new(&p.worktree)));
        }
        store = Some(journal.into_store());
    }
    Ok(report)
}

/// Removes the worktrees of the packets in `ids`, just integrated, saving unsaved work to each
/// packet's backup ref first and journaling each removal; their branches stay until `gc`. Up
/// to `recycle` clean ones are parked in the worktree pool instead (see `git::park`).
pub fn remove_integrated(
    repo: &RepoInfo,
    journal: &Journal<'_>,
    run_id: &str,
    records: &[PacketRecord],
    ids: &[String],
    recycle: usize,
) -> Result<(), EngineError> {
    for rec in records.iter().filter(|r| ids.contains(&r.id)) {
        let wt = PathBuf::from(&rec.worktree);
        if rec.removed || !wt.exists() {
            continue;
        }
        if recycle > 0
            && let Some(pooled) = gitops::park(repo, &wt, recycle).map_err(worktree_err)?
        {
            tracing::debug!(packet = %rec.id, pooled = %pooled.display(), "worktree parked");
            journal.record(Event::WorktreeRemoved {
                packet: rec.id.clone(),
                backup: rec.backup.clone(),
            })?;
            continue;
        }
        let refname = names::backup_ref(run_id, &rec.id);
        // Pinned: the worktree's own `.git` is not trusted (see `Git::pinned`).
        let git = Git::pinned(&repo.common_dir, &wt).map_err(worktree_err)?;
        let saved = gitops::backup(&git, &refname, "git-orchestra merge: unsaved work")
            .map_err(worktree_err)?;
        gitops::remove(repo, &wt).map_err(worktree_err)?;
        journal.record(Event::WorktreeRemoved {
            packet: rec.id.clone(),
            backup: saved.map(|_| refname).or_else(|| rec.backup.clone()),
        })?;
    }
    Ok(())
}

/// Removes the run's worktree directory (`<root>/<run>`, the parent of its packets'
/// worktrees) once gc has emptied it; a directory that still holds anything is left alone.
fn remove_empty_run_dirs<'p>(run: &str, worktrees: impl Iterator<Item = &'p Path>) {
    let mut dirs: Vec<&Path> = worktrees
        .filter_map(Path::parent)
        .filter(|d| d.file_name().is_some_and(|n| n == run))
        .collect();
    dirs.dedup();
    for dir in dirs {
        // Fails, harmlessly, unless the directory is empty: nothing in it is ever deleted.
        let _ = std::fs::remove_dir(dir);
    }
}

/// Saves the unsaved work of a run's worktree `live` to a backup ref and removes it (unless
/// `dry_run`), and decides the fate of its branch.
fn sweep(
    repo: &RepoInfo,
    run: &RunRecord,
    id: &str,
    live: Option<PathBuf>,
    branch: &str,
    backup: Option<String>,
    dry_run: bool,
) -> Result<GcItem, EngineError> {
    let mut item = GcItem {
        run: run.id.clone(),
        packet: id.to_string(),
        bytes: live.as_deref().map_or(0, disk_usage),
        worktree: live.clone(),
        branch: branch.to_string(),
        delete_branch: false,
        keep_reason: None,
        backup,
    };
    if let Some(wt) = &live {
        let refname = names::backup_ref(&run.id, id);
        // Pinned: the worktree's own `.git` is not trusted (see `Git::pinned`).
        let git = Git::pinned(&repo.common_dir, wt).map_err(worktree_err)?;
        if has_unsaved_changes(&git)? {
            item.backup = Some(refname.clone());
        }
        if !dry_run {
            let saved = gitops::backup(&git, &refname, "git-orchestra gc: unsaved work")
                .map_err(worktree_err)?;
            if saved.is_some() {
                item.backup = Some(refname);
            }
            gitops::remove(repo, wt).map_err(worktree_err)?;
        }
    }
    let (delete, reason) = branch_fate(repo, &run.base, branch)?;
    item.delete_branch = delete;
    item.keep_reason = reason;
    if delete && !dry_run {
        repo.git()
            .force_delete_branch(branch)
            .map_err(crate::git::RepoError::from)?;
    }
    Ok(item)
}

fn worktree_err(e: gitops::WorktreeError) -> EngineError {
    EngineError::Worktree(e.to_string())
}

/// Decides whether a packet branch may be deleted: only when it does not exist any more, adds
/// nothing to the base, or is already merged into the current HEAD.
fn branch_fate(
    repo: &RepoInfo,
    base: &str,
    branch: &str,
) -> Result<(bool, Option<String>), EngineError> {
    let git: Git = repo.git();
    let full = format!("refs/heads/{branch}");
    let tip = match git.resolve(&full).map_err(crate::git::RepoError::from)? {
        Some(tip) => tip,
        None => return Ok((false, None)),
    };
    if tip == base {
        return Ok((true, None));
    }
    let merged = git
        .is_ancestor(&tip, "HEAD")
        .map_err(crate::git::RepoError::from)?;
    if merged {
        Ok((true, None))
    } else {
        Ok((
            false,
            Some(format!(
                "has commits not merged into HEAD (merge it, or delete it with `git branch -D {branch}`)"
            )),
        ))
    }
}

/// Returns true if and only if the worktree has uncommitted or untracked (not ignored) files.
fn has_unsaved_changes(git: &Git) -> Result<bool, EngineError> {
    let out = git
        .status_porcelain(crate::git::Untracked::All)
        .map_err(crate::git::RepoError::from)?;
    Ok(!out.is_empty())
}

/// Returns the bytes used by regular files under `dir`, not following symlinks.
fn disk_usage(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    total
}
