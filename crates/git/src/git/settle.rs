//! Dates a fresh checkout's files before its index, so git does not read them all again.
//!
//! git records each checked-out file's stat data in the index. A file whose modification time
//! is not older than the index file is *racily clean*: it may have changed after git looked at
//! it without its stat data showing it (git compares whole seconds unless built with
//! `USE_NSEC`), so every later `git status` or `git add` reads it whole and hashes it again,
//! until some command rewrites the index in a later second. A fresh checkout writes its files
//! and its index within the same second or so, so the first reads of a packet's worktree (the
//! validation's status, the commit's add) hashed the whole tree again: 229 ms of a one-packet
//! run on the 106 MB Python standard library.
//!
//! No process but this one has touched a worktree it has just checked out. So [`settle`] gives
//! each racily clean file a modification time one second older than the index, after checking
//! that the file is still what the index records (type, inode, size, modification and change
//! times), and records the file's new times in the index, written under git's `index.lock`
//! with its checksum recomputed. A later change to such a file gives it a later modification
//! and change time than the index records, so git sees it. A file that no longer matches, a
//! link, a submodule or a conflicted or skipped entry is left as it was: git hashes it as
//! before. An index this does not read (version 4's compressed paths, a split index, another
//! hash than SHA-1) is left alone.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Where an entry's fields start: ctime (seconds, nanoseconds), mtime (seconds, nanoseconds),
/// dev, ino, mode, uid, gid, size (4 bytes each), the object id, then the 16-bit flags.
const CTIME: usize = 0;
const MTIME: usize = 8;
const INO: usize = 20;
const MODE: usize = 24;
const SIZE: usize = 36;
const OID: usize = 40;
/// SHA-1's length: the object ids and the trailing checksum of the indexes this reads.
const HASH: usize = 20;
const FLAGS: usize = OID + HASH;
/// The fixed part of an entry, without (and with) the extended flags of version 3.
const FIXED: usize = FLAGS + 2;

/// The flag bits this reads: extended flags follow, the merge stage, the name's length.
const EXTENDED: u16 = 0x4000;
const STAGE: u16 = 0x3000;
const NAME_LENGTH: u16 = 0x0fff;
/// Extended flags: skip-worktree and intent-to-add.
const SKIPPED_OR_INTENDED: u16 = 0x4000 | 0x2000;

/// Gives the racily clean files of the index at `index_path` (of the worktree `work_dir`, which
/// nothing else has written since the index was) a modification time one second older than the
/// index and records it there; returns how many files were re-dated (0 when the index needs
/// nothing or is of a kind this leaves alone). An error leaves git to hash what it must: a file
/// re-dated without its index entry updated no longer matches its stat data and is hashed,
/// exactly as a racy one.
pub(crate) fn settle(work_dir: &Path, index_path: &Path) -> std::io::Result<usize> {
    let (mut bytes, index_time) = {
        let mut file = fs_err::File::open(index_path)?;
        let time = file.metadata()?.mtime();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes)?;
        (bytes, time)
    };
    let Some(entries) = entries(&bytes) else {
        return Ok(0);
    };
    let Ok(index_time) = u32::try_from(index_time) else {
        return Ok(0);
    };
    let before = index_time.saturating_sub(1);
    let mut settled = 0;
    for entry in entries {
        let field = |at: usize| u32_at(&bytes, entry.at + at);
        if field(MTIME) < index_time {
            continue;
        }
        let mode = field(MODE);
        if mode & 0o170000 != 0o100000 || !entry.plain {
            continue;
        }
        let path = work_dir.join(std::ffi::OsStr::from_bytes(entry.name(&bytes)));
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        // Only a file still as git recorded it: the same file, length and times.
        let as_recorded = meta.file_type().is_file()
            && meta.ino() as u32 == field(INO)
            && meta.size() as u32 == field(SIZE)
            && meta.mtime() as u32 == field(MTIME)
            && meta.ctime() as u32 == field(CTIME);
        if !as_recorded || set_modified(&path, before).is_err() {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path)?;
        for (at, value) in [
            (CTIME, meta.ctime() as u32),
            (CTIME + 4, meta.ctime_nsec() as u32),
            (MTIME, meta.mtime() as u32),
            (MTIME + 4, meta.mtime_nsec() as u32),
        ] {
            bytes[entry.at + at..entry.at + at + 4].copy_from_slice(&value.to_be_bytes());
        }
        settled += 1;
    }
    if settled > 0 {
        write_locked(index_path, &mut bytes)?;
    }
    Ok(settled)
}

