//! The launcher stays as the command's supervisor, so nothing the command starts outlives it.
//!
//! A command's children may leave its process group (`setsid`) or double-fork; killing the
//! group then misses them, and they keep running — holding the output pipes, writing in the
//! worktree — after the command, its timeout and the agent are gone. So the launcher makes
//! itself a child subreaper (`PR_SET_CHILD_SUBREAPER`: every orphaned descendant is re-parented
//! to it, whatever its session or group), runs the command in a session of its own (no
//! controlling terminal: nothing it writes reaches the user's through `/dev/tty`), and
//! when the command exits — or the engine sends SIGTERM at a timeout or stop — kills every
//! process re-parented to it, round after round, until it has no child left; then it exits the
//! way the command did. The command cannot kill its supervisor: its system call filter refuses
//! signals addressed to the launcher (see `seccomp::protect`).
//!
//! Resource limits are set here too, for the command and everything it starts: processes
//! beyond those the user already runs, data memory per process, file size, CPU time, no core
//! dumps.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{Limits, SandboxError};

/// How long the launcher keeps killing what its command left before it gives up.
const CLEANUP: Duration = Duration::from_secs(5);

/// Sets `limits` (and `cpu_secs` of CPU time per process) on this process, for everything it
/// starts; a limit is only ever lowered.
pub(super) fn set_limits(limits: &Limits, cpu_secs: Option<u64>) -> Result<(), SandboxError> {
    const MIB: u64 = 1024 * 1024;
    let memory = limits.memory_mb.map(|m| m * MIB).or_else(|| {
        // SAFETY: sysconf only reads system constants.
        let (pages, size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        (pages > 0 && size > 0).then(|| pages as u64 * size as u64 / 4 * 3)
    });
    let mut wanted = vec![
        (libc::RLIMIT_CORE, 0),
        (libc::RLIMIT_FSIZE, limits.file_mb.saturating_mul(MIB)),
        (
            libc::RLIMIT_NPROC,
            processes_of_user().saturating_add(limits.processes),
        ),
    ];
    wanted.extend(memory.map(|m| (libc::RLIMIT_DATA, m)));
    wanted.extend(cpu_secs.map(|s| (libc::RLIMIT_CPU, s)));
    for (resource, value) in wanted {
        let mut current = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit read and write one rlimit struct of this process.
        unsafe {
            if libc::getrlimit(resource, &mut current) != 0 {
                continue;
            }
            let new = libc::rlimit {
                rlim_cur: current.rlim_cur.min(value),
                rlim_max: current.rlim_max.min(value),
            };
            if libc::setrlimit(resource, &new) != 0 {
                return Err(SandboxError::Privileges(format!(
                    "cannot set a resource limit: {}",
                    std::io::Error::last_os_error()
                )));
            }
        }
    }
    Ok(())
}

/// Returns how many processes this process's user runs now, as `RLIMIT_NPROC` counts them;
/// 0 for root of the initial user namespace, whom the kernel never holds to that limit (the
/// pids cgroup bounds its commands, see `cgroup`).
///
/// A process's `/proc` directory belongs to its effective user (to root while it is not
/// dumpable): its owner, one `fstatat` per process, is read instead of every process's
/// `status` (a tenth of the time, which grows with the processes the machine runs). The few
/// undumpable processes of the user go uncounted: the command then gets that many fewer.
fn processes_of_user() -> u64 {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    if uid == 0 && root_is_exempt() {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .as_encoded_bytes()
                .iter()
                .all(u8::is_ascii_digit)
        })
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .count() as u64
}

/// Returns true if and only if uid 0 here is root of the initial user namespace (mapped to
/// itself), the user the kernel exempts from `RLIMIT_NPROC`.
fn root_is_exempt() -> bool {
    std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|map| maps_root_to_itself(&map))
}

/// Returns true if and only if `uid_map` (as `/proc/<pid>/uid_map` reads) maps uid 0 to uid 0.
fn maps_root_to_itself(uid_map: &str) -> bool {
    uid_map.lines().any(|l| {
        let mut f = l.split_whitespace();
        (f.next(), f.next()) == (Some("0"), Some("0"))
    })
}

