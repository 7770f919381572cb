//! Cleanup of finished runs: removes packet worktrees, the run's worktree directory once empty,
//! and empty or merged packet branches, never losing work — unsaved changes are saved to a
//! backup ref first, git repositories nested in a worktree to bundles and its ignored files to
//! a tar archive in the run store (a worktree where that fails is not removed), and branches
//! holding unmerged commits are kept.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{EngineError, Journal};
use crate::store::{Event, PacketRecord, RunRecord, Store};
use orchestra_git::git::{self as gitops, Git, RepoInfo};
use orchestra_sys::exec::{RunDir, RunLock};
use orchestra_sys::names;

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
    /// The git repositories nested in the worktree, each saved as a bundle.
    pub nested: Vec<SavedNested>,
    /// How many ignored files and directories the worktree held.
    pub ignored: usize,
    /// The tar archive the ignored files were saved to.
    pub archive: Option<PathBuf>,
    /// Ignored directories of build output and caches, not saved (see
    /// [`gitops::REGENERABLE`]).
    pub regenerable: Vec<String>,
    /// Ignored files left out of the archive for their size, with their apparent sizes (see
    /// `git::MAX_ARCHIVED_FILE`).
    pub too_large: Vec<(String, u64)>,
}

/// A git repository nested in a worktree, and the bundle it was saved to.
#[derive(Debug, Clone, Serialize)]
pub struct SavedNested {
    /// Its path in the worktree.
    pub path: String,
    /// The bundle (all its refs, and its uncommitted files under
    /// `refs/orchestra/uncommitted`); `None` in a dry run.
    pub bundle: Option<PathBuf>,
}

/// What a gc did or would do.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GcReport {
    pub items: Vec<GcItem>,
    pub bytes: u64,
    pub dry_run: bool,
    /// Directories at a packet's worktree path that git does not know as a worktree (a
    /// creation a crash cut short): left in place, never deleted, for a person to look at.
    pub unregistered: Vec<PathBuf>,
    /// Parked worktrees removed (or in a dry run to be removed) from recycling pools beyond
    /// `[worktree] recycle` (see [`trim_pools`]).
    pub trimmed: usize,
}