/// An entry of an index: where it starts, where its name does, how long that is, and whether
/// it is a plain stage-0 entry (not conflicted, skipped or only intended).
struct Entry {
    at: usize,
    name_at: usize,
    name_len: usize,
    plain: bool,
}

impl Entry {
    fn name<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[self.name_at..self.name_at + self.name_len]
    }
}

/// Returns the entries of a version 2 or 3 index with a SHA-1 checksum (or git's
/// `index.skipHash` zeros) and no split index, or `None` for anything else.
fn entries(bytes: &[u8]) -> Option<Vec<Entry>> {
    if bytes.len() < 12 + HASH || &bytes[..4] != b"DIRC" {
        return None;
    }
    let version = u32_at(bytes, 4);
    if !(2..=3).contains(&version) {
        return None;
    }
    let body = bytes.len() - HASH;
    let trailer = &bytes[body..];
    if trailer.iter().any(|&b| b != 0) && checksum(&bytes[..body])? != trailer {
        return None;
    }
    let count = u32_at(bytes, 8) as usize;
    let mut entries = Vec::with_capacity(count);
    let mut at = 12;
    for _ in 0..count {
        if at + FIXED > body {
            return None;
        }
        let flags = u16::from_be_bytes([bytes[at + FLAGS], bytes[at + FLAGS + 1]]);
        let (name_at, extended) = if flags & EXTENDED != 0 {
            let ext = u16::from_be_bytes([bytes[at + FIXED], bytes[at + FIXED + 1]]);
            (at + FIXED + 2, ext)
        } else {
            (at + FIXED, 0)
        };
        let name_len = match flags & NAME_LENGTH {
            NAME_LENGTH => bytes.get(name_at..body)?.iter().position(|&b| b == 0)?,
            n => n as usize,
        };
        // The name and 1 to 8 NULs, to a multiple of 8 bytes.
        let next = at + ((name_at - at + name_len + 8) & !7);
        if next > body {
            return None;
        }
        entries.push(Entry {
            at,
            name_at,
            name_len,
            plain: flags & STAGE == 0 && extended & SKIPPED_OR_INTENDED == 0,
        });
        at = next;
    }
    // Extensions: a 4-byte signature and a 4-byte length each. A split index (`link`) keeps
    // entries elsewhere.
    while at + 8 <= body {
        if &bytes[at..at + 4] == b"link" {
            return None;
        }
        at += 8 + u32_at(bytes, at + 4) as usize;
    }
    Some(entries)
}

/// Writes `bytes` (its checksum recomputed unless git was told to skip it) over the index at
/// `path` the way git does: to `index.lock`, created only if no other writer holds it, then
/// renamed into place.
fn write_locked(path: &Path, bytes: &mut [u8]) -> std::io::Result<()> {
    let body = bytes.len() - HASH;
    if bytes[body..].iter().any(|&b| b != 0) {
        let sum = checksum(&bytes[..body]).ok_or_else(|| std::io::Error::other("hashing"))?;
        bytes[body..].copy_from_slice(&sum);
    }
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = std::path::PathBuf::from(lock_name);
    let mut file = fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock)?;
    // Not synced, as git does not sync an index: a crash before the worktree's registration
    // is finished rolls the whole worktree back.
    let written =
        std::io::Write::write_all(&mut file, bytes).and_then(|()| std::fs::rename(&lock, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&lock);
    }
    written
}