/// Runs `cmd` as the supervised command and exits as it did; returns only when it could not be
/// started. `protect` is the filter the command installs on itself before it executes.
pub(super) fn run(mut cmd: Command, protect: Vec<libc::sock_filter>) -> SandboxError {
    let program = format!("{:?}", cmd.get_program());
    // SAFETY: plain prctl/sigprocmask calls on this (single-threaded) process; `set` and `old`
    // are valid signal sets for the duration of the calls.
    let old = unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        let set = signals();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
        old
    };
    // SAFETY: the closure runs in the forked child before exec; it only restores the signal
    // mask, starts a session and installs a filter, all async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(move || {
            libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            // A session of its own (and so a process group): without a controlling terminal,
            // `/dev/tty` fails to open and no escape sequence reaches the user's terminal.
            if libc::setsid() < 0 {
                libc::setpgid(0, 0);
            }
            let prog = libc::sock_fprog {
                len: protect.len() as u16,
                filter: protect.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                2,
                &prog as *const libc::sock_fprog,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(child) => child,
        // The program exists but may not be executed: under the sandbox, that is (almost
        // always) the ruleset, which the user can widen — say so rather than "Permission denied".
        Err(source)
            if source.kind() == std::io::ErrorKind::PermissionDenied
                && Path::new(cmd.get_program()).is_absolute()
                && Path::new(cmd.get_program()).exists() =>
        {
            return SandboxError::Denied {
                program: Path::new(cmd.get_program()).to_path_buf(),
            };
        }
        Err(source) => return SandboxError::Exec { program, source },
    };
    let main = child.id() as libc::pid_t;
    // The engine may have gone between spawning us and now: then nothing supervises.
    // SAFETY: getppid cannot fail.
    let orphaned = unsafe { libc::getppid() } == 1;
    let (status, signal) = if orphaned {
        (None, Some(libc::SIGTERM))
    } else {
        wait_for(main)
    };
    kill_descendants();
    exit_as(status, signal)
}

/// Returns SIGTERM, SIGINT, SIGHUP and SIGCHLD as a set.
fn signals() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a set this function owns.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGCHLD] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Waits until `main` exits (reaping orphans meanwhile) or a terminating signal arrives;
/// returns the command's wait status and the signal, whichever came.
fn wait_for(main: libc::pid_t) -> (Option<libc::c_int>, Option<libc::c_int>) {
    let set = signals();
    loop {
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status of a child of this process.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid == main {
                return (Some(status), None);
            }
            if pid <= 0 {
                break;
            }
        }
        let timeout = libc::timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        // SAFETY: the set is blocked in this process, so sigtimedwait takes it from the queue.
        let signal = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &timeout) };
        if matches!(signal, libc::SIGTERM | libc::SIGINT | libc::SIGHUP) {
            return (None, Some(signal));
        }
    }
}

/// Kills every child of this process, and the children re-parented to it as their parents
/// die, until none is left (or [`CLEANUP`] has passed).
fn kill_descendants() {
    if !has_children() {
        return;
    }
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let deadline = Instant::now() + CLEANUP;
    loop {
        let children = children_of(me);
        for &pid in &children {
            // SAFETY: kill(2) on a child of this process.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let mut none_left = false;
        loop {
            // SAFETY: waitpid with no status pointer reaps a child of this process.
            let pid = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
            if pid == -1 {
                none_left = true;
                break;
            }
            if pid == 0 {
                break;
            }
        }
        if (none_left && children.is_empty()) || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reaps the children that have ended; returns false when none is left. A subreaper without
/// children has no descendant either (each orphan becomes its child), so then nothing needs
/// looking for in `/proc`.
fn has_children() -> bool {
    loop {
        // SAFETY: waitpid with no status pointer reaps a child of this process.
        let pid = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
        if pid == 0 {
            return true;
        }
        if pid < 0 {
            return std::io::Error::last_os_error().raw_os_error() != Some(libc::ECHILD);
        }
    }
}

/// Returns the processes whose parent is `parent`, from `/proc`.
fn children_of(parent: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rfind(')')
                    .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
                    .and_then(|p| p.parse::<libc::pid_t>().ok())
                    == Some(parent)
            })
        })
        .collect()
}

/// Ends this process the way the command ended: its exit code, or its signal.
fn exit_as(status: Option<libc::c_int>, signal: Option<libc::c_int>) -> ! {
    let signal = match status {
        Some(s) if libc::WIFEXITED(s) => std::process::exit(libc::WEXITSTATUS(s)),
        Some(s) if libc::WIFSIGNALED(s) => libc::WTERMSIG(s),
        _ => signal.unwrap_or(libc::SIGKILL),
    };
    // SAFETY: restores the default action of `signal`, unblocks it and sends it to this
    // process; if it does not end the process, exit follows.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
    }
    std::process::exit(128 + signal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_root_mapped_to_itself_is_exempt_from_the_process_limit() {
        assert!(maps_root_to_itself("         0          0 4294967295\n"));
        // Root of a container's user namespace is another user to the kernel.
        assert!(!maps_root_to_itself("         0     100000      65536\n"));
        assert!(!maps_root_to_itself("      1000       1000          1\n"));
        assert!(!maps_root_to_itself(""));
    }
}
