//! Runs the `git` command line and turns its failures into typed errors; the only place in the
//! crate that starts a git process.
//!
//! Callers outside `crate::git` never see the raw runner: they call the typed operations of
//! `revs`, `refs`, `merge`, `notes`, `diff`, `remote` and `workdir`, so how git is invoked (no
//! pager, no prompt, the engine's identity on every write) is decided here once.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::classify::FailureKind;
use super::identity::Identity;

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
        kind: FailureKind,
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

    /// Returns what kind of failure this was; `Other` when git did not run at all.
    pub fn kind(&self) -> FailureKind {
        match self {
            GitError::Failed { kind, .. } => *kind,
            _ => FailureKind::Other,
        }
    }

    /// Returns an error for a command git ran but that failed in a way the caller detected.
    pub(in crate::git) fn failed(args: impl Into<String>, code: i32, stderr: String) -> GitError {
        let kind = FailureKind::classify(code, &stderr, "");
        GitError::Failed {
            args: args.into(),
            code,
            stderr,
            kind,
        }
    }
}

/// What a git process printed and how it exited, for operations that read more than success.
pub(in crate::git) struct Finished {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
    printable: String,
}

impl Finished {
    /// Returns true if and only if git exited 0.
    pub fn success(&self) -> bool {
        self.code == 0
    }

    /// Returns this outcome as the typed error of a failed command.
    pub fn into_error(self) -> GitError {
        let stdout = String::from_utf8_lossy(&self.stdout);
        let kind = FailureKind::classify(self.code, &self.stderr, &stdout);
        // Some commands (merge, commit) say why they stopped on stdout only.
        let stderr = if self.stderr.is_empty() {
            stdout.trim().to_string()
        } else {
            self.stderr
        };
        GitError::Failed {
            args: self.printable,
            code: self.code,
            stderr,
            kind,
        }
    }

    /// Returns stdout as text without the final newline, or the error of a failed command.
    pub fn text(self) -> Result<String, GitError> {
        if !self.success() {
            return Err(self.into_error());
        }
        let mut text = String::from_utf8(self.stdout).map_err(|_| GitError::NotUtf8 {
            args: self.printable,
        })?;
        if text.ends_with('\n') {
            text.pop();
        }
        Ok(text)
    }
}

/// A `git` runner bound to one directory (a working tree or a git directory).
///
/// Every call runs `git -C <dir> …` with the environment inherited, so tests make it hermetic by
/// setting `HOME` and `GIT_CONFIG_GLOBAL` for the whole process. Writing operations run under an
/// [`Identity`] (the engine's unless told otherwise), which wins over any `GIT_AUTHOR_*`,
/// `GIT_COMMITTER_*` or `user.*` the user has, and stands in when they have none.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    identity: Option<Identity>,
    /// Variables set (`Some`) or removed (`None`) for every command.
    env: Vec<(&'static str, Option<OsString>)>,
    /// `key=value` settings given to every command with `-c`, over any configuration file.
    config: Vec<String>,
    /// The common git directory when the runner's maker knew it (see `RepoInfo::git`), so
    /// that operations needing it (the notes lock) do not start a `rev-parse` to ask.
    common_dir: Option<PathBuf>,
}

