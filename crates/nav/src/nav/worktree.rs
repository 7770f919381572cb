//! A worktree's view: which blob each indexable file currently holds.
//!
//! Read in-process, without spawning git: tracked files come from git's index (read with gix);
//! a tracked file whose stat data still matches its index entry keeps the entry's blob id
//! without being read; modified, conflicted and untracked files are hashed here (the same
//! blob id `git hash-object` gives, without writing anything). Untracked files are found by a
//! walk honouring `.gitignore` and `info/exclude`, remembered with each directory's
//! modification time: a later scan re-walks only when a directory or an ignore file changed.
//! Repeated scans therefore cost one `lstat` per indexable file and directory, which is what
//! lets an edit re-index in milliseconds.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::NavError;
use super::lang::Lang;

/// One indexable file of the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewFile {
    /// Blob id of the file's current contents.
    pub oid: String,
    pub lang: Lang,
}

/// How long after a change a timestamp is not trusted: file-system clocks tick coarser than
/// the system clock, so a change just after a read can carry a time from before it.
const RACY: Duration = Duration::from_millis(100);

/// What identifies a file's or directory's state without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mtime: (i64, i64),
    ctime: (i64, i64),
    size: u64,
    ino: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            size: meta.len(),
            ino: meta.ino(),
        }
    }

    fn read(path: &Path) -> Option<Stamp> {
        std::fs::symlink_metadata(path).ok().map(|m| Stamp::of(&m))
    }

    /// Returns true if and only if the stamp changed less than [`RACY`] before `time`.
    fn is_racy(&self, time: SystemTime) -> bool {
        let changed = self.mtime.max(self.ctime);
        let at = SystemTime::UNIX_EPOCH
            + Duration::new(
                changed.0.max(0) as u64,
                changed.1.clamp(0, 999_999_999) as u32,
            );
        at + RACY >= time
    }
}

/// Untracked candidates found by the last walk, valid while no directory and no ignore file
/// changed.
struct Walked {
    /// Every visited directory and each ignore file, with its stamp (`None`: absent).
    watched: Vec<(PathBuf, Option<Stamp>)>,
    /// Indexable, not ignored files found (tracked ones included; the index decides).
    files: Vec<String>,
}

/// Scans one worktree repeatedly, remembering what it may reuse between scans.
pub struct Scanner {
    root: PathBuf,
    /// The worktree's registered git directory, opened instead of following `.git` (see
    /// `git::registered_git_dir`); `None` to discover it from the worktree.
    git_dir: Option<PathBuf>,
    repo: Option<gix::Repository>,
    /// Blob ids of files hashed before, with the stamp they had then.
    hashed: HashMap<String, (Stamp, String)>,
    walked: Option<Walked>,
}

impl Scanner {
    /// Returns a scanner of the worktree at `root` whose git directory is `git_dir`, whatever
    /// the worktree's own `.git` says.
    pub fn pinned(root: &Path, git_dir: &Path) -> Scanner {
        Scanner {
            git_dir: Some(git_dir.to_path_buf()),
            ..Scanner::new(root)
        }
    }

    /// Returns a scanner of the worktree at `root`; nothing is read until [`Scanner::scan`].
    pub fn new(root: &Path) -> Scanner {
        Scanner {
            root: root.to_path_buf(),
            git_dir: None,
            repo: None,
            hashed: HashMap::new(),
            walked: None,
        }
    }

    fn index_error(&self, message: impl std::fmt::Display) -> NavError {
        NavError::GitIndex {
            path: self.root.clone(),
            message: message.to_string(),
        }
    }

