//! Recycles the worktrees of integrated packets for new packets.
//!
//! Checking out a whole tree per packet costs time and disk in proportion to the repository;
//! moving an existing checkout to another commit costs in proportion to what differs. With
//! `[worktree] recycle = N`, the worktree of an integrated packet that is clean (nothing
//! uncommitted, nothing untracked that is not ignored) is *parked* instead of removed: HEAD is
//! detached at the packet's commit (the branch is untouched, `gc` decides its fate) and the
//! directory moves to the pool `<root>/.recycle/`, at most `N` of them. A new packet whose
//! worktree does not exist yet takes one from the pool: the pooled worktree is checked clean
//! again, moved to the packet's path and checked out on the packet's branch, which rewrites only
//! the files that differ.
//!
//! Ignored files are no review's: a worker can plant `node_modules/.bin/jest` and the next
//! packet's tests would run it. So a worktree is parked only with the ignored paths the user
//! declared as caches to keep (`[worktree] keep_ignored`, top-relative, none by default; see
//! [`keep_ignored`]): the other ignored directories of build output (`node_modules`,
//! `__pycache__`, … — what `gc` would not save either) are removed first, and a worktree
//! holding any other ignored file (a `.env`, a log) is not parked at all but removed the usual
//! way, its ignored files archived. The kept caches stay, as warm caches, when the new commit
//! ignores what the old one did; when any `.gitignore` differs between the two commits they
//! are removed too (`git clean -X`), so a file that the new commit no longer ignores can never
//! turn up as a change of the new packet. Either way the recycled worktree must validate clean
//! on its branch before a worker sees it.
//!
//! Crash safety: before anything moves, a marker in the pooled worktree's administrative
//! directory (`<common-dir>/worktrees/<id>/orchestra-recycle`) names the destination. Every step
//! after it is idempotent, and the next creation of that destination finds the marker and
//! finishes the move and the checkout (the worktree held nothing but committed content and
//! ignored files when the marker was written, so a forced checkout loses nothing).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::registry::{self, same_path};
use super::relocate::move_worktree;
use super::worktree::{WorktreeError, WorktreeRequest};
use super::{Git, RepoInfo, Untracked};

/// The pool directory's name under the worktree root.
pub const POOL_DIR: &str = ".recycle";

/// The marker file, in a worktree's administrative directory, of a recycling under way.
const MARKER: &str = "orchestra-recycle";

/// The fault point (`ORCHESTRA_CRASH_AT`) between the move and the checkout, for crash tests.
pub const CRASH_POINT: &str = "recycle-moved";

/// The ignored paths a parked worktree keeps (`[worktree] keep_ignored`).
static KEEP_IGNORED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Sets the ignored paths, relative to a worktree's top (`target`), that parked worktrees keep
/// as caches for the packets that take them; every other ignored file is dropped or keeps the
/// worktree from being parked.
pub fn keep_ignored<'a>(paths: impl IntoIterator<Item = &'a str>) {
    if let Ok(mut keep) = KEEP_IGNORED.lock() {
        *keep = paths
            .into_iter()
            .map(|p| p.trim_matches('/').to_string())
            .filter(|p| !p.is_empty())
            .collect();
    }
}

