//! Adds a linked worktree for an existing branch and populates it with gix's parallel checkout,
//! or with git's on a large tree (see [`super::parallel`]).
//!
//! gix registers the worktree exactly as `git worktree add` does
//! (`.git/worktrees/<id>/{gitdir,commondir,HEAD}` and a `.git` file in the checkout), so plain
//! git lists and removes it; it writes the files on all cores and then an index carrying the
//! stat data of what it wrote, so the first `git status` is clean and needs no re-hashing. It
//! also rolls back registration and files when checkout fails. `benches/worktree.rs` compares
//! it with `git worktree add` (with and without `checkout.workers`): gix was ~10× faster on an
//! idle many-core machine (9k files); on a 2-core machine saturated by builds both are bound by
//! the kernel's file-creation cost and measure on par, gix never slower in CPU time.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::worktree::WorktreeError;

/// What one checkout did, for tracing and for the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckoutStats {
    /// How many files were written (gix counts regular files only, git every entry).
    pub files: usize,
    /// How many bytes were written.
    pub bytes: u64,
    /// Which checkout wrote them (never `Auto`).
    pub method: CheckoutMethod,
}

/// Which checkout populates a fresh worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CheckoutMethod {
    /// gix's below [`super::parallel::PARALLEL_CHECKOUT_FILES`] files, git's parallel one from
    /// there on: what packets use.
    #[default]
    Auto,
    /// gix's checkout, in this process.
    Gix,
    /// git's `read-tree -u` with `checkout.workers=0` (one worker per core).
    GitParallel,
}

/// Returns the repository at `toplevel` opened with gix.
pub(crate) fn open(toplevel: &Path) -> Result<gix::Repository, WorktreeError> {
    gix::open_opts(toplevel, open_options()).map_err(|e| WorktreeError::Checkout {
        path: toplevel.to_path_buf(),
        message: format!("{e:#}"),
    })
}

/// Returns the options every repository the engine opens with gix is opened with.
fn open_options() -> gix::open::Options {
    // Branch creation and the new worktree's HEAD reflog need a committer; users without a git
    // identity get the engine's, while a configured identity still wins.
    // Replace refs are never followed: the checkout is of the objects the ids name.
    gix::open::Options::default().config_overrides([
        "core.useReplaceRefs=false".to_string(),
        format!("gitoxide.committer.nameFallback={}", super::COMMITTER_NAME),
        format!(
            "gitoxide.committer.emailFallback={}",
            super::COMMITTER_EMAIL
        ),
    ])
}

/// Returns `refs/heads/<branch>`, refusing names git would not accept for a branch.
pub(crate) fn branch_ref(branch: &str) -> Result<gix::refs::FullName, WorktreeError> {
    let invalid = |reason: String| WorktreeError::InvalidBranch {
        branch: branch.to_string(),
        reason,
    };
    if branch.starts_with('-') {
        return Err(invalid("it starts with `-`".into()));
    }
    let full = format!("refs/heads/{branch}");
    gix::validate::reference::branch_name(full.as_str().into())
        .map_err(|e| invalid(e.to_string()))?;
    gix::refs::FullName::try_from(full).map_err(|e| invalid(e.to_string()))
}

/// Returns the commit `branch` points at, or `None` when there is no such local branch.
pub(crate) fn branch_tip(
    repo: &gix::Repository,
    name: &gix::refs::FullName,
) -> Result<Option<String>, WorktreeError> {
    let gix_error = |e: gix::Error| WorktreeError::Checkout {
        path: repo.git_dir().to_path_buf(),
        message: format!("reading {}: {e:#}", name.as_bstr()),
    };
    match repo.try_find_reference(name.as_ref()).map_err(gix_error)? {
        Some(mut reference) => Ok(Some(
            reference
                .peel_to_commit()
                .map_err(gix_error)?
                .id
                .to_string(),
        )),
        None => Ok(None),
    }
}

/// Returns true if and only if `id` is a full hexadecimal object id naming a commit.
pub(crate) fn is_commit(repo: &gix::Repository, id: &str) -> bool {
    gix::ObjectId::from_hex(id.as_bytes())
        .ok()
        .is_some_and(|oid| repo.find_commit(oid).is_ok())
}