    /// Returns the indexable files of the worktree, keyed by repository-relative path.
    pub fn scan(&mut self) -> Result<BTreeMap<String, ViewFile>, NavError> {
        if self.repo.is_none() {
            let at = self.git_dir.as_deref().unwrap_or(&self.root);
            let repo = gix::open_opts(at, gix::open::Options::isolated())
                .map_err(|e| self.index_error(e))?;
            self.repo = Some(repo);
        }
        let Some(repo) = self.repo.as_ref() else {
            return Err(self.index_error("the repository did not open"));
        };
        let git_dir = repo.git_dir().to_path_buf();
        let common_dir = repo.common_dir().to_path_buf();
        let index = repo.index_or_empty().map_err(|e| self.index_error(e))?;
        let index_time = SystemTime::from(index.timestamp());

        let walk_valid = self.walked.as_ref().is_some_and(|w| {
            w.watched
                .iter()
                .all(|(path, stamp)| Stamp::read(path) == *stamp)
        });
        // The walk for untracked files and the check of the tracked ones run side by side.
        let root = &self.root;
        let ((mut files, tracked, mut to_hash), walked) = std::thread::scope(|s| {
            let walker = (!walk_valid).then(|| s.spawn(|| walk(root, &git_dir, &common_dir)));
            let part = tracked_files(&index, root, index_time);
            (part, walker.map(|h| h.join()))
        });
        let candidates = match walked {
            None => self
                .walked
                .as_ref()
                .map(|w| w.files.clone())
                .unwrap_or_default(),
            Some(Err(_)) => return Err(self.index_error("the walk of the worktree failed")),
            Some(Ok((files, watched))) => {
                self.walked = watched.map(|watched| Walked {
                    watched,
                    files: files.clone(),
                });
                files
            }
        };
        for path in candidates {
            if !tracked.contains(path.as_str())
                && let Some(lang) = Lang::from_path(&path)
            {
                to_hash.push((path, lang));
            }
        }
        drop(tracked);

        // Files are read through their path: one whose directory leads out of the worktree
        // (a symbolic link put in a directory's place) is not the worktree's, and is not read.
        let mut beneath = Beneath::new(&self.root);
        files.retain(|path, _| beneath.check(path));
        to_hash.retain(|(path, _)| beneath.check(path));
        let hashed = self.hash_all(&to_hash, repo.object_hash());
        for ((path, lang), oid) in to_hash.into_iter().zip(hashed) {
            if let Some(oid) = oid {
                files.insert(path, ViewFile { oid, lang });
            }
        }
        Ok(files)
    }

    /// Returns the blob id `data` would have in the repository (SHA-1 before the first scan).
    pub fn blob_id(&self, data: &[u8]) -> String {
        let kind = self
            .repo
            .as_ref()
            .map_or(gix::hash::Kind::Sha1, |r| r.object_hash());
        gix::objs::compute_hash(kind, gix::objs::Kind::Blob, data)
            .map(|id| id.to_string())
            .unwrap_or_default()
    }

    /// Returns the blob id of each file (`None` when it cannot be read), reusing ids of files
    /// whose stamp has not changed since they were hashed and hashing the rest in parallel.
    fn hash_all(&mut self, paths: &[(String, Lang)], kind: gix::hash::Kind) -> Vec<Option<String>> {
        let now = SystemTime::now();
        let mut out: Vec<Option<String>> = vec![None; paths.len()];
        let mut work: Vec<usize> = Vec::new();
        let mut stamps: Vec<Option<Stamp>> = vec![None; paths.len()];
        for (i, (path, _)) in paths.iter().enumerate() {
            let stamp = Stamp::read(&self.root.join(path));
            stamps[i] = stamp;
            match (stamp, self.hashed.get(path)) {
                (Some(s), Some((old, oid))) if s == *old && !s.is_racy(now) => {
                    out[i] = Some(oid.clone());
                }
                (Some(_), _) => work.push(i),
                (None, _) => {}
            }
        }
        let root = &self.root;
        let hash_one = |i: &usize| -> Option<String> {
            let data = std::fs::read(root.join(&paths[*i].0)).ok()?;
            gix::objs::compute_hash(kind, gix::objs::Kind::Blob, &data)
                .ok()
                .map(|id| id.to_string())
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let results: Vec<Option<String>> = if work.len() < 64 || threads < 2 {
            work.iter().map(hash_one).collect()
        } else {
            let chunk = work.len().div_ceil(threads);
            std::thread::scope(|s| {
                let handles: Vec<_> = work
                    .chunks(chunk)
                    .map(|part| s.spawn(|| part.iter().map(hash_one).collect::<Vec<_>>()))
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_default())
                    .collect()
            })
        };
        for (i, oid) in work.into_iter().zip(results) {
            if let (Some(oid), Some(stamp)) = (&oid, stamps[i]) {
                self.hashed.insert(paths[i].0.clone(), (stamp, oid.clone()));
            }
            out[i] = oid;
        }
        out
    }
}

