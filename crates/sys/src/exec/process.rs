//! Runs one shell command for a packet: its own process group, output to a log file, a
//! timeout, and a prompt stop when the run is interrupted.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How many bytes of a command's output are kept in events and shown in reasons.
pub const TAIL_BYTES: u64 = 2_000;

/// Grace period between SIGTERM and SIGKILL when a command is stopped.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// How often a running command checks the stop flag and its timeout; its exit itself is
/// noticed immediately.
const STOP_CHECK: Duration = Duration::from_millis(25);

/// Confines a command: given the directory it runs in and its timeout, returns the program and
/// arguments that run what follows them (`sh -c <command>`) under the confinement — a sandbox
/// launcher and its options.
pub type Confine = dyn Fn(&Path, Duration) -> Vec<std::ffi::OsString> + Send + Sync;

/// The confinements of the commands run on behalf of a plan or a model rather than by our
/// agents' tools: external worker commands, setup commands and validation commands (a
/// packet's, the merged tree's, `review --validate`'s). `None` runs that kind as the user.
///
/// Every such command starts through [`run`] with one of these as its [`Spec::confine`].
#[derive(Clone, Default)]
pub struct Sandboxes {
    pub worker: Option<std::sync::Arc<Confine>>,
    pub setup: Option<std::sync::Arc<Confine>>,
    pub validation: Option<std::sync::Arc<Confine>>,
    /// Whether the kernel refuses a confined worker every write outside its worktree, its
    /// temporary directory and caches apart from the main checkout: Landlock enforces every
    /// file-system right the sandbox asks for. The engine then need not read the main
    /// checkout's status around the worker to find its writes there.
    pub worker_contained: bool,
}

impl std::fmt::Debug for Sandboxes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandboxes")
            .field("worker", &self.worker.is_some())
            .field("setup", &self.setup.is_some())
            .field("validation", &self.validation.is_some())
            .field("worker_contained", &self.worker_contained)
            .finish()
    }
}

/// What to run and where.
pub struct Spec<'a> {
    /// The shell command line, run with `sh -c`.
    pub command: &'a str,
    /// Working directory.
    pub dir: &'a Path,
    /// Variables set for the command on top of the allow-listed part of the engine's
    /// environment (see `command_env`).
    pub env: &'a [(String, String)],
    /// Where stdout and stderr go (both, interleaved).
    pub log: &'a Path,
    /// Longest the command may run.
    pub timeout: Duration,
    /// The confinement the command runs under; `None` runs it as this process's user.
    pub confine: Option<&'a Confine>,
}

/// How a command ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The exit code, `None` when killed by a signal (including our own timeout or stop).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Stopped because the run was interrupted.
    pub interrupted: bool,
    pub duration: Duration,
    /// The last [`TAIL_BYTES`] of the log, lossily decoded.
    pub tail: String,
    /// The path a confined command most likely failed for because the sandbox denied it
    /// (see [`crate::exec::denied`]); `None` for a success or an unconfined command.
    pub denied: Option<PathBuf>,
}

impl Outcome {
    /// Returns true if and only if the command exited 0 on its own.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.interrupted
    }

    /// Returns a one-line description of a failure, e.g. "exit 3" or "timed out after 60s",
    /// with the likely cause and its remedy when the sandbox denied the command a path.
    pub fn describe(&self, timeout: Duration) -> String {
        let what = self.what_ended(timeout);
        match &self.denied {
            Some(path) => format!("{what}; {}", crate::exec::denied::hint(path)),
            None => what,
        }
    }

    /// Returns how the command ended, in a few words.
    fn what_ended(&self, timeout: Duration) -> String {
        if self.timed_out {
            format!("timed out after {}s", timeout.as_secs())
        } else if self.interrupted {
            "interrupted".to_string()
        } else {
            match self.exit_code {
                Some(code) => format!("exit {code}"),
                None => "killed by a signal".to_string(),
            }
        }
    }
}

