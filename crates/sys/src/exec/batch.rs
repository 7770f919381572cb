//! Runs a list of shell commands one after another in one process — one sandbox launch for
//! the whole list — and reports each command's exit, time and output as if it had run alone.
//!
//! Starting a confined process costs far more than most validation commands it runs, and a
//! merge validates every batch of packets with the commands of all of them: one launch per
//! command made that cost grow with the commands. Here one shell runs them in sequence, each
//! still in a `sh -c` of its own (an `exit` in one ends only that one), and after each prints
//! a marker line naming the command and its exit status, prefixed with a token the commands
//! cannot guess. The engine watches the shared log for the markers while the shell runs, so
//! each command keeps its own timeout and a stop ends the one that is running; afterwards the
//! log is cut at the markers into one log per command.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::process::{Confine, Outcome, ProcessError, Spec, read_tail, run_watched};

/// What to run, where, and where each command's output goes.
pub struct BatchSpec<'a> {
    /// The shell command lines, run in this order, each with `sh -c`.
    pub commands: &'a [String],
    /// Working directory of every command.
    pub dir: &'a Path,
    /// Variables set for the commands (see [`Spec::env`]).
    pub env: &'a [(String, String)],
    /// Where each command's output goes, one path per command.
    pub logs: &'a [PathBuf],
    /// Where the shell's whole output goes before it is cut into `logs`.
    pub log: &'a Path,
    /// Longest each command may run.
    pub timeout: Duration,
    /// The confinement the shell runs under; `None` runs it as this process's user.
    pub confine: Option<&'a Confine>,
}

/// Runs `spec`'s commands in one process, stopping after the first that fails (later ones
/// would only repeat it), and returns the outcome of each command that ran, in order. A
/// command over its timeout, or running when `stop` turns true, ends the batch with that
/// command's outcome saying so.
pub fn run_batch(spec: &BatchSpec<'_>, stop: &AtomicBool) -> Result<Vec<Outcome>, ProcessError> {
    run_batch_spawned(spec, stop, &mut |_| {})
}

/// Runs `spec` like [`run_batch`], calling `on_spawn` with the process group of the shell once
/// it has started (as [`super::process::run`] does), so a resumed run can stop it.
pub fn run_batch_spawned(
    spec: &BatchSpec<'_>,
    stop: &AtomicBool,
    on_spawn: &mut dyn FnMut(i32),
) -> Result<Vec<Outcome>, ProcessError> {
    let token = token();
    let script = script(spec.commands, &token);
    // The whole batch may take every command's time; each command's own limit is watched
    // through the markers below.
    let total = spec
        .timeout
        .saturating_mul(u32::try_from(spec.commands.len()).unwrap_or(u32::MAX))
        .saturating_add(Duration::from_secs(5));
    let shell = Spec {
        command: &script,
        dir: spec.dir,
        env: spec.env,
        log: spec.log,
        timeout: total,
        confine: spec.confine,
    };
    let started = Instant::now();
    let mut watch = Watch::new(spec.log, &token, started);
    let timeout = spec.timeout;
    let whole = run_watched(&shell, stop, on_spawn, &mut || watch.expired(timeout))
        .map_err(|e| named(e, spec.commands))?;
    watch.scan();
    let text = fs_err::read(spec.log).unwrap_or_default();
    let pieces = split(&text, &token);
    let mut outcomes = Vec::new();
    for (n, log) in spec.logs.iter().enumerate().take(spec.commands.len()) {
        let piece = pieces.get(n);
        let output = piece.map_or(&text[pieces.last().map_or(0, |p| p.end)..], |p| {
            &text[p.start..p.output_end]
        });
        write_log(log, output)?;
        let tail = read_tail(log);
        let finished_at = watch.seen.get(n).copied().unwrap_or_else(Instant::now);
        let began = n
            .checked_sub(1)
            .and_then(|m| watch.seen.get(m).copied())
            .unwrap_or(started);
        let exit_code = match piece {
            Some(p) => Some(p.status),
            None => whole.exit_code,
        };
        let ended_early = piece.is_none();
        let failed =
            exit_code != Some(0) || (ended_early && (whole.timed_out || whole.interrupted));
        let denied = (failed && spec.confine.is_some())
            .then(|| super::denied::denied_path(&tail, spec.dir))
            .flatten();
        outcomes.push(Outcome {
            exit_code: if ended_early && (whole.timed_out || whole.interrupted) {
                None
            } else {
                exit_code
            },
            timed_out: ended_early && whole.timed_out,
            interrupted: ended_early && whole.interrupted,
            duration: finished_at.saturating_duration_since(began),
            tail,
            denied,
        });
        if failed {
            break;
        }
    }
    Ok(outcomes)
}