/// Removes the parked worktrees beyond `keep` (`[worktree] recycle`) from the recycling pool
/// of every worktree root the repository's runs used: a run killed while it parked early
/// leaves its pool above that size, and a lower setting leaves the pools as they were. A root
/// that a run still being driven uses is left to that run, whose early parking may hold more
/// until it ends (and trims then). Returns how many parked worktrees went (or in a dry run,
/// would go); parked worktrees hold only committed content and caches, so nothing is saved.
pub fn trim_pools(repo: &RepoInfo, keep: usize, dry_run: bool) -> Result<usize, EngineError> {
    let Some(store) = Store::open_existing(&repo.common_dir)? else {
        return Ok(0);
    };
    let runs = store.runs()?;
    let driven = |run: &RunRecord| {
        let dir = RunDir::new(&repo.common_dir, &run.id);
        RunLock::is_held(dir.path()) || RunLock::is_held(&dir.driver_lock())
    };
    let busy: Vec<PathBuf> = runs
        .iter()
        .filter(|r| driven(r))
        .map(|r| PathBuf::from(&r.worktree_root))
        .collect();
    let mut roots: Vec<PathBuf> = runs
        .iter()
        .map(|r| PathBuf::from(&r.worktree_root))
        .filter(|root| !busy.contains(root))
        .collect();
    roots.sort();
    roots.dedup();
    let mut trimmed = 0;
    for root in roots {
        let pool = root.join(gitops::POOL_DIR);
        trimmed += if dry_run {
            let parked = gitops::pooled(repo, &pool).map_err(worktree_err)?;
            parked.len().saturating_sub(keep)
        } else {
            gitops::trim_pool(repo, &pool, keep).map_err(worktree_err)?
        };
    }
    Ok(trimmed)
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
        let dir = RunDir::new(&repo.common_dir, &run.id);
        let _lock = RunLock::acquire(dir.path(), &run.id)?;
        let Some(s) = store.take() else { break };
        let journal = Journal::new(s, &run.id, &noop, None);
        let packets = journal.packets()?;
        // Nothing a crashed process of the run left running keeps writing in a worktree that
        // is about to be saved and removed.
        if !dry_run {
            super::kill_recorded_groups(&run.id, &packets);
        }
        let mut targets: Vec<Target> = packets
            .iter()
            .map(|p| {
                let wt = PathBuf::from(&p.worktree);
                Target {
                    id: p.id.clone(),
                    live: (!p.removed && wt.exists()).then_some(wt),
                    branch: p.branch.clone(),
                    backup: p.backup.clone(),
                    journaled: true,
                }
            })
            .collect();
        // A creation the run's crash cut short leaves a registration git cannot read, which
        // would fail the listing below: those of the journaled packets go first.
        if !dry_run {
            for p in &packets {
                gitops::drop_unfinished_registration(repo, Path::new(&p.worktree))
                    .map_err(worktree_err)?;
            }
        }
        targets.extend(unrecorded_worktrees(repo, &run.id, &packets)?);
        // A creation the run's crash cut short holds no work: its registration goes. A
        // directory git does not know as a worktree is not the engine's to save or remove.
        for t in &mut targets {
            let Some(wt) = &t.live else {
                continue;
            };
            if !dry_run {
                gitops::drop_unfinished_registration(repo, wt).map_err(worktree_err)?;
            }
            if let Err(gitops::WorktreeError::NotAWorktree { .. }) =
                Git::pinned(&repo.common_dir, wt)
            {
                report.unregistered.extend(t.live.take());
            }
        }
        // Before anything is removed: what each worktree holds beyond a backup ref (nested
        // repositories, ignored files); one that cannot be saved stops the run's cleanup here.
        let mut leftovers = Vec::with_capacity(targets.len());
        for t in &targets {
            leftovers.push(match &t.live {
                Some(wt) => {
                    let git = Git::pinned(&repo.common_dir, wt).map_err(worktree_err)?;
                    gitops::find_leftovers(&git).map_err(worktree_err)?
                }
                None => gitops::Leftovers::default(),
            });
        }
        for (t, found) in targets.iter().zip(&leftovers) {
            let item = sweep(repo, &run, t, found, dry_run)?;
            if t.journaled && item.worktree.is_some() && !dry_run {
                journal.record(Event::WorktreeRemoved {
                    packet: t.id.clone(),
                    backup: item.backup.clone(),
                })?;
            }
            report.bytes += item.bytes;
            let shown = item.worktree.is_some() || item.delete_branch || item.keep_reason.is_some();
            if shown || !t.journaled {
                report.items.push(item);
            }
        }
        if !dry_run {
            // Registrations whose directories are gone, once for the run (not per worktree).
            repo.git()
                .prune_worktrees()
                .map_err(orchestra_git::git::RepoError::from)?;
            remove_empty_run_dirs(
                repo,
                &run.id,
                packets.iter().map(|p| Path::new(&p.worktree)),
            );
            // The scratch checkout of a merge a kill cut short and nothing resumed.
            crate::gate::MovingScratch::discard(repo, &format!("merge-{}", run.id));
            repo.git()
                .delete_refs_under(&kept_refs(&run.id))
                .map_err(orchestra_git::git::RepoError::from)?;
        }
        store = Some(journal.into_store());
    }
    Ok(report)
}

/// Returns the prefixes of the refs run `run` kept until `gc`: what its packets run elsewhere
/// travelled in (the journal holds what came back), and its best-of-N packets' candidates and
/// their testers' tests, kept for a person to look at.
fn kept_refs(run: &str) -> Vec<String> {
    let mut kept: Vec<String> = ["base", "jobs", "events"]
        .iter()
        .map(|kind| format!("refs/orchestra/{kind}/{run}/"))
        .collect();
    kept.push(super::packet::candidates::run_candidates_prefix(run));
    kept.push(super::packet::tester::run_tests_prefix(run));
    kept
}

/// A worktree (or only a branch) of a run that gc cleans up.
struct Target {
    id: String,
    /// The worktree, when it still exists.
    live: Option<PathBuf>,
    branch: String,
    /// The backup ref the journal already names for it.
    backup: Option<String>,
    /// True for a packet of the journal (its removal is journaled).
    journaled: bool,
}