/// Returns true if and only if the ignored `path` lies in a path [`keep_ignored`] named.
fn is_kept(path: &str) -> bool {
    KEEP_IGNORED.lock().is_ok_and(|keep| {
        keep.iter().any(|k| {
            path == k
                || path
                    .strip_prefix(k.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    })
}

/// Returns the ignored directories of build output to remove from the worktree of `git`
/// before it is parked, or `None` when it holds an ignored file worth saving (which the usual
/// removal archives).
fn droppable_ignored(git: &Git) -> Result<Option<Vec<String>>, WorktreeError> {
    let mut drop = Vec::new();
    for (path, is_dir) in git.ignored_entries()? {
        if is_kept(&path) {
            continue;
        }
        let name = path.rsplit('/').next().unwrap_or(&path);
        if !(is_dir && super::leftovers::REGENERABLE.contains(&name)) {
            return Ok(None);
        }
        drop.push(path);
    }
    Ok(Some(drop))
}

/// Returns the pool of the worktree root that `packet_path` (`<root>/<run>/<packet>`) is in.
pub fn pool_dir(packet_path: &Path) -> Option<PathBuf> {
    Some(packet_path.parent()?.parent()?.join(POOL_DIR))
}

/// Returns the worktrees parked in the pool of `root`'s packets, as registered.
pub fn pooled(repo: &RepoInfo, pool: &Path) -> Result<Vec<PathBuf>, WorktreeError> {
    // From the registrations' files, not `git worktree list`: a packet taking a worktree does
    // this under the registration lock, which every other packet's creation waits on.
    Ok(registry::registrations(repo)
        .into_iter()
        .filter(|e| e.branch.is_none() && !e.bare && e.locked.is_none() && e.prunable.is_none())
        .filter(|e| e.path.parent().is_some_and(|p| same_path(p, pool)))
        .map(|e| e.path)
        .collect())
}

/// Parks the worktree `wt` in its root's pool when it is clean and the pool holds fewer than
/// `capacity` worktrees; returns where it went, or `None` when it was left where it is.
///
/// The caller has made sure the packet's work is integrated; its branch stays.
pub fn park(repo: &RepoInfo, wt: &Path, capacity: usize) -> Result<Option<PathBuf>, WorktreeError> {
    let Some(pool) = pool_dir(wt) else {
        return Ok(None);
    };
    // Counted from the pool's own directories, each checked against its registration, not
    // with `git worktree list`, which reads every registered worktree: integrating many
    // packets would otherwise pay for all of them on each one. Counted again under the
    // registration lock before the move; the checks and the detach below touch this worktree
    // only, so they run outside it, while other packets register and take worktrees.
    if capacity == 0 || parked_in(repo, &pool) >= capacity {
        return Ok(None);
    }
    let git = Git::pinned(&repo.common_dir, wt)?;
    let Ok((_, admin)) = super::registered_git_dir_unrepaired(&repo.common_dir, wt) else {
        return Ok(None);
    };
    // A merge under way, from its file (no process), as `git merge` writes it; a sparse
    // checkout holds one packet's cone (new packets get their own), told from its
    // configuration files.
    if admin.join("MERGE_HEAD").exists() || super::relocate::is_sparse(&repo.common_dir, &admin) {
        return Ok(None);
    }
    if !git.status_porcelain(Untracked::All)?.is_empty() {
        return Ok(None);
    }
    let Some(drop) = droppable_ignored(&git)? else {
        return Ok(None);
    };
    for path in drop {
        let path = wt.join(path);
        // A link is removed as a link: nothing it points at is touched.
        let gone = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => fs_err::remove_dir_all(&path),
            Ok(_) => fs_err::remove_file(&path),
            Err(_) => Ok(()),
        };
        gone.map_err(|source| WorktreeError::Io { path, source })?;
    }
    // The branch, from the registration's HEAD file (no process), to go back to if the pool
    // fills meanwhile.
    let branch = std::fs::read_to_string(admin.join("HEAD"))
        .ok()
        .and_then(|head| Some(head.trim().strip_prefix("ref:")?.trim().to_string()));
    // Detached at the commit it is on: the files and the index stay as they are (the status
    // above found them clean), so HEAD alone changes, with its reflog, and git does not
    // refresh the index as `checkout --detach` would.
    git.writing()
        .run(["update-ref", "--no-deref", "-m", "park", "HEAD", "HEAD"])?;
    fs_err::create_dir_all(&pool).map_err(|source| WorktreeError::Io {
        path: pool.clone(),
        source,
    })?;
    let registrations = super::registration_lock();
    if parked_in(repo, &pool) >= capacity {
        std::mem::drop(registrations);
        // Filled meanwhile: the worktree stays where it is, back on its branch.
        if let Some(branch) = branch
            .as_deref()
            .and_then(|b| b.strip_prefix("refs/heads/"))
        {
            git.writing().run(["checkout", "--quiet", branch, "--"])?;
        }
        return Ok(None);
    }
    let stem = pooled_stem(wt);
    let mut dest = pool.join(&stem);
    let mut n = 1;
    while dest.exists() {
        n += 1;
        dest = pool.join(format!("{stem}-{n}"));
    }
    move_worktree(repo, wt, &dest)?;
    Ok(Some(dest))
}

/// Removes the worktrees parked in `pool` beyond the first `keep`, as a run that parked more
/// while it ran (up to its parallelism) ends; returns how many it removed.
///
/// Parked worktrees hold nothing but committed content and dropped or declared caches, so
/// nothing is saved; one a recycling has marked (it is being taken) stays, and so does one
/// that fails to go (it is reported in the log and left for the next trim).
pub fn trim_pool(repo: &RepoInfo, pool: &Path, keep: usize) -> Result<usize, WorktreeError> {
    if !pool.is_dir() {
        return Ok(0);
    }
    let mut parked = pooled(repo, pool)?;
    parked.sort();
    let mut removed = 0;
    let mut kept = 0;
    for wt in parked {
        let taken = super::registered_git_dir_unrepaired(&repo.common_dir, &wt)
            .is_ok_and(|(_, admin)| admin.join(MARKER).exists());
        if taken {
            continue;
        }
        if kept < keep {
            kept += 1;
            continue;
        }
        match registry::remove(repo, &wt) {
            Ok(()) => removed += 1,
            Err(e) => {
                tracing::warn!(worktree = %wt.display(), error = %e, "a parked worktree stays");
            }
        }
    }
    Ok(removed)
}

/// Puts the worktree at `wt` back on `branch` when a [`park`] a kill cut short left it there
/// with HEAD detached at the branch's tip (nothing was moved yet); returns true when it did.
/// A worktree on a branch, or detached elsewhere, is left as it is.
pub fn reattach(repo: &RepoInfo, wt: &Path, branch: &str) -> Result<bool, WorktreeError> {
    let git = Git::pinned(&repo.common_dir, wt)?;
    if git.symbolic_target("HEAD")?.is_some() {
        return Ok(false);
    }
    let tip = repo.git().resolve(&format!("refs/heads/{branch}"))?;
    if tip.as_deref() != Some(git.head()?.as_str()) {
        return Ok(false);
    }
    git.writing().run(["checkout", "--quiet", branch, "--"])?;
    Ok(true)
}

/// Returns the name a worktree at `packet_path` (`<root>/<run>/<packet>`) is parked under,
/// `<run>-<packet>` (a second one of the same name gets `-2`, and so on).
fn pooled_stem(packet_path: &Path) -> String {
    let run = packet_path
        .parent()
        .and_then(Path::file_name)
        .unwrap_or_default();
    let packet = packet_path.file_name().unwrap_or_default();
    format!("{}-{}", run.to_string_lossy(), packet.to_string_lossy())
}

/// Returns true if and only if the pool of `packet_path` holds a worktree parked from that
/// path: one [`park`] moved there (its journal entry may be missing after a kill).
pub fn parked_from(packet_path: &Path) -> bool {
    let (Some(pool), stem) = (pool_dir(packet_path), pooled_stem(packet_path)) else {
        return false;
    };
    let Ok(entries) = fs_err::read_dir(&pool) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        name == stem
            || name
                .strip_prefix(&stem)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Returns how many worktrees are parked in `pool`: its directories that are registered
/// worktrees of `repo` (a directory a crash left unregistered does not count). Reads the
/// pool's entries and their registrations' files only, whatever the number of worktrees.
fn parked_in(repo: &RepoInfo, pool: &Path) -> usize {
    let Ok(entries) = fs_err::read_dir(pool) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| super::registered_git_dir_unrepaired(&repo.common_dir, &e.path()).is_ok())
        .count()
}

/// A pooled worktree [`recycle`] moved to a packet's path, still to be put on the packet's
/// branch by [`Taken::check_out`].
#[derive(Debug)]
pub(crate) struct Taken {
    /// Its administrative directory, which holds the recycling's marker.
    admin: PathBuf,
    /// Where it was parked.
    pub(crate) from: PathBuf,
}

/// A parked worktree [`choose`] found clean, before the registration lock, for [`recycle`] to
/// claim and move under it; or none. It stays reserved in this process while the choice
/// lives, so packets starting together choose different worktrees.
#[derive(Debug, Default)]
pub(crate) struct Choice(Option<PathBuf>);

/// The parked worktrees a [`Choice`] of this process holds.
static RESERVED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

impl Choice {
    /// Reserves `candidate` for a choice; returns `None` when another choice holds it.
    fn reserve(candidate: &Path) -> Option<Choice> {
        let mut reserved = RESERVED.lock().ok()?;
        if reserved.iter().any(|r| r == candidate) {
            return None;
        }
        reserved.push(candidate.to_path_buf());
        Some(Choice(Some(candidate.to_path_buf())))
    }
}

impl Drop for Choice {
    fn drop(&mut self) {
        if let (Some(candidate), Ok(mut reserved)) = (&self.0, RESERVED.lock()) {
            reserved.retain(|r| r != candidate);
        }
    }
}

/// Returns the parked worktree a new worktree at `path` would take: one no recycling has
/// claimed nor another choice of this process holds, that `git status` finds clean. Runs
/// before the registration lock, so the status of a packet taking a worktree holds up no
/// other packet's creation; [`recycle`] makes sure under the lock that the worktree is still
/// parked and unclaimed.
pub(crate) fn choose(req: &WorktreeRequest, path: &Path) -> Result<Choice, WorktreeError> {
    let Some(pool) = pool_dir(path) else {
        return Ok(Choice::default());
    };
    if !pool.is_dir() || path.exists() {
        return Ok(Choice::default());
    }
    let mut candidates = pooled(req.repo, &pool)?;
    candidates.sort();
    for candidate in candidates {
        // Another packet may be taking it meanwhile: then it is no candidate.
        let claimed = super::registered_git_dir_unrepaired(&req.repo.common_dir, &candidate)
            .map_or(true, |(_, admin)| admin.join(MARKER).exists());
        if claimed {
            continue;
        }
        let Some(choice) = Choice::reserve(&candidate) else {
            continue;
        };
        let Ok(git) = Git::pinned_unrepaired(&req.repo.common_dir, &candidate) else {
            continue;
        };
        if git
            .status_porcelain(Untracked::All)
            .is_ok_and(|s| s.is_empty())
        {
            return Ok(choice);
        }
    }
    Ok(Choice::default())
}

/// Takes the worktree `choice` names from the pool for `req`, or the one a recycling into
/// `req.path` that a crash interrupted was taking, and moves it to the path; returns it, or
/// `None` when there was nothing to take (none chosen, something already at the path, or the
/// chosen one taken or removed since [`choose`]: the packet then gets a fresh checkout).
/// Called under the registration lock, it starts no process: the cleanliness check ran
/// before it and [`Taken::check_out`], which writes the files, runs after it.
pub(crate) fn recycle(
    req: &WorktreeRequest,
    path: &Path,
    choice: &Choice,
) -> Result<Option<Taken>, WorktreeError> {
    let Some(pool) = pool_dir(path) else {
        return Ok(None);
    };
    // A recycling into `path` takes a worktree out of this pool, which is never removed: with
    // no pool and nothing at `path`, none can be under way, and the registrations (where its
    // marker would be) are not read for every new packet.
    if (pool.is_dir() || path.exists())
        && let Some((admin, from)) = interrupted(req.repo, path)?
    {
        tracing::warn!(path = %path.display(), "finishing an interrupted worktree recycling");
        move_into(req, path, &admin)?;
        return Ok(Some(Taken { admin, from }));
    }
    let Some(candidate) = &choice.0 else {
        return Ok(None);
    };
    if !pool.is_dir() || path.exists() {
        return Ok(None);
    }
    let entries = registry::registrations(req.repo);
    let branch_ref = format!("refs/heads/{}", req.branch);
    if entries
        .iter()
        .any(|e| same_path(&e.path, path) || e.branch.as_deref() == Some(branch_ref.as_str()))
    {
        return Ok(None);
    }
    // Still parked: registered detached and unlocked at its place in the pool.
    let parked = entries.iter().any(|e| {
        same_path(&e.path, candidate)
            && e.branch.is_none()
            && !e.bare
            && e.locked.is_none()
            && e.prunable.is_none()
    });
    let Ok((_, admin)) = super::registered_git_dir_unrepaired(&req.repo.common_dir, candidate)
    else {
        return Ok(None);
    };
    if !parked || !claim(&admin, path, candidate)? {
        return Ok(None);
    }
    move_into(req, path, &admin)?;
    Ok(Some(Taken {
        admin,
        from: candidate.clone(),
    }))
}

/// Writes the marker of a recycling of the worktree registered at `admin` from `from` into
/// `path`; returns false when another recycling has claimed it already. The marker is created
/// only if missing, so two takers (threads or processes) never claim one worktree.
fn claim(admin: &Path, path: &Path, from: &Path) -> Result<bool, WorktreeError> {
    use std::io::Write;
    let marker = admin.join(MARKER);
    let io = |source| WorktreeError::Io {
        path: marker.clone(),
        source,
    };
    let mut file = match fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&marker)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(io(e)),
    };
    let text = format!("{}\n{}\n", path.display(), from.display());
    file.write_all(text.as_bytes()).map_err(io)?;
    Ok(true)
}