/// Creates the local branch `name` at `base`, failing if it exists (never moves a branch).
pub(crate) fn create_branch(
    repo: &gix::Repository,
    name: &gix::refs::FullName,
    base: &str,
) -> Result<(), WorktreeError> {
    let gix_error = |message: String| WorktreeError::Checkout {
        path: repo.git_dir().to_path_buf(),
        message,
    };
    let oid = gix::ObjectId::from_hex(base.as_bytes())
        .map_err(|e| gix_error(format!("base `{base}`: {e}")))?;
    repo.reference(
        name.clone(),
        oid,
        gix::refs::transaction::PreviousValue::MustNotExist,
        format!("branch: Created from {base}"),
    )
    .map_err(|e| gix_error(format!("creating {}: {e:#}", name.as_bstr())))?;
    Ok(())
}

/// Registers `path` as a linked worktree of the repository at `toplevel` with HEAD attached to
/// the existing local branch `branch`, and checks out that branch's tree into it.
///
/// The destination must not exist or be an empty directory that no worktree is registered at,
/// and the branch must be checked out nowhere: callers check both first (see
/// `worktree::create`), so that they can name the problem and read only the registrations that
/// can matter. On failure the registration and the files written are rolled back; a
/// pre-existing empty directory is left empty.
pub fn add_checked_out(
    toplevel: &Path,
    path: &Path,
    branch: &str,
) -> Result<CheckoutStats, WorktreeError> {
    add_checked_out_by(toplevel, path, branch, CheckoutMethod::Auto)
}

/// Does what [`add_checked_out`] does with the checkout `method` (the benchmark compares them).
pub fn add_checked_out_by(
    toplevel: &Path,
    path: &Path,
    branch: &str,
    method: CheckoutMethod,
) -> Result<CheckoutStats, WorktreeError> {
    let repo = open(toplevel)?;
    add_checked_out_in(&repo, path, &branch_ref(branch)?, method)
}

/// Like `add_checked_out`, with the repository already open: [`register_in`], then
/// [`Registered::check_out`].
pub(crate) fn add_checked_out_in(
    repo: &gix::Repository,
    path: &Path,
    name: &gix::refs::FullName,
    method: CheckoutMethod,
) -> Result<CheckoutStats, WorktreeError> {
    register_in(repo, path, name, method)?.check_out()
}

/// The fault point (`ORCHESTRA_CRASH_AT`) between a worktree's registration and the checkout of
/// its files, for crash tests.
pub(crate) const REGISTERED_CRASH_POINT: &str = "worktree-registered";

/// A linked worktree that [`register_in`] registered, whose files [`Registered::check_out`]
/// writes; dropped unchecked-out, it rolls the registration and the directory back.
///
/// Registering is what a process does one worktree at a time (see `registration_lock`): git
/// and gix read every registration while adding one. Writing the files touches only the new
/// directory and its own administrative directory, so packets starting together check out in
/// parallel. Until the checkout is done the registration carries gix's "initializing" lock,
/// which `repair_registrations` drops after a crash but never while this process still checks
/// it out (see [`super::repair::InFlight`]).
pub(crate) struct Registered {
    stage: Stage,
}

/// What is left of a [`Registered`] worktree's creation.
enum Stage {
    /// Registered and checked out in one go (gix's `add_worktree`, for relative paths).
    Done(CheckoutStats),
    /// Registered; the files are still to be written. Fields drop in declaration order, so
    /// an unchecked-out registration is rolled back before it stops being in flight.
    Pending {
        prepared: gix_worktree::add::PreparedWorktree,
        worktree_repo: Box<gix::Repository>,
        method: CheckoutMethod,
        path: PathBuf,
        in_flight: super::repair::InFlight,
    },
}