impl Git {
    /// Returns a runner whose commands execute in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Git {
            dir: dir.into(),
            identity: None,
            env: Vec::new(),
            config: Vec::new(),
            common_dir: None,
        }
    }

    /// Returns this runner knowing that its repository's common git directory is `dir`.
    pub(in crate::git) fn in_common_dir(mut self, dir: &Path) -> Git {
        self.common_dir = Some(dir.to_path_buf());
        self
    }

    /// Returns the common git directory, asking git only when the runner does not know it.
    pub(in crate::git) fn common_dir(&self) -> Result<PathBuf, GitError> {
        match &self.common_dir {
            Some(dir) => Ok(dir.clone()),
            None => Ok(PathBuf::from(
                self.run(["rev-parse", "--path-format=absolute", "--git-common-dir"])?
                    .trim(),
            )),
        }
    }

    /// Returns the common git directory when the runner's maker gave it; never asks git.
    pub(in crate::git) fn known_common_dir(&self) -> Option<&Path> {
        self.common_dir.as_deref()
    }

    /// Returns the git directory the runner is pinned to (its `GIT_DIR`), if any.
    pub(in crate::git) fn pinned_git_dir(&self) -> Option<PathBuf> {
        self.env
            .iter()
            .rev()
            .find(|(key, _)| *key == "GIT_DIR")
            .and_then(|(_, value)| value.as_ref().map(PathBuf::from))
    }

    /// Returns the directory commands run in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Returns this runner writing as the engine's identity.
    pub(in crate::git) fn writing(&self) -> Git {
        self.writing_as(&Identity::ENGINE)
    }

    /// Returns this runner writing as `identity`.
    pub(in crate::git) fn writing_as(&self, identity: &Identity) -> Git {
        Git {
            identity: Some(identity.clone()),
            ..self.clone()
        }
    }

    /// Returns this runner with one more environment variable set for every command.
    pub(in crate::git) fn with_env(&self, key: &'static str, value: impl AsRef<OsStr>) -> Git {
        let mut git = self.clone();
        git.env.push((key, Some(value.as_ref().to_owned())));
        git
    }

    /// Returns this runner with `key=value` given to every command with `-c`, so it wins over
    /// every configuration file (and reaches the git processes git itself starts).
    pub(in crate::git) fn with_config(&self, setting: impl Into<String>) -> Git {
        let mut git = self.clone();
        git.config.push(setting.into());
        git
    }

    /// Returns this runner with `key` removed from the environment of every command.
    #[cfg(test)]
    pub(in crate::git) fn without_env(&self, key: &'static str) -> Git {
        let mut git = self.clone();
        git.env.push((key, None));
        git
    }

    /// Returns a `Command` for `git <args>` in this directory, for callers that need to stream.
    pub(in crate::git) fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(&self.dir);
        for setting in &self.config {
            cmd.arg("-c").arg(setting);
        }
        cmd.args(args);
        // Never let git open a pager or prompt on a terminal the engine does not own, and never
        // let replace refs (`git replace`, which whoever can write refs may add) make git read
        // other objects than the ids name: the engine checks, merges and reviews what is there.
        cmd.env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PAGER", "cat")
            .env("GIT_NO_REPLACE_OBJECTS", "1");
        // Nor does git (nor a filter or credential helper it runs) get a model key.
        for name in orchestra_sys::exec::secret_env::withheld() {
            cmd.env_remove(name);
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        // Last, so that the identity wins over anything else in the environment.
        if let Some(identity) = &self.identity {
            identity.apply(&mut cmd);
        }
        cmd
    }

    /// Runs `git <args>`, feeding `stdin` when given, and returns what it printed and its exit
    /// status whether or not it succeeded; only a git that could not run is an error.
    pub(in crate::git) fn finish<I, S>(
        &self,
        args: I,
        stdin: Option<&[u8]>,
    ) -> Result<Finished, GitError>
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
        // The input is written by a thread of its own while this one reads the output: git
        // answering a batch (`cat-file --batch`) fills its output pipe before it has read all
        // the input, and writing all of it first would wait on git while git waits on us.
        let out = std::thread::scope(|scope| {
            if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
                scope.spawn(move || {
                    // A write error here means git exited early; its status and stderr say why.
                    let _ = pipe.write_all(input);
                });
            }
            child.wait_with_output()
        })
        .map_err(|source| GitError::Spawn { source })?;
        Ok(Finished {
            code: out.status.code().unwrap_or(-1),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            printable,
        })
    }

    /// Runs `git <args>` and returns its stdout with the trailing newline removed.
    pub(in crate::git) fn run<I, S>(&self, args: I) -> Result<String, GitError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_with_stdin(args, None)
    }

    /// Runs `git <args>`, feeding `stdin` when given, and returns stdout without the final newline.
    pub(in crate::git) fn run_with_stdin<I, S>(
        &self,
        args: I,
        stdin: Option<&[u8]>,
    ) -> Result<String, GitError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.finish(args, stdin)?.text()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;

    /// A batch whose input and output both outgrow a pipe's buffer used to hang for good: all
    /// the input was written before any output was read, while git, its output pipe full,
    /// stopped reading its input (the merge reading a hundred packets' verdict notes did).
    #[test]
    fn a_batch_with_more_input_and_output_than_a_pipe_holds_finishes() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("big"), "x".repeat(10_000)).unwrap();
        let id = git(dir, &["hash-object", "-w", "big"]);
        // 2,000 requests: 82 kB of input, 20 MB of output.
        let input = format!("{}\n", id.trim()).repeat(2_000);
        let (done, finished) = std::sync::mpsc::channel();
        let runner = Git::new(dir);
        std::thread::spawn(move || {
            let out = runner.finish(["cat-file", "--batch"], Some(input.as_bytes()));
            let _ = done.send(out.map(|o| o.stdout.len()));
        });
        let len = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the batch finished")
            .unwrap();
        assert!(len > 2_000 * 10_000, "{len} bytes of output");
    }
}
