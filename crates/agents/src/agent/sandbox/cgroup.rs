//! `[sandbox] max_processes` for root: a pids cgroup the launcher creates and joins.
//!
//! `RLIMIT_NPROC` bounds a user's processes, but the kernel does not apply it to uid 0, so a
//! command run as root could fork without bound. Where a pids controller can be written — a
//! cgroup v1 `pids` hierarchy, or cgroup v2 with `pids` enabled for the launcher's cgroup's
//! children — the launcher, before it confines itself, creates a child cgroup
//! `orchestra-sandbox-<pid>` of its own with `pids.max` set, and moves itself into it: the
//! command and everything it starts inherit it, however they leave their session or group.
//!
//! The launcher cannot remove its cgroup when it ends (Landlock then denies writing the cgroup
//! file system, and a cgroup holding a process cannot be removed): every launch removes the
//! empty ones that launchers no longer running left beside it.

use std::path::{Path, PathBuf};

/// The prefix of the cgroups launchers create.
const PREFIX: &str = "orchestra-sandbox-";

/// Returns the directory under which this process can create a child cgroup that a
/// `pids.max` bounds, or `None` where no pids controller is writable here.
pub(super) fn pids_parent() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    // cgroup v1: a hierarchy with the pids controller.
    let v1 = own.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        controllers.split(',').any(|c| c == "pids").then_some(path)
    });
    if let Some(path) = v1 {
        let dir = mounted(&mountinfo, |fstype, opts| {
            fstype == "cgroup" && opts.split(',').any(|o| o == "pids")
        })
        .and_then(|(root, mount)| beneath(&mount, &root, path))?;
        return writable(&dir).then_some(dir);
    }
    // cgroup v2: the unified hierarchy, with pids enabled for the children of ours.
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = mounted(&mountinfo, |fstype, _| fstype == "cgroup2")
        .and_then(|(root, mount)| beneath(&mount, &root, path))?;
    let enabled = |dir: &Path| {
        std::fs::read_to_string(dir.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"))
    };
    if !enabled(&dir) {
        // Allowed only where the cgroup holds no process itself (or is the root).
        let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+pids");
    }
    (enabled(&dir) && writable(&dir)).then_some(dir)
}

/// Returns the root and mount point of the first mount of a file system `accepts` (by type and
/// super-block options) in `mountinfo`.
fn mounted(mountinfo: &str, accepts: impl Fn(&str, &str) -> bool) -> Option<(String, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (root, mount) = (*left.get(3)?, *left.get(4)?);
        let (fstype, opts) = (*right.first()?, *right.get(2)?);
        accepts(fstype, opts).then(|| (root.to_string(), PathBuf::from(mount)))
    })
}

/// Returns where the cgroup `path` lies under a mount at `mount` of the hierarchy's `root`.
fn beneath(mount: &Path, root: &str, path: &str) -> Option<PathBuf> {
    let rest = if root == "/" {
        path
    } else {
        path.strip_prefix(root)
            .filter(|r| r.is_empty() || r.starts_with('/'))?
    };
    Some(mount.join(rest.trim_start_matches('/')))
}

/// Returns true if and only if this process may create a cgroup in `dir`.
fn writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: access(2) only reads the NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Creates a cgroup under `parent` allowing `max` processes (this one included) and moves
/// this process into it; first removes the empty cgroups of launchers that are gone.
pub(super) fn join_bounded(parent: &Path, max: u64) -> std::io::Result<()> {
    sweep(parent);
    let pid = std::process::id();
    let dir = parent.join(format!("{PREFIX}{pid}"));
    match fs_err::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    fs_err::write(dir.join("pids.max"), max.to_string())?;
    // Moving a whole process takes the kernel's global lock of thread groups, whose first
    // taking waits for an RCU grace period (6 to 16 ms measured on a quiet virtual machine).
    // A cgroup v1 hierarchy also moves one thread — `0` written to `tasks` is the calling
    // one — without that lock: for a single-threaded process, that is the same move.
    let tasks = dir.join("tasks");
    if single_threaded() && tasks.exists() {
        return fs_err::write(tasks, "0");
    }
    fs_err::write(dir.join("cgroup.procs"), pid.to_string())
}

/// Returns true if and only if this process runs one thread.
fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|tasks| tasks.count() == 1)
}

/// Removes the cgroups under `parent` that launchers no longer running created; one that
/// still holds a process is not removed (the kernel refuses), and neither is a live
/// launcher's.
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroup_path_is_found_under_its_mount() {
        let info = "30 25 0:26 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
                    31 25 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        let (root, mount) = mounted(info, |t, o| t == "cgroup" && o.contains("pids")).unwrap();
        assert_eq!(mount, PathBuf::from("/sys/fs/cgroup/pids"));
        assert_eq!(
            beneath(&mount, &root, "/a/b"),
            Some(PathBuf::from("/sys/fs/cgroup/pids/a/b"))
        );
        let (_, unified) = mounted(info, |t, _| t == "cgroup2").unwrap();
        assert_eq!(unified, PathBuf::from("/sys/fs/cgroup/unified"));
        assert_eq!(
            beneath(Path::new("/m"), "/ns", "/ns/x"),
            Some(PathBuf::from("/m/x"))
        );
        assert_eq!(beneath(Path::new("/m"), "/ns", "/other"), None);
        assert_eq!(beneath(Path::new("/m"), "/ns", "/nsx"), None);
    }
}