/// Why a command could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot open log file {path}: {source}")]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start `{command}` in {dir}: {source}")]
    Spawn {
        command: String,
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("lost track of `{command}`: {source}")]
    Wait {
        command: String,
        source: std::io::Error,
    },
}

/// Runs `spec`, calling `on_spawn` with the process group id once the child exists, and
/// returns how it ended. `stop` is polled; when it turns true the whole group is stopped.
pub fn run(
    spec: &Spec<'_>,
    stop: &AtomicBool,
    on_spawn: &mut dyn FnMut(i32),
) -> Result<Outcome, ProcessError> {
    let started = Instant::now();
    let timeout = spec.timeout;
    run_watched(spec, stop, on_spawn, &mut || started.elapsed() >= timeout)
}

/// Runs `spec` like [`run`], but the command is timed out when `expired` (asked every
/// [`STOP_CHECK`] while it runs) says so instead of after `spec.timeout`: a batch of commands
/// times each of its commands on its own.
pub(crate) fn run_watched(
    spec: &Spec<'_>,
    stop: &AtomicBool,
    on_spawn: &mut dyn FnMut(i32),
    expired: &mut dyn FnMut() -> bool,
) -> Result<Outcome, ProcessError> {
    if let Some(parent) = spec.log.parent() {
        fs_err::create_dir_all(parent).map_err(|source| ProcessError::Log {
            path: spec.log.to_path_buf(),
            source,
        })?;
    }
    let log = File::create(spec.log).map_err(|source| ProcessError::Log {
        path: spec.log.to_path_buf(),
        source,
    })?;
    let log_err = log.try_clone().map_err(|source| ProcessError::Log {
        path: spec.log.to_path_buf(),
        source,
    })?;
    let prefix = spec.confine.map(|c| c(spec.dir, spec.timeout));
    let mut cmd = match prefix.as_deref() {
        Some([program, args @ ..]) => {
            let mut c = Command::new(program);
            c.args(args).arg("sh");
            c
        }
        _ => Command::new("sh"),
    };
    cmd.arg("-c")
        .arg(spec.command)
        .current_dir(spec.dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    // Only the allow-listed part of the engine's environment reaches a command (no
    // third-party tokens, no agent socket), and keys the engine holds never do unless its
    // spec hands them over.
    crate::exec::command_env::scrub(&mut cmd);
    for (k, v) in spec.env {
        cmd.env(k, v);
    }
    // SAFETY: setsid and prctl are async-signal-safe. The command gets a session (and so a
    // process group) of its own, without the user's terminal: `/dev/tty` fails to open, so
    // what it writes there never reaches the screen as raw escape sequences. PDEATHSIG asks
    // the kernel to kill the shell if this process dies (kill -9 included), so a crashed run
    // leaves no worker writing behind its back.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                libc::setpgid(0, 0);
            }
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|source| ProcessError::Spawn {
        command: spec.command.to_string(),
        dir: spec.dir.to_path_buf(),
        source,
    })?;
    let pgid = child.id() as i32;
    on_spawn(pgid);
    let mut timed_out = false;
    let mut interrupted = false;
    // A helper thread blocks in wait(2) and reports the exit at once, so the next packet of a
    // dependency chain starts the moment this one ends instead of at the next poll; this
    // thread only wakes every STOP_CHECK to honour a stop or the timeout.
    let (exited_tx, exited) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = exited_tx.send(child.wait());
    });
    let status = loop {
        match exited.recv_timeout(STOP_CHECK) {
            Ok(Ok(status)) => break status,
            Ok(Err(source)) => {
                return Err(ProcessError::Wait {
                    command: spec.command.to_string(),
                    source,
                });
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(ProcessError::Wait {
                    command: spec.command.to_string(),
                    source: std::io::Error::other("the thread waiting for the command ended"),
                });
            }
        }
        if !timed_out && !interrupted {
            if stop.load(Ordering::SeqCst) {
                interrupted = true;
                terminate_group(pgid);
            } else if expired() {
                timed_out = true;
                terminate_group(pgid);
            }
        }
    };
    // The shell is gone; make sure nothing it started lingers in its group.
    kill_group(pgid, libc::SIGKILL);
    let tail = read_tail(spec.log);
    let failed = !matches!(status.code(), Some(0) | None) && !timed_out && !interrupted;
    let denied = (failed && spec.confine.is_some())
        .then(|| crate::exec::denied::denied_path(&tail, spec.dir))
        .flatten();
    Ok(Outcome {
        exit_code: status.code(),
        timed_out,
        interrupted,
        duration: started.elapsed(),
        tail,
        denied,
    })
}