/// Registers `path` as a linked worktree with HEAD attached to the existing branch `name`,
/// leaving its files to [`Registered::check_out`].
///
/// gix's `Repository::add_worktree` makes the same registration, but first opens every
/// registered worktree as a repository to refuse a branch checked out there and resolves every
/// registered path to refuse a duplicate: per packet, a cost that grows with the number of
/// worktrees. So this takes its steps itself — gix's `worktree::add::prepare` (the
/// administrative files, with rollback until persisted), HEAD and its reflog — and leaves the
/// checks to the caller. Only a repository with `worktree.useRelativePaths`, whose format gix
/// upgrades on the way, goes through `add_worktree`, checkout included and always with gix's.
pub(crate) fn register_in(
    repo: &gix::Repository,
    path: &Path,
    name: &gix::refs::FullName,
    method: CheckoutMethod,
) -> Result<Registered, WorktreeError> {
    let gix_error = |e: gix::Error| WorktreeError::Checkout {
        path: path.to_path_buf(),
        message: format!("{e:#}"),
    };
    let config = repo.config_snapshot();
    let stage = if config.boolean("worktree.useRelativePaths") == Some(true) {
        let outcome = repo
            .add_worktree(
                path,
                gix::worktree::add::Head::Attached(name.clone()),
                gix::progress::Discard,
                &AtomicBool::new(false),
            )
            .map_err(gix_error)?
            .1;
        Stage::Done(gix_stats(path, &outcome)?)
    } else {
        register_attached(repo, path, name, method)?
    };
    Ok(Registered { stage })
}

impl Registered {
    /// Writes the registered worktree's files and its index and finishes the registration;
    /// on failure the registration and what was written are rolled back.
    pub(crate) fn check_out(self) -> Result<CheckoutStats, WorktreeError> {
        match self.stage {
            Stage::Done(stats) => Ok(stats),
            Stage::Pending {
                prepared,
                worktree_repo,
                method,
                path,
                in_flight,
            } => {
                super::recycle::crash_point(REGISTERED_CRASH_POINT);
                // `prepared` is consumed (persisted or rolled back) before the registration
                // stops being in flight.
                let done = write_files(prepared, &worktree_repo, method, &path);
                drop(in_flight);
                done
            }
        }
    }
}

/// Checks out the files of the worktree `prepared` registered and persists the registration;
/// on failure dropping `prepared` rolls both back.
fn write_files(
    prepared: gix_worktree::add::PreparedWorktree,
    worktree_repo: &gix::Repository,
    method: CheckoutMethod,
    path: &Path,
) -> Result<CheckoutStats, WorktreeError> {
    let fail = |message: String| WorktreeError::Checkout {
        path: path.to_path_buf(),
        message,
    };
    let stats = if method == CheckoutMethod::GitParallel {
        let (files, bytes) =
            super::parallel::checkout_with_git(worktree_repo, prepared.work_dir())?;
        CheckoutStats {
            files,
            bytes,
            method,
        }
    } else {
        let worktree = worktree_repo
            .worktree()
            .ok_or_else(|| fail("the new registration has no working tree".into()))?;
        let outcome = worktree
            .checkout(gix::progress::Discard, &AtomicBool::new(false))
            .map_err(|e| fail(format!("{e:#}")))?;
        gix_stats(path, &outcome)?
    };
    // Nothing else has written the new files: date them before the index, so the first reads
    // of the worktree do not hash every file again (see `settle`).
    let index = worktree_repo.index_path();
    match super::settle::settle(prepared.work_dir(), &index) {
        Ok(files) => tracing::debug!(files, "dated a fresh checkout's files before its index"),
        Err(e) => tracing::debug!(error = %e, "dating a fresh checkout's files"),
    }
    prepared
        .persist()
        .map_err(|e| fail(format!("finishing the registration: {e}")))?;
    Ok(stats)
}

/// Returns the stats of a gix checkout, or an error naming the first file it could not write.
fn gix_stats(
    path: &Path,
    outcome: &gix::worktree::state::checkout::Outcome,
) -> Result<CheckoutStats, WorktreeError> {
    if !outcome.collisions.is_empty() || !outcome.errors.is_empty() {
        // Case-folding collisions or per-file errors leave the checkout incomplete; validation
        // would see a dirty tree, but naming the first path helps more.
        let first = outcome
            .collisions
            .first()
            .map(|c| c.path.to_string())
            .or_else(|| outcome.errors.first().map(|e| e.path.to_string()))
            .unwrap_or_default();
        return Err(WorktreeError::Checkout {
            path: path.to_path_buf(),
            message: format!(
                "{} collision(s) and {} error(s) while writing files, first at `{first}`",
                outcome.collisions.len(),
                outcome.errors.len()
            ),
        });
    }
    Ok(CheckoutStats {
        files: outcome.files_updated,
        bytes: outcome.bytes_written,
        method: CheckoutMethod::Gix,
    })
}

