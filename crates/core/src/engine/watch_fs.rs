//! Notices writes into the worktrees of packets that are not running, with inotify: a
//! packet's worktree is watched (every directory in it) from the end of its pipeline until
//! its next start, and each write there is recorded with a sequence number, so the engine
//! can ask which idle worktrees changed while one worker ran at the cost of reading a few
//! events, whatever the number of worktrees.

use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Most writes kept per packet (the newest; a finding names them).
const MAX_CHANGES: usize = 16;

/// The watches on idle packets' worktrees and the writes they saw.
pub(crate) struct IdleWatch {
    fd: OwnedFd,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Watch descriptor → packet and directory.
    dirs: HashMap<i32, (String, PathBuf)>,
    /// Packet → its watch descriptors.
    by_packet: HashMap<String, Vec<i32>>,
    /// Packet → the newest writes seen there, with their sequence numbers.
    changes: HashMap<String, VecDeque<(u64, PathBuf)>>,
    seq: u64,
    /// The sequence number of the newest overflow of the kernel's event queue (writes lost).
    overflow: u64,
}

/// The events that name a directory's entries being created, written, moved or deleted, or the
/// directory itself going away; a directory only, its symlink not followed.
const DIR_CHANGES: u32 = libc::IN_CLOSE_WRITE
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW;

/// Returns a new non-blocking inotify descriptor, or `None` where inotify is unavailable.
fn inotify() -> Option<OwnedFd> {
    // SAFETY: inotify_init1 has no preconditions; a non-negative result is a descriptor
    // this process owns.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    // SAFETY: `fd` was just returned by inotify_init1 and is owned by nobody else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds a watch on `dir` for the events `mask` to `fd`; returns its descriptor.
fn add_watch(fd: &OwnedFd, dir: &Path, mask: u32) -> Option<i32> {
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: a valid descriptor and a NUL-terminated path.
    let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), mask) };
    (wd >= 0).then_some(wd)
}

impl IdleWatch {
    /// Returns a watcher, or `None` where inotify is unavailable.
    pub(crate) fn new() -> Option<IdleWatch> {
        Some(IdleWatch {
            fd: inotify()?,
            state: Mutex::new(State::default()),
        })
    }

    /// Starts watching every directory of `worktree`, the worktree of the idle `packet`;
    /// returns false when not every directory could be watched (the watch limit).
    pub(crate) fn watch(&self, packet: &str, worktree: &Path) -> bool {
        self.unwatch(packet);
        let mut state = self.lock();
        let mut complete = true;
        let mut stack = vec![worktree.to_path_buf()];
        let mask = DIR_CHANGES | libc::IN_MODIFY | libc::IN_ATTRIB;
        while let Some(dir) = stack.pop() {
            let Some(wd) = add_watch(&self.fd, &dir, mask) else {
                complete = false;
                continue;
            };
            state.dirs.insert(wd, (packet.to_string(), dir.clone()));
            state
                .by_packet
                .entry(packet.to_string())
                .or_default()
                .push(wd);
            if let Ok(entries) = std::fs::read_dir(&dir) {
                for entry in entries.flatten() {
                    if entry.file_type().is_ok_and(|t| t.is_dir()) {
                        stack.push(entry.path());
                    }
                }
            }
        }
        complete
    }

    /// Stops watching the worktree of `packet` (its pipeline is about to write there).
    pub(crate) fn unwatch(&self, packet: &str) {
        self.drain();
        let mut state = self.lock();
        for wd in state.by_packet.remove(packet).unwrap_or_default() {
            state.dirs.remove(&wd);
            // SAFETY: removing a watch this descriptor added; a stale one fails harmlessly.
            unsafe {
                libc::inotify_rm_watch(self.fd.as_raw_fd(), wd);
            }
        }
    }

    /// Returns the sequence number of the newest write seen so far.
    pub(crate) fn mark(&self) -> u64 {
        self.drain();
        self.lock().seq
    }

    /// Returns the writes seen after `mark` into worktrees of packets other than `except`,
    /// as `(packet, path)`; `None` when writes went unrecorded since (the kernel's queue
    /// overflowed), so that any could have been made.
    pub(crate) fn changes_since(&self, mark: u64, except: &str) -> Option<Vec<(String, PathBuf)>> {
        self.drain();
        let state = self.lock();
        if state.overflow > mark {
            return None;
        }
        let mut found: Vec<(String, PathBuf)> = Vec::new();
        for (packet, writes) in &state.changes {
            if packet == except {
                continue;
            }
            for (seq, path) in writes {
                if *seq > mark && !found.iter().any(|(p, f)| p == packet && f == path) {
                    found.push((packet.clone(), path.clone()));
                }
            }
        }
        found.sort();
        Some(found)
    }