/// Returns the administrative directory and origin of a recycling into `path` that is under way.
fn interrupted(repo: &RepoInfo, path: &Path) -> Result<Option<(PathBuf, PathBuf)>, WorktreeError> {
    let Ok(dirs) = std::fs::read_dir(repo.common_dir.join("worktrees")) else {
        return Ok(None);
    };
    for dir in dirs.flatten() {
        let Ok(text) = std::fs::read_to_string(dir.path().join(MARKER)) else {
            continue;
        };
        let mut lines = text.lines();
        if let (Some(target), Some(from)) = (lines.next(), lines.next())
            && same_path(Path::new(target), path)
        {
            return Ok(Some((dir.path(), PathBuf::from(from))));
        }
    }
    Ok(None)
}

/// Moves the worktree registered at `admin` to `path` unless it is there already. Idempotent.
fn move_into(req: &WorktreeRequest, path: &Path, admin: &Path) -> Result<(), WorktreeError> {
    let gitdir =
        fs_err::read_to_string(admin.join("gitdir")).map_err(|source| WorktreeError::Io {
            path: admin.join("gitdir"),
            source,
        })?;
    let registered = Path::new(gitdir.trim())
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if !same_path(&registered, path) {
        if registered.exists() && !path.exists() {
            if let Some(parent) = path.parent() {
                fs_err::create_dir_all(parent).map_err(|source| WorktreeError::Io {
                    path: parent.to_path_buf(),
                    source,
                })?;
            }
            move_worktree(req.repo, &registered, path)?;
        } else {
            // The directory moved but the registration was not updated yet.
            let target = path.to_string_lossy().into_owned();
            req.repo.git().run(["worktree", "repair", "--", &target])?;
        }
    }
    Ok(())
}

