//! Runs the `git` command line and turns its failures into typed errors.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// An error from one `git` invocation, carrying the command line and git's own message.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("could not start `git` ({source}); is git installed and on PATH?")]
    Spawn { source: std::io::Error },
    #[error("`git {args}` failed (exit {code}): {stderr}")]
    Failed {
        args: String,
        code: i32,
        stderr: String,
    },
    #[error("`git {args}` printed output that is not UTF-8")]
    NotUtf8 { args: String },
}

impl GitError {
    /// Returns the exit code of a failed git command, or `None` when git did not run.
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            GitError::Failed { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// A `git` runner bound to one directory (a working tree or a git directory).
///
/// Every call runs `git -C <dir> …` with the environment inherited, so tests make it hermetic by
/// setting `HOME` and `GIT_CONFIG_GLOBAL` for the whole process.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
}

impl Git {
    /// Returns a runner whose commands execute in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Git { dir: dir.into() }
    }

    /// Returns the directory commands run in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Returns a `Command` for `git <args>` in this directory, for callers that need to stream.
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(&self.dir).args(args);
        // Never let git open a pager or prompt on a terminal the engine does not own.
        cmd.env("GIT_TERMINAL_PROMPT", "0").env("GIT_PAGER", "cat");
        cmd
    }

    /// Runs `git <args>` and returns its stdout with the trailing newline removed.
    pub fn run<I, S>(&self, args: I) -> Result<String, GitError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_with_stdin(args, None)
    }

    /// Runs `git <args>`, feeding `stdin` when given, and returns stdout without the final newline.
    pub fn run_with_stdin<I, S>(&self, args: I, stdin: Option<&[u8]>) -> Result<String, GitError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let printable = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let mut cmd = self.command(&args);
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|source| GitError::Spawn { source })?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            // A write error here means git exited early; its status and stderr say why.
            let _ = pipe.write_all(input);
        }
        let out = child
            .wait_with_output()
            .map_err(|source| GitError::Spawn { source })?;
        if !out.status.success() {
            return Err(GitError::Failed {
                args: printable,
                code: out.status.code().unwrap_or(-1),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        let mut text =
            String::from_utf8(out.stdout).map_err(|_| GitError::NotUtf8 { args: printable })?;
        if text.ends_with('\n') {
            text.pop();
        }
        Ok(text)
    }

    /// Returns true if and only if `git <args>` exits 0; other failures to run are errors.
    pub fn succeeds<I, S>(&self, args: I) -> Result<bool, GitError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        match self.run(args) {
            Ok(_) => Ok(true),
            Err(GitError::Failed { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
