//! Saves what a backup ref cannot hold before a packet worktree is removed: the git
//! repositories nested in it and the files its ignore rules hide.
//!
//! A backup ref (see `backup`) records a nested repository as a gitlink — a commit id whose
//! objects live only inside that repository — and leaves ignored files out. So before a
//! worktree goes, each nested repository becomes a bundle (all its refs and HEAD, plus its
//! uncommitted and untracked files as a commit under `refs/orchestra/uncommitted`), and the
//! ignored files of the worktree and of every nested repository go into one tar archive.
//!
//! A nested repository is the worker's: its configuration, hooks and attributes may be
//! hostile. So no git command that could run a filter, hook or fsmonitor ever runs with its
//! configuration: its refs are fetched into a private repository (`git init --bare` in the
//! destination, our configuration only), the snapshot of its files is built there with that
//! repository as `GIT_DIR`, and the bundle is written from there. The only commands run in
//! the nested repository itself are `rev-parse` (does HEAD name a commit) and the
//! `upload-pack` a local fetch starts, both with hooks and fsmonitor off.
//!
//! What cannot be saved is refused before anything is written or removed: a nested repository
//! with no commit (git cannot even record it as a gitlink), or one whose `.git` leads outside
//! the worktree.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Git;
use super::worktree::WorktreeError;

/// The ref of a bundle that holds a nested repository's uncommitted work.
pub const UNCOMMITTED_REF: &str = "refs/orchestra/uncommitted";

/// How deep nested repositories inside nested repositories are followed.
const MAX_DEPTH: usize = 8;

/// A git repository found inside a worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NestedRepo {
    /// Its path relative to the worktree's top, `/`-separated, without a trailing slash.
    pub path: String,
    /// Its git directory.
    git_dir: PathBuf,
}

/// What a worktree holds beyond what a backup ref saves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// Nested repositories, outermost first.
    pub nested: Vec<NestedRepo>,
    /// Ignored files and directories, relative to the worktree's top.
    pub ignored: Vec<String>,
    /// Ignored directories of build output and caches that tools make again (`target`,
    /// `node_modules`, `__pycache__`, …; see [`REGENERABLE`]): not saved.
    pub regenerable: Vec<String>,
}

/// Names of ignored directories that hold what a build or a package manager makes again,
/// left out of the archive of ignored files (a `target/` can be gigabytes).
pub const REGENERABLE: &[&str] = &[
    "target",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    ".gradle",
    ".next",
    ".turbo",
    ".parcel-cache",
];

impl Leftovers {
    /// Returns true if and only if there is nothing to save.
    pub fn is_empty(&self) -> bool {
        self.nested.is_empty() && self.ignored.is_empty()
    }
}

/// The largest ignored file archived, in bytes of its apparent size: a worker can plant a
/// sparse file of 100 GB that takes no disk, and an archive would write it out whole.
pub const MAX_ARCHIVED_FILE: u64 = 1 << 30;

/// The most bytes of ignored files one worktree's archive holds; files past it are not saved.
pub const MAX_ARCHIVED_TOTAL: u64 = 4 << 30;

/// Where [`save_leftovers`] put what it saved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SavedLeftovers {
    /// Each nested repository's path in the worktree and its bundle.
    pub bundles: Vec<(String, PathBuf)>,
    /// The tar archive of the ignored files, when there were any.
    pub archive: Option<PathBuf>,
    /// Ignored files left out of the archive for their size ([`MAX_ARCHIVED_FILE`],
    /// [`MAX_ARCHIVED_TOTAL`]), relative to the worktree's top, with their apparent sizes.
    pub too_large: Vec<(String, u64)>,
}

/// Returns the nested repositories and ignored files of the worktree of `git` (its pinned
/// runner, see [`Git::pinned`]), or `CannotSave` when one of them could not be saved.
/// Writes nothing.
pub fn find_leftovers(git: &Git) -> Result<Leftovers, WorktreeError> {
    let top = git.dir().to_path_buf();
    let mut found = Leftovers::default();
    for (path, is_dir) in git.ignored_entries()? {
        let name = path.rsplit('/').next().unwrap_or(&path);
        if is_dir && REGENERABLE.contains(&name) {
            found.regenerable.push(path);
        } else {
            found.ignored.push(path);
        }
    }
    for rel in repo_candidates(git)? {
        descend(&top, &top, &rel, 1, &mut found)?;
    }
    Ok(found)
}