impl Taken {
    /// Puts the worktree [`recycle`] moved to `path` on `req.branch` (created at `req.base`,
    /// a full commit id, when missing), rewriting only the files that differ, and drops the
    /// marker. Idempotent; a kill before the marker is dropped is finished by the next creation
    /// of `path`.
    pub(crate) fn check_out(
        &self,
        req: &WorktreeRequest,
        path: &Path,
    ) -> Result<(), WorktreeError> {
        crash_point(CRASH_POINT);
        put_on_branch(req, path, &self.admin)
    }
}

/// Does what [`Taken::check_out`] does.
fn put_on_branch(req: &WorktreeRequest, path: &Path, admin: &Path) -> Result<(), WorktreeError> {
    let git = Git::pinned(&req.repo.common_dir, path)?;
    // The branch is read and created in-process, as a fresh worktree's is.
    let repo = super::checkout::open(&req.repo.toplevel)?;
    let full = super::checkout::branch_ref(req.branch)?;
    let existing = super::checkout::branch_tip(&repo, &full)?;
    let target = existing.as_deref().unwrap_or(req.base);
    // The same commit has the same rules: nothing to compare.
    let head = git.head()?;
    if head != target && ignore_rules_differ(&repo, &git, &head, target)? {
        git.run(["clean", "-X", "-d", "--force", "--quiet"])?;
    }
    if existing.is_none()
        && let Err(e) = super::checkout::create_branch(&repo, &full, req.base)
        // Created meanwhile (this step is repeated after a kill): it stays as it is.
        && super::checkout::branch_tip(&repo, &full)?.is_none()
    {
        return Err(e);
    }
    git.writing()
        .run(["checkout", "--quiet", "--force", req.branch, "--"])?;
    fs_err::remove_file(admin.join(MARKER)).map_err(|source| WorktreeError::Io {
        path: admin.join(MARKER),
        source,
    })?;
    Ok(())
}