/// Returns a marker token no command can know in advance: this process, the time, a counter.
fn token() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(
        "@@orchestra-batch-{:x}-{nanos:x}-{n:x}@@",
        std::process::id()
    )
}

/// Returns the shell script that runs `commands` in order, printing `\n<token> <n> <status>\n`
/// after command `n` and stopping after the first that fails.
fn script(commands: &[String], token: &str) -> String {
    let mut s = String::new();
    for (n, command) in commands.iter().enumerate() {
        s.push_str(&format!(
            "sh -c {}\ns=$?\nprintf '\\n%s %d %d\\n' '{token}' {n} \"$s\"\n[ \"$s\" -eq 0 ] || exit \"$s\"\n",
            quote(command)
        ));
    }
    s
}

/// Returns `text` as one single-quoted shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// One finished command's place in the shared log.
struct Piece {
    start: usize,
    /// Where its output ends: the marker's leading newline.
    output_end: usize,
    /// Where the next command's output starts: after the marker line.
    end: usize,
    status: i32,
}

/// Returns the finished commands' pieces of `text`, in order, cut at the markers of `token`.
fn split(text: &[u8], token: &str) -> Vec<Piece> {
    let needle = format!("\n{token} ");
    let mut pieces: Vec<Piece> = Vec::new();
    let mut from = 0;
    while let Some(at) = find(&text[from..], needle.as_bytes()).map(|i| i + from) {
        let rest = &text[at + needle.len()..];
        let Some(eol) = rest.iter().position(|b| *b == b'\n') else {
            break;
        };
        let line = String::from_utf8_lossy(&rest[..eol]);
        let mut words = line.split(' ');
        let (Some(n), Some(status)) = (
            words.next().and_then(|w| w.parse::<usize>().ok()),
            words.next().and_then(|w| w.parse::<i32>().ok()),
        ) else {
            from = at + 1;
            continue;
        };
        let end = at + needle.len() + eol + 1;
        if n == pieces.len() {
            pieces.push(Piece {
                start: pieces.last().map_or(0, |p| p.end),
                output_end: at,
                end,
                status,
            });
        }
        from = end;
    }
    pieces
}

/// Returns where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Writes one command's output to its own log.
fn write_log(path: &Path, output: &[u8]) -> Result<(), ProcessError> {
    let log = |source| ProcessError::Log {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(log)?;
    }
    fs_err::write(path, output).map_err(log)
}

/// Names the commands, not the generated script, in an error starting or following the shell.
fn named(e: ProcessError, commands: &[String]) -> ProcessError {
    let command = commands.join("; ");
    match e {
        ProcessError::Spawn { dir, source, .. } => ProcessError::Spawn {
            command,
            dir,
            source,
        },
        ProcessError::Wait { source, .. } => ProcessError::Wait { command, source },
        other => other,
    }
}

/// Follows the shared log while the shell runs: when each command finished.
struct Watch {
    log: PathBuf,
    needle: Vec<u8>,
    offset: u64,
    /// The end of what was read, kept to find a marker cut in two by a read.
    carry: Vec<u8>,
    /// When the marker of each finished command was first seen.
    seen: Vec<Instant>,
    started: Instant,
}

impl Watch {
    fn new(log: &Path, token: &str, started: Instant) -> Watch {
        Watch {
            log: log.to_path_buf(),
            needle: format!("\n{token} ").into_bytes(),
            offset: 0,
            carry: Vec::new(),
            seen: Vec::new(),
            started,
        }
    }

    /// Returns true if and only if the running command has run longer than `timeout`.
    fn expired(&mut self, timeout: Duration) -> bool {
        self.scan();
        let began = self.seen.last().copied().unwrap_or(self.started);
        began.elapsed() >= timeout
    }