/// Records the nested repository at `<dir>/<rel>` (if it is one) and what it holds, refusing
/// one that cannot be saved.
fn descend(
    top: &Path,
    dir: &Path,
    rel: &str,
    depth: usize,
    found: &mut Leftovers,
) -> Result<(), WorktreeError> {
    let rel = rel.trim_end_matches('/');
    let path = dir.join(rel);
    let Some(git_dir) = nested_git_dir(top, &path)? else {
        return Ok(());
    };
    let from_top = path
        .strip_prefix(top)
        .unwrap_or(&path)
        .to_string_lossy()
        .into_owned();
    let cannot = |reason: String| WorktreeError::CannotSave {
        path: top.to_path_buf(),
        reason,
    };
    if depth > MAX_DEPTH {
        return Err(cannot(format!(
            "{from_top} is a git repository nested more than {MAX_DEPTH} levels deep; move it out of the worktree"
        )));
    }
    let inner = nested_runner(&path, &git_dir);
    if inner.resolve("HEAD^{commit}")?.is_none() {
        return Err(cannot(format!(
            "{from_top} is a git repository with no commit, which git cannot record; commit in it (or move it out of the worktree)"
        )));
    }
    found.nested.push(NestedRepo {
        path: from_top.clone(),
        git_dir,
    });
    // Its own ignored files and repositories, read without its configuration (see the module
    // comment): an empty index in a private directory makes every file of it untracked.
    let scratch = Scratch::new(&std::env::temp_dir())?;
    let private = private_repo(scratch.path(), &path)?;
    for (rel, _) in private.ignored_entries()? {
        found.ignored.push(format!("{from_top}/{rel}"));
    }
    for inner_rel in untracked_repos(&private)? {
        descend(top, &path, &inner_rel, depth + 1, found)?;
    }
    Ok(())
}

/// Returns the git directory of the repository whose top is `path`, `None` when `path` has no
/// `.git`; refuses a `.git` that leads outside the worktree `top`.
fn nested_git_dir(top: &Path, path: &Path) -> Result<Option<PathBuf>, WorktreeError> {
    let link = path.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&link) else {
        return Ok(None);
    };
    let target = if meta.is_dir() {
        link.clone()
    } else if meta.is_file() {
        let text = std::fs::read_to_string(&link).unwrap_or_default();
        match text.trim().strip_prefix("gitdir:") {
            Some(t) => path.join(t.trim()),
            None => return Ok(None),
        }
    } else {
        link.clone()
    };
    let inside = target
        .canonicalize()
        .ok()
        .zip(top.canonicalize().ok())
        .is_some_and(|(t, top)| t.starts_with(top));
    if !inside {
        let rel = path.strip_prefix(top).unwrap_or(path);
        return Err(WorktreeError::CannotSave {
            path: top.to_path_buf(),
            reason: format!(
                "{} is a git repository whose .git leads outside the worktree ({}); move it out of the worktree",
                rel.display(),
                target.display()
            ),
        });
    }
    Ok(Some(target))
}

/// Returns a runner for the nested repository at `path`, hooks and fsmonitor off.
fn nested_runner(path: &Path, git_dir: &Path) -> Git {
    Git::pinned_to(path, git_dir)
}

/// Creates a bare repository in `dir` and returns a runner that uses it as `GIT_DIR` with
/// `work_tree` as its work tree and an empty index of its own.
fn private_repo(dir: &Path, work_tree: &Path) -> Result<Git, WorktreeError> {
    let git_dir = dir.join("repo.git");
    let dir_text = git_dir.to_string_lossy().into_owned();
    Git::new(dir).run(["init", "--quiet", "--bare", "--", &dir_text])?;
    Ok(Git::pinned_to(work_tree, &git_dir)
        .with_env("GIT_INDEX_FILE", dir.join("index"))
        .with_config("core.bare=false"))
}