/// Returns true if and only if any `.gitignore` differs between the commits `a` and `b`:
/// compared in-process (see [`super::ignore_rules`]), or by `git diff` when gix cannot read
/// the objects.
fn ignore_rules_differ(
    repo: &gix::Repository,
    git: &Git,
    a: &str,
    b: &str,
) -> Result<bool, WorktreeError> {
    match super::ignore_rules::differ(repo, a, b) {
        Ok(differ) => return Ok(differ),
        Err(e) => tracing::debug!(error = %e, "comparing ignore rules with git"),
    }
    let out = git.run([
        "diff",
        "--name-only",
        a,
        b,
        "--",
        ":(glob).gitignore",
        ":(glob)**/.gitignore",
    ])?;
    Ok(!out.trim().is_empty())
}

/// Kills the process with SIGKILL when `ORCHESTRA_CRASH_AT` names `name`: crash tests' `kill -9`.
pub(crate) fn crash_point(name: &str) {
    if std::env::var("ORCHESTRA_CRASH_AT").is_ok_and(|v| v == name) {
        // SAFETY: sends SIGKILL to this very process.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;
    use std::time::{Duration, Instant};

    /// A repository with one commit and a worktree on branch `p` at `<top>/root/run/p`, whose
    /// pool is `<top>/root/.recycle`; returns the temporary directory, the repository, the
    /// worktree and its registration's HEAD file.
    fn repo_with_worktree() -> (tempfile::TempDir, RepoInfo, PathBuf, PathBuf) {
        let (tmp, repo, wt) = crate::git::testing::repo_with_worktree("root/run/p");
        let head = repo.common_dir.join("worktrees/p/HEAD");
        (tmp, repo, wt, head)
    }

    /// Waits up to 20 s for the registration's HEAD file to be detached; returns whether it was.
    fn detached_within(head: &Path) -> bool {
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(20) {
            let text = std::fs::read_to_string(head).unwrap_or_default();
            if !text.is_empty() && !text.starts_with("ref:") {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Parking used to hold the registration lock through its checks and the detach (four
    /// git processes), so every packet registering or taking a worktree queued behind each
    /// park. Only the count and the move need it now.
    #[test]
    fn a_park_checks_and_detaches_its_worktree_outside_the_registration_lock() {
        let (_tmp, repo, wt, head) = repo_with_worktree();
        let (parked, detached_while_locked) = std::thread::scope(|s| {
            let lock = crate::git::registration_lock();
            let parker = s.spawn(|| park(&repo, &wt, 2));
            let detached = detached_within(&head);
            drop(lock);
            (parker.join().unwrap().unwrap(), detached)
        });
        assert!(
            detached_while_locked,
            "the worktree was not detached while another held the registration lock"
        );
        let parked = parked.expect("parked");
        assert!(parked.starts_with(wt.parent().unwrap().parent().unwrap().join(POOL_DIR)));
        assert!(parked.join("a.txt").exists() && !wt.exists());
    }

    /// Waits up to 20 s for the file at `path` to differ from `before`; returns whether it did.
    fn changed_within(path: &Path, before: &[u8]) -> bool {
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(20) {
            if std::fs::read(path).is_ok_and(|now| now != before) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Taking a parked worktree used to check it clean (a `git status`) under the registration
    /// lock, so every packet creating a worktree queued behind that status. The check runs
    /// before the lock now; only the claim and the move need it.
    #[test]
    fn a_take_checks_its_candidate_outside_the_registration_lock() {
        let (_tmp, repo, wt, _head) = repo_with_worktree();
        let parked = park(&repo, &wt, 2).unwrap().expect("parked");
        let admin = repo.common_dir.join("worktrees/p");
        // A tracked file whose stat data no longer matches the index: the candidate's status
        // refreshes the index and writes it, which shows that the status ran.
        let touched = std::fs::File::options()
            .write(true)
            .open(parked.join("a.txt"))
            .unwrap();
        touched
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
        let index = std::fs::read(admin.join("index")).unwrap();
        let base = repo.git().head().unwrap();
        let target = wt.parent().unwrap().join("q");
        let req = WorktreeRequest {
            repo: &repo,
            path: &target,
            branch: "q",
            base: &base,
            reuse: crate::git::Reuse::RequireClean,
        };
        let (created, checked_while_locked) = std::thread::scope(|s| {
            let lock = crate::git::registration_lock();
            let taker = s.spawn(|| crate::git::create_repairing(&req, false));
            let checked = changed_within(&admin.join("index"), &index);
            drop(lock);
            (taker.join().unwrap().unwrap(), checked)
        });
        assert!(
            checked_while_locked,
            "the candidate was not checked while another held the registration lock"
        );
        assert_eq!(
            created,
            crate::git::Created::Recycled {
                from: parked.clone()
            }
        );
        assert!(target.join("a.txt").exists() && !parked.exists());
    }

    /// A pool that fills between a park's first count and its move leaves the worktree where
    /// it was, back on its branch, as a full pool always did.
    #[test]
    fn a_pool_filled_while_a_park_checked_leaves_the_worktree_on_its_branch() {
        let (_tmp, repo, wt, head) = repo_with_worktree();
        let pool = wt.parent().unwrap().parent().unwrap().join(POOL_DIR);
        let outcome = std::thread::scope(|s| {
            let lock = crate::git::registration_lock();
            let parker = s.spawn(|| park(&repo, &wt, 1));
            assert!(detached_within(&head), "the park did not get to its detach");
            // Another worktree is parked meanwhile: the pool is full.
            let other = pool.join("other");
            git(
                &repo.toplevel,
                &["worktree", "add", "-q", "--detach", other.to_str().unwrap()],
            );
            drop(lock);
            parker.join().unwrap().unwrap()
        });
        assert_eq!(outcome, None);
        assert!(wt.join("a.txt").exists());
        assert_eq!(
            std::fs::read_to_string(&head).unwrap().trim(),
            "ref: refs/heads/p"
        );
    }
}