    /// Reads what the log gained since the last look and notes the markers in it.
    fn scan(&mut self) {
        let Ok(mut file) = std::fs::File::open(&self.log) else {
            return;
        };
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut fresh = Vec::new();
        let Ok(read) = file.read_to_end(&mut fresh) else {
            return;
        };
        self.offset += read as u64;
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(&fresh);
        let mut from = 0;
        while let Some(at) = find(&buf[from..], &self.needle).map(|i| i + from) {
            let rest = &buf[at + self.needle.len()..];
            let Some(eol) = rest.iter().position(|b| *b == b'\n') else {
                break;
            };
            let index = String::from_utf8_lossy(&rest[..eol])
                .split(' ')
                .next()
                .and_then(|w| w.parse::<usize>().ok());
            if index == Some(self.seen.len()) {
                self.seen.push(Instant::now());
            }
            from = at + self.needle.len() + eol + 1;
        }
        // Keep enough of the end to complete a marker the next read finishes.
        let keep = self.needle.len() + 40;
        let cut = from.max(buf.len().saturating_sub(keep));
        self.carry = buf[cut..].to_vec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(commands: &[&str], timeout: Duration) -> (Vec<Outcome>, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let commands: Vec<String> = commands.iter().map(|c| c.to_string()).collect();
        let logs: Vec<PathBuf> = (0..commands.len())
            .map(|n| dir.path().join(format!("logs/validate-{}.log", n + 1)))
            .collect();
        let spec = BatchSpec {
            commands: &commands,
            dir: dir.path(),
            env: &[],
            logs: &logs,
            log: &dir.path().join("logs/all.log"),
            timeout,
            confine: None,
        };
        let out = run_batch(&spec, &AtomicBool::new(false)).unwrap();
        let texts = logs
            .iter()
            .take(out.len())
            .map(|l| std::fs::read_to_string(l).unwrap())
            .collect();
        (out, texts)
    }

    #[test]
    fn each_command_keeps_its_own_exit_and_output() {
        let (out, logs) = run(
            &[
                "echo one",
                "printf two; echo err >&2",
                "echo 'it''s'; exit 3",
                "echo never",
            ],
            Duration::from_secs(10),
        );
        assert_eq!(out.len(), 3, "the batch stops after the first failure");
        assert_eq!(out[0].exit_code, Some(0));
        assert_eq!(out[1].exit_code, Some(0));
        assert_eq!(out[2].exit_code, Some(3));
        assert_eq!(logs, vec!["one\n", "twoerr\n", "its\n"]);
        assert_eq!(out[1].tail, "twoerr");
        assert_eq!(out[2].describe(Duration::from_secs(1)), "exit 3");
    }

    #[test]
    fn an_exit_in_one_command_does_not_end_the_others() {
        let (out, logs) = run(&["exit 0", "echo after"], Duration::from_secs(10));
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(Outcome::success));
        assert_eq!(logs[1], "after\n");
    }

    #[test]
    fn each_command_has_its_own_timeout() {
        let started = Instant::now();
        let (out, _) = run(
            &["sleep 0.3", "sleep 0.3", "sleep 30", "echo never"],
            Duration::from_millis(700),
        );
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(out[0].success() && out[1].success(), "{out:?}");
        assert!(out[2].timed_out && !out[2].success(), "{out:?}");
        assert_eq!(
            out[2].describe(Duration::from_secs(2)),
            "timed out after 2s"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_stop_interrupts_the_running_command() {
        let dir = tempfile::tempdir().unwrap();
        let commands = vec!["sleep 30".to_string()];
        let logs = vec![dir.path().join("1.log")];
        let spec = BatchSpec {
            commands: &commands,
            dir: dir.path(),
            env: &[],
            logs: &logs,
            log: &dir.path().join("all.log"),
            timeout: Duration::from_secs(60),
            confine: None,
        };
        let out = run_batch(&spec, &AtomicBool::new(true)).unwrap();
        assert_eq!(out.len(), 1);
        assert!(out[0].interrupted && !out[0].success());
    }
}
