//! An exclusive lock per run, so two processes never drive the same run at once.
//!
//! It is an advisory `flock` on a file in the run's state directory: the kernel drops it when
//! the holder dies, kill -9 included, so a crash never leaves a stale lock behind.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "run `{run}` is being driven by another git-orchestra process; wait for it, or stop it with Ctrl-C or `git orchestra cancel {run}`"
    )]
    Busy { run: String },
    #[error("cannot open lock file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// How long a held lock is tried again before the run counts as driven by another process.
const BUSY_GRACE: std::time::Duration = std::time::Duration::from_millis(750);

/// A held run lock; released on drop.
pub struct RunLock {
    _file: File,
}

impl RunLock {
    /// Takes the lock of `run` whose state lives in `dir`, failing if it stays held for
    /// [`BUSY_GRACE`].
    pub fn acquire(dir: &Path, run: &str) -> Result<RunLock, LockError> {
        fs_err::create_dir_all(dir).map_err(|source| LockError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join("lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| LockError::Io {
                path: path.clone(),
                source,
            })?;
        // A lock just released can read as held for a moment (a child forked by a process that
        // died keeps the descriptor until its exec): try again briefly before calling it busy.
        let until = std::time::Instant::now() + BUSY_GRACE;
        loop {
            // SAFETY: flock on a descriptor we own; no memory is shared with the kernel.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc == 0 {
                return Ok(RunLock { _file: file });
            }
            if std::time::Instant::now() >= until {
                return Err(LockError::Busy {
                    run: run.to_string(),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Returns true if and only if some process holds the lock of the run in `dir`.
    ///
    /// A lock just released can still read as held for a moment: a child being spawned by
    /// another thread shares the descriptor between `fork` and `exec` (it is close-on-exec).
    pub fn is_held(dir: &Path) -> bool {
        let Ok(file) = File::open(dir.join("lock")) else {
            return false;
        };
        // SAFETY: as above; a shared, non-blocking probe that is released immediately.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
        rc != 0
    }
}

/// Returns true if and only if a process with id `pid` exists (a zombie included).
///
/// A run's lock can read as held for a moment after its process died (a child it was forking
/// still holds a copy of the descriptor until its `exec`); the process the store names as the
/// run's driver settles whether anything still drives it.
pub fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists and may be signalled; nothing is
    // delivered.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_until_release() {
        let dir = tempfile::tempdir().unwrap();
        let lock = RunLock::acquire(dir.path(), "r").unwrap();
        assert!(RunLock::is_held(dir.path()));
        assert!(matches!(
            RunLock::acquire(dir.path(), "r"),
            Err(LockError::Busy { .. })
        ));
        drop(lock);
        // Other tests spawn processes from their threads; a child between fork and exec holds a
        // copy of every descriptor for a moment, so the release is awaited, not assumed instant.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while RunLock::is_held(dir.path()) {
            assert!(
                std::time::Instant::now() < deadline,
                "the lock stayed held after release"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // The probe's own shared lock can linger in such a child too.
        while let Err(err) = RunLock::acquire(dir.path(), "r") {
            assert!(std::time::Instant::now() < deadline, "{err}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