/// Returns the worktrees on the run's branches that no packet record names: subtasks spawned
/// by agents (`orchestra/<run>/<packet>-s1`), or leftovers of an interrupted creation.
fn unrecorded_worktrees(
    repo: &RepoInfo,
    run: &str,
    packets: &[PacketRecord],
) -> Result<Vec<Target>, EngineError> {
    let prefix = format!("refs/heads/orchestra/{run}/");
    let mut found = Vec::new();
    for entry in gitops::list(repo).map_err(worktree_err)? {
        let Some(branch) = entry.branch_name() else {
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
        found.push(Target {
            id: id.to_string(),
            live: Some(entry.path.clone()),
            branch: branch.to_string(),
            backup: None,
            journaled: false,
        });
    }
    Ok(found)
}

/// How many integrated worktrees are saved and removed at once: each removal is about ten git
/// processes on a worktree of its own, so a merge of many packets spends its end waiting on
/// them one after another otherwise.
const PARALLEL_REMOVALS: usize = 4;

/// Removes the worktrees of the packets in `ids`, just integrated, saving unsaved work to each
/// packet's backup ref first and journaling each removal; their branches stay until `gc`. Up
/// to `recycle` clean ones are parked in the worktree pool instead (see `git::park`).
///
/// Parking runs first, one worktree after another, so the pool never grows past `recycle`;
/// the removals then run [`PARALLEL_REMOVALS`] at a time, each worktree saved before it goes.
pub fn remove_integrated(
    repo: &RepoInfo,
    journal: &Journal<'_>,
    run_id: &str,
    records: &[PacketRecord],
    ids: &[String],
    recycle: usize,
) -> Result<(), EngineError> {
    let mut to_remove = Vec::new();
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
        to_remove.push(rec);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed: std::sync::Mutex<Option<EngineError>> = std::sync::Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL_REMOVALS.min(to_remove.len()) {
            scope.spawn(|| {
                while let Some(rec) =
                    to_remove.get(next.fetch_add(1, std::sync::atomic::Ordering::SeqCst))
                {
                    if let Err(e) = remove_saved(repo, journal, run_id, rec) {
                        failed
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get_or_insert(e);
                        break;
                    }
                }
            });
        }
    });
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Saves the unsaved work of integrated packet `rec`'s worktree (changes to its backup ref,
/// ignored files and nested repositories to the run store), removes the worktree and journals
/// it; a worktree whose leftovers cannot be saved stays for `gc`.
fn remove_saved(
    repo: &RepoInfo,
    journal: &Journal<'_>,
    run_id: &str,
    rec: &PacketRecord,
) -> Result<(), EngineError> {
    let wt = PathBuf::from(&rec.worktree);
    let refname = names::backup_ref(run_id, &rec.id);
    // Pinned: the worktree's own `.git` is not trusted (see `Git::pinned`).
    let git = Git::pinned(&repo.common_dir, &wt).map_err(worktree_err)?;
    // Ignored files (all but build output) and nested repositories go to the run store,
    // as `gc` saves them; a worktree whose leftovers cannot be saved stays for `gc`.
    let dest = RunDir::new(&repo.common_dir, run_id).saved(&rec.id);
    let kept =
        gitops::find_leftovers(&git).and_then(|found| gitops::save_leftovers(&git, &found, &dest));
    let saved = match kept {
        Ok(saved) => saved,
        Err(e) => {
            tracing::warn!(packet = %rec.id, error = %e, "worktree kept: its leftovers cannot be saved");
            return Ok(());
        }
    };
    for (path, size) in &saved.too_large {
        tracing::warn!(packet = %rec.id, path = %path, bytes = size, "ignored file too large to archive, not saved");
    }
    // One snapshot both saves the files and vouches for them at the removal.
    let saved = gitops::backup_and_remove(
        repo,
        (&git, &wt),
        &refname,
        "git-orchestra merge: unsaved work",
    )
    .map_err(worktree_err)?;
    journal.record(Event::WorktreeRemoved {
        packet: rec.id.clone(),
        backup: saved.map(|_| refname).or_else(|| rec.backup.clone()),
    })?;
    Ok(())
}

/// Removes the run's worktree directory (`<root>/<run>`, the parent of its packets'
/// worktrees) once gc has emptied it, first deleting the worktree files a removal set aside
/// and a crash left there (`git::delete_set_aside`); a directory that still holds anything
/// else is left alone.
fn remove_empty_run_dirs<'p>(
    repo: &RepoInfo,
    run: &str,
    worktrees: impl Iterator<Item = &'p Path>,
) {
    let mut dirs: Vec<&Path> = worktrees
        .filter_map(Path::parent)
        .filter(|d| d.file_name().is_some_and(|n| n == run))
        .collect();
    dirs.dedup();
    for dir in dirs {
        gitops::delete_set_aside(&repo.common_dir, dir);
        // Fails, harmlessly, unless the directory is empty: nothing in it is ever deleted.
        let _ = std::fs::remove_dir(dir);
    }
}