/// Sends SIGTERM to the group, then SIGKILL after a grace period on a helper thread.
fn terminate_group(pgid: i32) {
    kill_group(pgid, libc::SIGTERM);
    std::thread::spawn(move || {
        std::thread::sleep(KILL_GRACE);
        kill_group(pgid, libc::SIGKILL);
    });
}

/// Sends `signal` to every process in group `pgid`; a group that is gone is not an error.
pub fn kill_group(pgid: i32, signal: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid addresses a process group; no memory is involved.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

/// Returns true if and only if a live process of group `pgid` carries `ORCHESTRA_RUN=run` and
/// `ORCHESTRA_PACKET=packet` in its environment: a group id recorded by a dead run may since
/// have been reused by an unrelated program, which must not be killed.
pub fn group_belongs_to(pgid: i32, run: &str, packet: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    let (want_run, want_packet) = (
        format!("ORCHESTRA_RUN={run}"),
        format!("ORCHESTRA_PACKET={packet}"),
    );
    entries.flatten().any(|e| {
        let pid = e.file_name();
        let Some(pid) = pid
            .to_str()
            .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        else {
            return false;
        };
        process_group(pid) == Some(pgid)
            && std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
                vars.contains(&want_run.as_bytes()) && vars.contains(&want_packet.as_bytes())
            })
    })
}

/// Returns the process groups of every live process carrying `ORCHESTRA_RUN=run` and an
/// `ORCHESTRA_WORKTREE` beneath one of `roots` in its environment — the run's workers and
/// commands and whatever they started — apart from the caller's own group.
///
/// A process killed between spawning a worker and journaling its group leaves that group
/// unrecorded; this finds it anyway. The worktree roots tell this repository's run from a run
/// of the same id in another repository (run ids derive from the plan and its base).
pub fn groups_of_run(run: &str, roots: &[std::path::PathBuf]) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let want = format!("ORCHESTRA_RUN={run}");
    let ours = |vars: &[&[u8]]| {
        vars.contains(&want.as_bytes())
            && vars.iter().any(|v| {
                v.strip_prefix(b"ORCHESTRA_WORKTREE=".as_slice())
                    .and_then(|w| std::str::from_utf8(w).ok())
                    .is_some_and(|w| roots.iter().any(|r| Path::new(w).starts_with(r)))
            })
    };
    // SAFETY: getpgrp(2) has no arguments and cannot fail.
    let own = unsafe { libc::getpgrp() };
    let mut groups: Vec<i32> = entries
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name();
            let pid = pid
                .to_str()
                .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))?
                .to_string();
            let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
            ours(&vars).then(|| process_group(&pid)).flatten()
        })
        .filter(|g| *g > 1 && *g != own)
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

/// Returns the process group of process `pid`, from `/proc/<pid>/stat`.
fn process_group(pid: &str) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields resume after the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// What replaces a key in a kept tail.
const KEY_PLACEHOLDER: &str = "<redacted>";