    /// Reads every pending event into the list of writes.
    fn drain(&self) {
        let mut state = self.lock();
        read_events(&self.fd, |wd, mask, name| {
            if mask & libc::IN_IGNORED != 0 {
                return;
            }
            if mask & libc::IN_Q_OVERFLOW != 0 {
                state.seq += 1;
                state.overflow = state.seq;
                return;
            }
            let Some((packet, dir)) = state.dirs.get(&wd).cloned() else {
                return;
            };
            let path = if name.is_empty() {
                dir
            } else {
                dir.join(std::ffi::OsStr::from_bytes(name))
            };
            state.seq += 1;
            let seq = state.seq;
            let writes = state.changes.entry(packet).or_default();
            if writes.len() == MAX_CHANGES {
                writes.pop_front();
            }
            writes.push_back((seq, path));
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Reads every pending event of the inotify descriptor `fd`, calling `each` with its watch
/// descriptor, mask and name (empty for the watched directory itself).
fn read_events(fd: &OwnedFd, mut each: impl FnMut(i32, u32, &[u8])) {
    let mut buf = [0u8; 8192];
    loop {
        // SAFETY: reading into a buffer of the length given.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast::<libc::c_void>(),
                buf.len(),
            )
        };
        if n <= 0 {
            return;
        }
        let mut at = 0usize;
        let header = std::mem::size_of::<libc::inotify_event>();
        while at + header <= n as usize {
            // SAFETY: the kernel wrote a whole event header at `at`; read it unaligned.
            let event: libc::inotify_event = unsafe {
                std::ptr::read_unaligned(buf.as_ptr().add(at).cast::<libc::inotify_event>())
            };
            let name_len = event.len as usize;
            let name = &buf[at + header..(at + header + name_len).min(n as usize)];
            let name = name.split(|b| *b == 0).next().unwrap_or_default();
            at += header + name_len;
            each(event.wd, event.mask, name);
        }
    }
}

/// Notices which of a run's packet branches change, with inotify on the one directory that
/// holds them as loose refs (and on the common git directory, for `packed-refs`): the watch
/// around a worker then reads the few branches named in events instead of every packet's.
pub(crate) struct RefWatch {
    fd: OwnedFd,
    /// The watch on the branches' directory and the one on the common git directory.
    branches_wd: i32,
    common_wd: i32,
    state: Mutex<RefState>,
}

#[derive(Default)]
struct RefState {
    seq: u64,
    /// Branch file name → the sequence number of its newest change.
    touched: HashMap<String, u64>,
    /// The sequence number of the newest change to `packed-refs`.
    packed: u64,
    /// Events were lost (the queue overflowed, or a watched directory went away): from then
    /// on every branch has to be read.
    lost: bool,
}

/// Which branches changed between two marks of a [`RefWatch`].
pub(crate) enum Touched {
    /// These branch file names (and no others, `packed-refs` unchanged).
    Names(Vec<String>),
    /// Any could have: read them all.
    Unknown,
}

impl RefWatch {
    /// Watches `branches`, the directory of a run's loose packet branches (created when
    /// missing), and `common`, the common git directory; `None` where inotify is unavailable
    /// or the repository keeps its refs otherwise (reftable).
    pub(crate) fn new(common: &Path, branches: &Path) -> Option<RefWatch> {
        if common.join("reftable").exists() || std::fs::create_dir_all(branches).is_err() {
            return None;
        }
        let fd = inotify()?;
        let branches_wd = add_watch(&fd, branches, DIR_CHANGES)?;
        let common_wd = add_watch(&fd, common, DIR_CHANGES)?;
        Some(RefWatch {
            fd,
            branches_wd,
            common_wd,
            state: Mutex::new(RefState::default()),
        })
    }

    /// Stops watching: from now on every branch has to be read. The watches are removed now
    /// (the kernel frees them in the background) and the descriptor kept: closing one that
    /// still holds watches waits for the kernel to free them (an RCU grace period, up to 16
    /// ms measured on a quiet machine), and so does the process a concurrent spawn started
    /// before it inherited the descriptor (its `exec` closes the copy), which holds up the
    /// thread that spawned it.
    pub(crate) fn retire(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).lost = true;
        for wd in [self.branches_wd, self.common_wd] {
            // SAFETY: removing a watch this descriptor added; removing it again (a watch
            // descriptor is never reused) fails harmlessly.
            unsafe {
                libc::inotify_rm_watch(self.fd.as_raw_fd(), wd);
            }
        }
    }

    /// Returns the sequence number of the newest change seen so far.
    pub(crate) fn mark(&self) -> u64 {
        self.drain().seq
    }

    /// Returns how many watches the descriptor holds, as the kernel lists them.
    #[cfg(test)]
    pub(crate) fn watches(&self) -> usize {
        let info = format!("/proc/self/fdinfo/{}", self.fd.as_raw_fd());
        std::fs::read_to_string(info)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("inotify wd:"))
            .count()
    }

    /// Returns the branches that changed after `mark`.
    pub(crate) fn touched_since(&self, mark: u64) -> Touched {
        let state = self.drain();
        if state.lost || state.packed > mark {
            return Touched::Unknown;
        }
        let mut names: Vec<String> = state
            .touched
            .iter()
            .filter(|(_, seq)| **seq > mark)
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        Touched::Names(names)
    }

    /// Reads every pending event; returns the state, locked.
    fn drain(&self) -> std::sync::MutexGuard<'_, RefState> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        read_events(&self.fd, |wd, mask, name| {
            let gone =
                libc::IN_Q_OVERFLOW | libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED;
            state.seq += 1;
            let seq = state.seq;
            if mask & gone != 0 {
                state.lost = true;
            } else if wd == self.common_wd {
                if name == b"packed-refs" {
                    state.packed = seq;
                }
            } else if wd == self.branches_wd && !name.is_empty() {
                let name = String::from_utf8_lossy(name);
                let name = name.strip_suffix(".lock").unwrap_or(&name).to_string();
                state.touched.insert(name, seq);
            }
        });
        state
    }
}