/// Saves the unsaved work of a run's worktree (to a backup ref), its nested repositories and
/// ignored files (`found`, to the run store) and removes it (unless `dry_run`), and decides
/// the fate of its branch.
fn sweep(
    repo: &RepoInfo,
    run: &RunRecord,
    target: &Target,
    found: &gitops::Leftovers,
    dry_run: bool,
) -> Result<GcItem, EngineError> {
    let live = target.live.as_deref();
    let mut item = GcItem {
        run: run.id.clone(),
        packet: target.id.clone(),
        bytes: live.map_or(0, disk_usage),
        worktree: live.map(Path::to_path_buf),
        branch: target.branch.clone(),
        delete_branch: false,
        keep_reason: None,
        backup: target.backup.clone(),
        nested: found
            .nested
            .iter()
            .map(|n| SavedNested {
                path: n.path.clone(),
                bundle: None,
            })
            .collect(),
        ignored: found.ignored.len(),
        archive: None,
        regenerable: found.regenerable.clone(),
        too_large: Vec::new(),
    };
    if let Some(wt) = live {
        let refname = names::backup_ref(&run.id, &target.id);
        // Pinned: the worktree's own `.git` is not trusted (see `Git::pinned`).
        let git = Git::pinned(&repo.common_dir, wt).map_err(worktree_err)?;
        if has_unsaved_changes(&git)? {
            item.backup = Some(refname.clone());
        }
        if !dry_run {
            let dest = RunDir::new(&repo.common_dir, &run.id).saved(&target.id);
            let saved = gitops::save_leftovers(&git, found, &dest).map_err(worktree_err)?;
            for (n, (_, bundle)) in item.nested.iter_mut().zip(saved.bundles) {
                n.bundle = Some(bundle);
            }
            item.archive = saved.archive;
            item.too_large = saved.too_large;
            let saved = gitops::backup(&git, &refname, "git-orchestra gc: unsaved work")
                .map_err(worktree_err)?;
            if saved.is_some() {
                item.backup = Some(refname);
            }
            gitops::remove(repo, wt).map_err(worktree_err)?;
        }
    }
    let (tip, reason) = branch_fate(repo, &run.base, &target.branch)?;
    item.delete_branch = tip.is_some();
    item.keep_reason = reason;
    if let (Some(tip), false) = (tip, dry_run) {
        // The tip that was checked, compare-and-swap; and no `git branch -D`, which reads
        // every worktree's HEAD: this branch's worktree was removed above.
        let full = format!("refs/heads/{}", target.branch);
        repo.git().delete_ref(&full, &tip).map_err(|e| {
            orchestra_git::git::RepoError::from(orchestra_git::git::GitError::from(e))
        })?;
    }
    Ok(item)
}

fn worktree_err(e: gitops::WorktreeError) -> EngineError {
    EngineError::Worktree(e.to_string())
}

/// Decides whether a packet branch may be deleted: only when it does not exist any more, adds
/// nothing to the base, or is already merged into the current HEAD. Returns the tip to delete
/// it at, or why it is kept.
fn branch_fate(
    repo: &RepoInfo,
    base: &str,
    branch: &str,
) -> Result<(Option<String>, Option<String>), EngineError> {
    let git: Git = repo.git();
    let full = format!("refs/heads/{branch}");
    let tip = match git
        .resolve(&full)
        .map_err(orchestra_git::git::RepoError::from)?
    {
        Some(tip) => tip,
        None => return Ok((None, None)),
    };
    if tip == base {
        return Ok((Some(tip), None));
    }
    let merged = git
        .is_ancestor(&tip, "HEAD")
        .map_err(orchestra_git::git::RepoError::from)?;
    if merged {
        Ok((Some(tip), None))
    } else {
        Ok((
            None,
            Some(format!(
                "has commits not merged into HEAD (merge it, or delete it with `git branch -D {branch}`)"
            )),
        ))
    }
}

/// Returns true if and only if the worktree has uncommitted or untracked (not ignored) files.
fn has_unsaved_changes(git: &Git) -> Result<bool, EngineError> {
    let out = git
        .status_porcelain(orchestra_git::git::Untracked::All)
        .map_err(orchestra_git::git::RepoError::from)?;
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