/// Sets `path`'s modification time to whole second `secs` without following a link; its
/// access time stays.
fn set_modified(path: &Path, secs: u32) -> std::io::Result<()> {
    let name = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    let times = [
        libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        libc::timespec {
            tv_sec: libc::time_t::from(secs),
            tv_nsec: 0,
        },
    ];
    // SAFETY: `name` is a NUL-terminated path and `times` two valid timespecs, as utimensat
    // requires; it keeps no pointer past the call.
    let rc = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            name.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn checksum(bytes: &[u8]) -> Option<[u8; HASH]> {
    let mut hasher = gix::hash::hasher(gix::hash::Kind::Sha1);
    hasher.update(bytes);
    let id = hasher.try_finalize().ok()?;
    id.as_bytes().try_into().ok()
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::checkout::{CheckoutMethod, add_checked_out_by};
    use crate::git::testing::git;

    /// A committed repository of `files` small files and a branch `packet` at its commit.
    fn repo_of(files: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        for i in 0..files {
            std::fs::write(repo.join(format!("f{i}.txt")), format!("file {i:04}\n")).unwrap();
        }
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "files"]);
        git(&repo, &["branch", "packet"]);
        dir
    }

    /// The modification times (whole seconds) of the index's entries, and the index file's.
    fn times(index: &Path) -> (Vec<u32>, u32) {
        let bytes = std::fs::read(index).unwrap();
        let list = entries(&bytes).expect("a version 2 index");
        let mtimes = list.iter().map(|e| u32_at(&bytes, e.at + MTIME)).collect();
        let own = std::fs::metadata(index).unwrap().mtime() as u32;
        (mtimes, own)
    }

    #[test]
    fn a_fresh_checkout_leaves_no_file_racily_clean_and_a_later_change_still_shows() {
        for method in [CheckoutMethod::Gix, CheckoutMethod::GitParallel] {
            let dir = repo_of(40);
            let repo = dir.path().join("repo");
            let wt = dir.path().join("wt");
            add_checked_out_by(&repo, &wt, "packet", method).unwrap();
            let index = std::path::PathBuf::from(git(&wt, &["rev-parse", "--git-path", "index"]));
            let index = if index.is_absolute() {
                index
            } else {
                wt.join(index)
            };
            let (mtimes, own) = times(&index);
            assert_eq!(mtimes.len(), 40);
            assert!(
                mtimes.iter().all(|&t| t < own),
                "{method:?}: an entry is as new as its index ({own}): {mtimes:?}"
            );
            // The files are as committed, and git trusts the index without hashing them.
            assert_eq!(git(&wt, &["status", "--porcelain"]), "", "{method:?}");
            assert_eq!(git(&wt, &["diff", "--stat", "HEAD"]), "", "{method:?}");
            // A change within the same second, of the same length, still shows.
            std::fs::write(wt.join("f7.txt"), "FILE 0007\n").unwrap();
            assert_eq!(
                git(&wt, &["status", "--porcelain"]),
                " M f7.txt",
                "{method:?}: a same-length change went unseen"
            );
        }
    }

    #[test]
    fn a_file_changed_after_git_recorded_it_is_left_for_git_to_hash() {
        let dir = repo_of(5);
        let repo = dir.path().join("repo");
        // `git add` just recorded every file: all are as new as the index.
        git(&repo, &["add", "-A"]);
        let index = repo.join(".git/index");
        let (before, own) = times(&index);
        if before.iter().any(|&t| t < own) {
            // The second turned between a write and the index: nothing racy to test.
            return;
        }
        std::fs::write(repo.join("f2.txt"), "file 0002 and more\n").unwrap();
        assert_eq!(settle(&repo, &index).unwrap(), 4);
        let (after, own) = times(&index);
        for (i, t) in after.iter().enumerate() {
            if i == 2 {
                assert_eq!(*t, before[2], "the changed file's entry was re-dated");
            } else {
                assert!(*t < own, "entry {i} is still racily clean");
            }
        }
        assert_eq!(git(&repo, &["status", "--porcelain"]), " M f2.txt");
        assert_eq!(
            git(&repo, &["fsck", "--no-dangling", "--cache"]),
            "",
            "the rewritten index is one git reads"
        );
    }

    #[test]
    fn an_index_of_a_kind_this_does_not_read_is_left_alone() {
        let dir = repo_of(5);
        let repo = dir.path().join("repo");
        let index = repo.join(".git/index");
        git(&repo, &["update-index", "--index-version", "4"]);
        let bytes = std::fs::read(&index).unwrap();
        assert_eq!(settle(&repo, &index).unwrap(), 0);
        assert_eq!(std::fs::read(&index).unwrap(), bytes);
        git(&repo, &["update-index", "--index-version", "2"]);
        // A damaged checksum: not an index this trusts.
        let mut bytes = std::fs::read(&index).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&index, &bytes).unwrap();
        assert_eq!(settle(&repo, &index).unwrap(), 0);
        assert_eq!(std::fs::read(&index).unwrap(), bytes);
    }
}