/// Returns the paths that may hold a nested repository, from one `ls-files`: the untracked
/// directories git lists whole (`<dir>/`: a repository of their own) and the index's gitlinks.
fn repo_candidates(git: &Git) -> Result<Vec<String>, WorktreeError> {
    let out = git.run([
        "ls-files",
        "--stage",
        "--others",
        "--exclude-standard",
        "-z",
    ])?;
    let mut candidates: Vec<String> = Vec::new();
    for entry in out.split('\0').filter(|e| !e.is_empty()) {
        // An index entry reads `<mode> <id> <stage>\t<path>`, an untracked one its path alone;
        // a path may hold a tab itself, so every reading naming a candidate counts (`descend`
        // keeps only real repositories).
        if let Some((meta, path)) = entry.split_once('\t')
            && meta.starts_with("160000 ")
        {
            candidates.push(path.to_string());
        }
        if entry.ends_with('/') {
            candidates.push(entry.trim_end_matches('/').to_string());
        }
    }
    let mut seen = std::collections::HashSet::new();
    candidates.retain(|c| seen.insert(c.clone()));
    Ok(candidates)
}

/// Returns the untracked entries `git` lists as directories that hold a repository.
fn untracked_repos(git: &Git) -> Result<Vec<String>, WorktreeError> {
    let out = git.run(["ls-files", "--others", "--exclude-standard", "-z"])?;
    Ok(out
        .split('\0')
        .filter(|e| e.ends_with('/'))
        .map(str::to_string)
        .collect())
}

/// Saves `found`, the leftovers of the worktree of `git` (its pinned runner), into `dest`:
/// one bundle per nested repository and one tar archive of the ignored files. Each file is
/// written under a temporary name and renamed when complete, so what `dest` holds is whole.
pub fn save_leftovers(
    git: &Git,
    found: &Leftovers,
    dest: &Path,
) -> Result<SavedLeftovers, WorktreeError> {
    let mut saved = SavedLeftovers::default();
    if found.is_empty() {
        return Ok(saved);
    }
    fs_err::create_dir_all(dest).map_err(|source| WorktreeError::Io {
        path: dest.to_path_buf(),
        source,
    })?;
    let top = git.dir();
    for repo in &found.nested {
        let bundle = dest.join(format!("{}.bundle", file_stem(&repo.path)));
        bundle_nested(&top.join(&repo.path), repo, &bundle)?;
        saved.bundles.push((repo.path.clone(), bundle));
    }
    if !found.ignored.is_empty() {
        let archive = dest.join("ignored.tar");
        let (entries, too_large) = archive_entries(top, &found.ignored);
        write_tar(top, &entries, &archive)?;
        saved.archive = Some(archive);
        saved.too_large = too_large;
    }
    Ok(saved)
}

/// Writes a bundle of the nested repository `repo` (working tree `path`) to `bundle`: its refs
/// and HEAD, plus its files as they are now under [`UNCOMMITTED_REF`] when they differ from HEAD.
fn bundle_nested(path: &Path, repo: &NestedRepo, bundle: &Path) -> Result<(), WorktreeError> {
    let cannot = |reason: String| WorktreeError::CannotSave {
        path: path.to_path_buf(),
        reason,
    };
    let scratch = Scratch::new(bundle.parent().unwrap_or(Path::new(".")))?;
    let private = private_repo(scratch.path(), path)?;
    let source = repo.git_dir.to_string_lossy().into_owned();
    // `upload-pack` in the nested repository reads its configuration; the `-c` settings of
    // the private runner (hooks and fsmonitor off) reach it too.
    private.run([
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--update-head-ok",
        "--",
        &source,
        "+refs/*:refs/*",
        "+HEAD:refs/orchestra/head",
    ])?;
    let head = private
        .resolve("refs/orchestra/head^{commit}")?
        .ok_or_else(|| cannot(format!("{} has no commit at HEAD", repo.path)))?;
    private.run(["add", "--all", "--sparse", "--", ":/"])?;
    let tree = private.run(["write-tree"])?;
    if private.resolve("refs/orchestra/head^{tree}")?.as_deref() != Some(tree.as_str()) {
        let commit = private.commit_tree(
            &tree,
            &[&head],
            "git-orchestra gc: uncommitted work of a nested repository",
        )?;
        private
            .writing()
            .run(["update-ref", UNCOMMITTED_REF, &commit])?;
    }
    private
        .writing()
        .run(["symbolic-ref", "HEAD", "refs/orchestra/head"])?;
    let partial = scratch.path().join("out.bundle");
    let partial_text = partial.to_string_lossy().into_owned();
    private.run(["bundle", "create", "--quiet", &partial_text, "--all"])?;
    private.run(["bundle", "verify", "--quiet", &partial_text])?;
    fs_err::rename(&partial, bundle).map_err(|source| io_error(bundle, source))?;
    Ok(())
}

