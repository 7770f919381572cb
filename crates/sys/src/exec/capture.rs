//! Runs a command whose output is read back (an agent's `run_command`): its own process group,
//! both pipes read as they fill, a timeout and a stop flag that hold whatever the command's
//! children do with those pipes.
//!
//! Reading a pipe to its end waits for every process holding its write end: a background
//! child (`sleep 300 &`) would keep the caller waiting long after the command and its timeout
//! ended. So the pipes are polled alongside the command: when the command exits its process
//! group is killed, and what is still open a short drain later is abandoned; on timeout or stop
//! the command gets SIGTERM and, after a grace period, its group SIGKILL. Output beyond a limit
//! is read and counted but not kept.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long output is still read after the command exited.
const DRAIN: Duration = Duration::from_millis(300);

/// How long a command has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// How often the loop wakes when nothing is written.
const TICK: i32 = 25;

/// What a captured command printed and how it ended.
#[derive(Debug)]
pub struct Captured {
    /// The exit status, `None` when the command could not be waited for after being killed.
    pub status: Option<ExitStatus>,
    /// The first bytes of stdout (up to the limit).
    pub stdout: Vec<u8>,
    /// The first bytes of stderr (up to the limit).
    pub stderr: Vec<u8>,
    /// Bytes read beyond the limit, both streams together.
    pub dropped: u64,
    pub timed_out: bool,
    /// Ended because the stop flag was set.
    pub stopped: bool,
}

/// One pipe being read.
struct Stream<R> {
    pipe: Option<R>,
    kept: Vec<u8>,
}

impl<R: Read + AsRawFd> Stream<R> {
    fn new(pipe: Option<R>) -> Self {
        if let Some(p) = &pipe {
            set_nonblocking(p.as_raw_fd());
        }
        Stream {
            pipe,
            kept: Vec::new(),
        }
    }

    /// Reads what is there; closes the stream at its end. Returns bytes dropped.
    fn read_available(&mut self, limit: usize) -> u64 {
        let mut dropped = 0;
        let mut buf = [0u8; 16 * 1024];
        while let Some(pipe) = self.pipe.as_mut() {
            match pipe.read(&mut buf) {
                Ok(0) => self.pipe = None,
                Ok(n) => {
                    let room = limit.saturating_sub(self.kept.len()).min(n);
                    self.kept.extend_from_slice(&buf[..room]);
                    dropped += (n - room) as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // WouldBlock: nothing more for now; anything else ends the stream.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => self.pipe = None,
            }
        }
        dropped
    }

    fn fd(&self) -> Option<i32> {
        self.pipe.as_ref().map(AsRawFd::as_raw_fd)
    }
}

/// Runs `cmd` in a new process group with stdin closed and stdout and stderr captured (at most
/// `limit` bytes of each kept), for at most `timeout` or until `stop` is set.
pub fn capture(
    cmd: &mut Command,
    timeout: Duration,
    stop: &AtomicBool,
    limit: usize,
) -> std::io::Result<Captured> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn()?;
    let pgid = child.id() as i32;
    let mut out = Stream::new(child.stdout.take());
    let mut err = Stream::new(child.stderr.take());
    let started = Instant::now();
    let mut captured = Captured {
        status: None,
        stdout: Vec::new(),
        stderr: Vec::new(),
        dropped: 0,
        timed_out: false,
        stopped: false,
    };
    let mut exited_at: Option<Instant> = None;
    let mut terminated_at: Option<Instant> = None;
    loop {
        poll(&[out.fd(), err.fd()]);
        captured.dropped += out.read_available(limit) + err.read_available(limit);
        if exited_at.is_none()
            && let Some(status) = child.try_wait()?
        {
            captured.status = Some(status);
            exited_at = Some(Instant::now());
            // Whatever the command left running in its group goes with it.
            super::process::kill_group(pgid, libc::SIGKILL);
        }
        match (exited_at, terminated_at) {
            (Some(at), _) => {
                if (out.fd().is_none() && err.fd().is_none()) || at.elapsed() >= DRAIN {
                    break;
                }
            }
            (None, None) => {
                let late = started.elapsed() >= timeout;
                if late || stop.load(Ordering::SeqCst) {
                    captured.timed_out = late;
                    captured.stopped = !late;
                    terminated_at = Some(Instant::now());
                    // The leader first (a supervising launcher then ends its whole tree),
                    // and the group.
                    // SAFETY: kill(2) on the process this function started.
                    unsafe { libc::kill(pgid, libc::SIGTERM) };
                    super::process::kill_group(pgid, libc::SIGTERM);
                }
            }
            (None, Some(at)) => {
                if at.elapsed() >= GRACE {
                    super::process::kill_group(pgid, libc::SIGKILL);
                    captured.status = child.wait().ok();
                    break;
                }
            }
        }
    }
    captured.stdout = out.kept;
    captured.stderr = err.kept;
    Ok(captured)
}

/// Waits until one of `fds` is readable (or closed), or one tick.
fn poll(fds: &[Option<i32>]) {
    let mut set: Vec<libc::pollfd> = fds
        .iter()
        .flatten()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    if set.is_empty() {
        std::thread::sleep(Duration::from_millis(TICK as u64));
        return;
    }
    // SAFETY: `set` is a valid array of pollfd for the duration of the call.
    unsafe { libc::poll(set.as_mut_ptr(), set.len() as libc::nfds_t, TICK) };
}

fn set_nonblocking(fd: i32) {
    // SAFETY: fcntl on a descriptor this process owns; only its status flags change.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn a_background_child_holding_the_pipes_does_not_hold_the_caller() {
        let stop = AtomicBool::new(false);
        let started = Instant::now();
        let got = capture(
            &mut sh("echo started; sleep 300 & exit 0"),
            Duration::from_secs(30),
            &stop,
            1024,
        )
        .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(got.status.and_then(|s| s.code()), Some(0));
        assert_eq!(got.stdout, b"started\n");
    }

    #[test]
    fn the_timeout_holds_and_output_past_the_limit_is_counted() {
        let stop = AtomicBool::new(false);
        let started = Instant::now();
        let got = capture(
            &mut sh("head -c 5000 /dev/zero; sleep 300"),
            Duration::from_millis(300),
            &stop,
            1000,
        )
        .unwrap();
        assert!(got.timed_out);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(got.stdout.len(), 1000);
        assert_eq!(got.dropped, 4000);
    }
}
