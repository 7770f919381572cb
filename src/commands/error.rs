//! The one error type at the CLI edge: a kind that maps to the exit code, a message, and hints.

use std::fmt::Display;
use std::process::ExitCode;

/// What went wrong, as far as the exit code is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad input: arguments, plan, config or repository state. Exit code 2; nothing changed.
    User,
    /// The work itself failed (a packet failed, a gate refused). Exit code 1.
    Failed,
    /// Stopped by Ctrl-C or SIGTERM; the work can be resumed. Exit code 130.
    Interrupted,
    /// A bug or an environment failure the user cannot fix by changing input. Exit code 1.
    Internal,
}

/// An error ready to show to a person: message first, then what to do about it.
#[derive(Debug)]
pub struct CommandError {
    pub kind: ErrorKind,
    pub message: String,
    pub hints: Vec<String>,
}

impl CommandError {
    /// Returns a bad-input error (exit code 2).
    pub fn user(message: impl Display) -> Self {
        CommandError {
            kind: ErrorKind::User,
            message: message.to_string(),
            hints: Vec::new(),
        }
    }

    /// Returns an error for work that ran and failed (exit code 1).
    pub fn failed(message: impl Display) -> Self {
        CommandError {
            kind: ErrorKind::Failed,
            message: message.to_string(),
            hints: Vec::new(),
        }
    }

    /// Returns an error for work stopped by a signal (exit code 130).
    pub fn interrupted(message: impl Display) -> Self {
        CommandError {
            kind: ErrorKind::Interrupted,
            message: message.to_string(),
            hints: Vec::new(),
        }
    }

    /// Returns an internal error (exit code 1).
    pub fn internal(message: impl Display) -> Self {
        CommandError {
            kind: ErrorKind::Internal,
            message: message.to_string(),
            hints: Vec::new(),
        }
    }

    /// Adds a hint telling the user what to do next.
    pub fn hint(mut self, hint: impl Display) -> Self {
        self.hints.push(hint.to_string());
        self
    }

    /// Prints the error to stderr and returns the exit code for its kind.
    pub fn report(&self) -> ExitCode {
        // What an error quotes (file names, model output) never drives the terminal.
        let safe = git_orchestra::redact::terminal_safe;
        eprintln!("error: {}", safe(&self.message));
        for hint in &self.hints {
            eprintln!("hint: {}", safe(hint));
        }
        match self.kind {
            ErrorKind::User => ExitCode::from(2),
            ErrorKind::Interrupted => ExitCode::from(130),
            ErrorKind::Failed | ErrorKind::Internal => ExitCode::from(1),
        }
    }
}

impl From<git_orchestra::git::RepoError> for CommandError {
    fn from(e: git_orchestra::git::RepoError) -> Self {
        match e {
            git_orchestra::git::RepoError::Git(e) => CommandError::internal(e),
            other => CommandError::user(other),
        }
    }
}