/// Returns every entry at or beneath `paths` under `top` to archive — directories, files and
/// symbolic links (not followed) — and the files left out for their size: one above
/// [`MAX_ARCHIVED_FILE`], or one that would take the archive past [`MAX_ARCHIVED_TOTAL`].
fn archive_entries(top: &Path, paths: &[String]) -> (Vec<PathBuf>, Vec<(String, u64)>) {
    let (mut entries, mut too_large) = (Vec::new(), Vec::new());
    let mut total = 0u64;
    let mut stack: Vec<PathBuf> = paths.iter().rev().map(PathBuf::from).collect();
    while let Some(rel) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(top.join(&rel)) else {
            continue;
        };
        if meta.is_dir() {
            let mut children: Vec<PathBuf> = std::fs::read_dir(top.join(&rel))
                .map(|d| d.flatten().map(|e| rel.join(e.file_name())).collect())
                .unwrap_or_default();
            children.sort_unstable_by(|a, b| b.cmp(a));
            stack.extend(children);
        } else if meta.is_file() {
            let size = meta.len();
            if size > MAX_ARCHIVED_FILE || total.saturating_add(size) > MAX_ARCHIVED_TOTAL {
                too_large.push((rel.to_string_lossy().into_owned(), size));
                continue;
            }
            total += size;
        }
        entries.push(rel);
    }
    (entries, too_large)
}

/// Writes the tar archive `archive` of exactly the entries `paths` under `top` (a directory
/// as itself, without what it holds; symbolic links as links) with the system's `tar`.
fn write_tar(top: &Path, paths: &[PathBuf], archive: &Path) -> Result<(), WorktreeError> {
    use std::os::unix::ffi::OsStrExt;
    let partial = archive.with_extension("tar.partial");
    let mut list = Vec::new();
    for p in paths {
        list.extend_from_slice(p.as_os_str().as_bytes());
        list.push(0);
    }
    let cannot = |reason: String| WorktreeError::CannotSave {
        path: top.to_path_buf(),
        reason,
    };
    let mut child = Command::new("tar")
        .arg("--create")
        .arg("--file")
        .arg(&partial)
        .arg("--directory")
        .arg(top)
        .args(["--no-recursion", "--null", "--files-from", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            cannot(format!(
                "could not start `tar` to archive ignored files ({e}); install tar"
            ))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&list);
    }
    let out = child
        .wait_with_output()
        .map_err(|source| io_error(archive, source))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&partial);
        return Err(cannot(format!(
            "archiving its ignored files failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    fs_err::rename(&partial, archive).map_err(|source| io_error(archive, source))?;
    Ok(())
}

/// Returns a file name standing for the worktree-relative path `rel`.
fn file_stem(rel: &str) -> String {
    rel.chars()
        .map(|c| match c {
            '/' => '%',
            c if c.is_control() => '_',
            c => c,
        })
        .collect()
}

/// A private directory, removed with everything in it on drop.
struct Scratch(PathBuf);

impl Scratch {
    /// Creates a new directory in `parent`.
    fn new(parent: &Path) -> Result<Scratch, WorktreeError> {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = parent.join(format!(
            "orchestra-scratch-{}-{}-{n}",
            std::process::id(),
            orchestra_sys::exec::now_ms()
        ));
        fs_err::create_dir_all(&dir).map_err(|source| io_error(&dir, source))?;
        Ok(Scratch(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Best effort: a leftover scratch directory holds only copies.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn io_error(path: &Path, source: std::io::Error) -> WorktreeError {
    WorktreeError::Io {
        path: path.to_path_buf(),
        source,
    }
}