/// Registers the worktree of [`register_in`] without gix's checks.
fn register_attached(
    repo: &gix::Repository,
    path: &Path,
    name: &gix::refs::FullName,
    method: CheckoutMethod,
) -> Result<Stage, WorktreeError> {
    let fail = |message: String| WorktreeError::Checkout {
        path: path.to_path_buf(),
        message,
    };
    let commit = repo
        .find_reference(name.as_ref())
        .map_err(|e| fail(format!("reading {}: {e:#}", name.as_bstr())))?
        .peel_to_commit()
        .map_err(|e| fail(format!("reading {}: {e:#}", name.as_bstr())))?
        .id;
    let common_dir = repo.current_dir().join(repo.common_dir());
    let git_dir = repo.current_dir().join(repo.git_dir());
    let config = repo.config_snapshot();
    // As `git worktree add` and gix do: a sparse main worktree's patterns go to the new one.
    let sparse_source = (config.boolean("core.sparseCheckout") == Some(true)).then_some(&git_dir);
    let prepared = gix_worktree::add::prepare(
        path,
        gix_worktree::add::Context {
            common_dir: &common_dir,
            git_dir: sparse_source.map(PathBuf::as_path),
        },
        gix_worktree::add::Options::default(),
    )
    .map_err(|e| fail(format!("registering the worktree: {e}")))?;
    // From here on, dropping `prepared` removes the registration and what was written.
    let admin = prepared.git_dir().to_path_buf();
    let head = format!("ref: {}\n", name.as_bstr());
    fs_err::write(admin.join("HEAD"), head).map_err(|e| fail(e.to_string()))?;
    if config.boolean("extensions.worktreeConfig") == Some(true) {
        copy_worktree_config(
            &git_dir.join("config.worktree"),
            &admin.join("config.worktree"),
        )
        .map_err(fail)?;
    }
    let worktree_repo = gix::open_opts(&admin, open_options().open_path_as_is(true))
        .map_err(|e| fail(format!("opening the new worktree: {e:#}")))?;
    // Like `git worktree add`: the new HEAD's reflog starts at the branch's commit; the
    // branch itself is not touched.
    worktree_repo
        .edit_reference(gix::refs::transaction::RefEdit::update_with_log(
            "HEAD".try_into().map_err(|e| fail(format!("{e}")))?,
            commit,
            gix::refs::transaction::PreviousValue::Any,
            gix::refs::transaction::LogChange {
                mode: gix::refs::transaction::RefLog::Only,
                ..Default::default()
            },
        ))
        .map_err(|e| fail(format!("writing the new worktree's HEAD: {e:#}")))?;
    let method = match method {
        // A sparse worktree's patterns are gix's to apply (see `sparse`).
        CheckoutMethod::Auto if sparse_source.is_none() => {
            let tree = repo
                .find_commit(commit)
                .and_then(|c| c.tree_id())
                .map_err(|e| fail(format!("reading the tree of {commit}: {e:#}")))?;
            super::parallel::pick(repo, tree.detach()).map_err(fail)?
        }
        CheckoutMethod::Auto => CheckoutMethod::Gix,
        chosen => chosen,
    };
    Ok(Stage::Pending {
        prepared,
        worktree_repo: Box::new(worktree_repo),
        method,
        path: path.to_path_buf(),
        in_flight: super::repair::InFlight::new(&admin),
    })
}

/// Copies the per-worktree configuration `from` (the main worktree's `config.worktree`) to
/// `to` without `core.worktree` and a true `core.bare`, as `git worktree add` does; nothing when
/// there is none.
fn copy_worktree_config(from: &Path, to: &Path) -> Result<(), String> {
    if !from.exists() {
        return Ok(());
    }
    let mut config =
        gix::config::File::from_path_no_includes(from.to_path_buf(), gix::config::Source::Worktree)
            .map_err(|e| format!("reading {}: {e}", from.display()))?;
    if config.boolean("core.bare").ok().flatten() == Some(true)
        && let Ok(mut values) = config.raw_values_mut("core.bare")
    {
        values.delete_all();
    }
    if let Ok(mut values) = config.raw_values_mut("core.worktree") {
        values.delete_all();
    }
    let mut file = fs_err::File::create(to).map_err(|e| e.to_string())?;
    config
        .write_to(&mut file)
        .map_err(|e| format!("writing {}: {e}", to.display()))
}