/// The tracked files of the view found from git's index: those whose stat data still match
/// their entry, with the entry's blob id; the paths of every entry; and the files to hash
/// (modified or conflicted).
#[allow(clippy::type_complexity)]
fn tracked_files<'a>(
    index: &'a gix::index::File,
    root: &Path,
    index_time: SystemTime,
) -> (
    BTreeMap<String, ViewFile>,
    std::collections::HashSet<&'a str>,
    Vec<(String, Lang)>,
) {
    let mut files = BTreeMap::new();
    let mut tracked: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut to_hash: Vec<(String, Lang)> = Vec::new();
    for entry in index.entries() {
        let Ok(path) = std::str::from_utf8(entry.path(index)) else {
            continue;
        };
        tracked.insert(path);
        let Some(lang) = Lang::from_path(path) else {
            continue;
        };
        let regular = entry.mode == gix::index::entry::Mode::FILE
            || entry.mode == gix::index::entry::Mode::FILE_EXECUTABLE;
        if !regular {
            continue; // symlinks and submodules are not source files
        }
        if entry.stage_raw() != 0 {
            // A conflicted path: index the working-tree copy (once, whatever the stages).
            if to_hash.last().is_none_or(|(p, _)| p != path) {
                to_hash.push((path.to_string(), lang));
            }
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(root.join(path)) else {
            continue; // deleted in the worktree: it leaves the view
        };
        if !meta.is_file() {
            continue;
        }
        if unchanged(&entry.stat, &meta, index_time) {
            files.insert(
                path.to_string(),
                ViewFile {
                    oid: entry.id.to_string(),
                    lang,
                },
            );
        } else {
            to_hash.push((path.to_string(), lang));
        }
    }
    (files, tracked, to_hash)
}

/// Tells whether a relative path's directory lies inside the worktree once symbolic links are
/// followed, remembering the answer per directory.
struct Beneath {
    root: Option<PathBuf>,
    dirs: HashMap<String, bool>,
}

impl Beneath {
    fn new(root: &Path) -> Beneath {
        Beneath {
            root: root.canonicalize().ok(),
            dirs: HashMap::new(),
        }
    }

    /// Returns true if and only if the directory of `rel` resolves beneath the root.
    fn check(&mut self, rel: &str) -> bool {
        let Some(root) = &self.root else {
            return false;
        };
        let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
        if rel.split('/').any(|c| c == ".." || c.is_empty()) {
            return false;
        }
        *self.dirs.entry(dir.to_string()).or_insert_with(|| {
            root.join(dir)
                .canonicalize()
                .is_ok_and(|real| real.starts_with(root))
        })
    }
}

/// Returns true if and only if the file's stat data still matches its index entry and the
/// entry is not racily clean (changed in the same tick the index was written).
fn unchanged(
    entry: &gix::index::entry::Stat,
    meta: &std::fs::Metadata,
    index_time: SystemTime,
) -> bool {
    let same_secs = entry.mtime.secs as i64 == meta.mtime()
        && entry.ctime.secs as i64 == meta.ctime()
        && entry.size == meta.len() as u32
        && entry.ino == meta.ino() as u32;
    // git writes nanoseconds only when built to; zero means "not recorded", and then a whole
    // second is the tick.
    let same_nsecs = entry.mtime.nsecs == 0 || entry.mtime.nsecs as i64 == meta.mtime_nsec();
    let mtime = SystemTime::UNIX_EPOCH + Duration::new(entry.mtime.secs as u64, entry.mtime.nsecs);
    // git's rule: an entry changed at or after the index was written may have changed again
    // within the same tick, so its stat data proves nothing.
    let tick = if entry.mtime.nsecs == 0 {
        Duration::from_secs(1)
    } else {
        Duration::ZERO
    };
    let racy = mtime + tick >= index_time;
    same_secs && same_nsecs && !racy
}

/// Walks the worktree for indexable files that no ignore rule excludes; with them, the
/// stamps of every directory and ignore file, unless something changed during the walk (the
/// next scan then walks again).
#[allow(clippy::type_complexity)]
fn walk(
    root: &Path,
    git_dir: &Path,
    common_dir: &Path,
) -> (Vec<String>, Option<Vec<(PathBuf, Option<Stamp>)>>) {
    let started = SystemTime::now();
    let mut watched: Vec<(PathBuf, Option<Stamp>)> = Vec::new();
    for p in [
        common_dir.join("info/exclude"),
        git_dir.join("info/exclude"),
    ] {
        let stamp = Stamp::read(&p);
        watched.push((p, stamp));
    }
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .ignore(false)
        .parents(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker.flatten() {
        let path = entry.path();
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            // A directory's ignore file counts even before it exists.
            let gi = path.join(".gitignore");
            let gi_stamp = Stamp::read(&gi);
            watched.push((gi, gi_stamp));
            watched.push((path.to_path_buf(), Stamp::read(path)));
        } else if kind.is_file()
            && let Ok(rel) = path.strip_prefix(root)
            && let Some(rel) = rel.to_str()
            && Lang::from_path(rel).is_some()
        {
            files.push(rel.to_string());
        }
    }
    let stable = watched
        .iter()
        .all(|(_, s)| s.is_none_or(|s| !s.is_racy(started)));
    (files, stable.then_some(watched))
}