/// Returns the last [`TAIL_BYTES`] of the file, lossily decoded, with every key the engine
/// knows of ([`crate::exec::secret_env::values`]) replaced, or an empty string. The keys are
/// replaced before the cut, so one straddling it leaves none of its characters behind.
pub fn read_tail(path: &Path) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    // Room for a key that straddles the cut.
    let start = len.saturating_sub(TAIL_BYTES + 1024);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    let _ = file.read_to_end(&mut buf);
    let keys = crate::exec::secret_env::values();
    // (What `redact::scrub` does; this module stays a leaf.)
    let text = keys.iter().filter(|k| k.len() >= 4).fold(
        String::from_utf8_lossy(&buf).trim_end().to_string(),
        |t, k| t.replace(k.as_str(), KEY_PLACEHOLDER),
    );
    let mut cut = text.len().saturating_sub(TAIL_BYTES as usize);
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    if start > 0 || cut > 0 {
        format!("…{}", &text[cut..])
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(cmd: &'a str, dir: &'a Path, log: &'a Path, timeout: Duration) -> Spec<'a> {
        Spec {
            command: cmd,
            dir,
            env: &[],
            log,
            timeout,
            confine: None,
        }
    }

    #[test]
    fn captures_exit_code_and_output() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs/out.log");
        let stop = AtomicBool::new(false);
        let env = [("GREETING".to_string(), "hello".to_string())];
        let mut s = spec(
            "echo $GREETING; echo err >&2; exit 3",
            dir.path(),
            &log,
            Duration::from_secs(10),
        );
        s.env = &env;
        let mut pgid = 0;
        let out = run(&s, &stop, &mut |g| pgid = g).unwrap();
        assert_eq!(out.exit_code, Some(3));
        assert!(!out.success());
        assert!(pgid > 0);
        assert_eq!(out.tail, "hello\nerr");
        assert_eq!(out.describe(Duration::from_secs(1)), "exit 3");
    }

    #[test]
    fn times_out_and_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("out.log");
        let marker = dir.path().join("late");
        let cmd = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let stop = AtomicBool::new(false);
        let out = run(
            &spec(&cmd, dir.path(), &log, Duration::from_millis(200)),
            &stop,
            &mut |_| {},
        )
        .unwrap();
        assert!(out.timed_out);
        assert!(out.duration < Duration::from_secs(5), "{:?}", out.duration);
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            !marker.exists(),
            "a background child of the timed-out command survived"
        );
    }

    #[test]
    fn stops_when_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("out.log");
        let stop = AtomicBool::new(true);
        let out = run(
            &spec("sleep 30", dir.path(), &log, Duration::from_secs(60)),
            &stop,
            &mut |_| {},
        )
        .unwrap();
        assert!(out.interrupted && !out.success());
        assert!(out.duration < Duration::from_secs(5));
    }

    #[test]
    fn tail_keeps_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.log");
        std::fs::write(&p, format!("{}END", "x".repeat(10_000))).unwrap();
        let tail = read_tail(&p);
        assert!(tail.starts_with('…') && tail.ends_with("END"));
        assert!(tail.len() <= TAIL_BYTES as usize + 4);
    }

    #[test]
    fn a_group_is_ours_only_with_the_run_and_packet_in_its_environment() {
        let mut child = Command::new("sleep")
            .arg("5")
            .env("ORCHESTRA_RUN", "r1")
            .env("ORCHESTRA_PACKET", "p1")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id() as i32;
        // `spawn` returns once the child has begun its exec, which is a moment before the
        // kernel shows the new environment in /proc: wait for it rather than assume it.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !group_belongs_to(pgid, "r1", "p1") {
            assert!(
                std::time::Instant::now() < deadline,
                "the child's environment never showed the run and packet"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!group_belongs_to(pgid, "r1", "p2"));
        assert!(!group_belongs_to(pgid, "r2", "p1"));
        // Our own group carries no such variables.
        let own = unsafe { libc::getpgrp() };
        assert!(!group_belongs_to(own, "r1", "p1"));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!group_belongs_to(pgid, "r1", "p1"));
    }
}
