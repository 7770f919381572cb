//! The identity git writes commits, notes and reflogs under when the engine writes them.
//!
//! Agents never commit with their own identity or configuration, and users without a configured
//! `user.name` must still be able to run, review and merge: every writing operation of
//! `crate::git` runs with one of these set in the environment, which git ranks above
//! `GIT_AUTHOR_*` from elsewhere and above `user.*` configuration.

use std::process::Command;

/// The name the engine commits under.
pub const COMMITTER_NAME: &str = "git-orchestra";
/// The e-mail of the engine's identity (a reserved, non-routable domain).
pub const COMMITTER_EMAIL: &str = "git-orchestra@localhost.invalid";

/// An author and committer identity for the git processes that write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: &'static str,
    pub email: &'static str,
}

impl Identity {
    /// The engine's own identity: every commit, merge, note, backup and ref update it makes.
    pub const ENGINE: Identity = Identity {
        name: COMMITTER_NAME,
        email: COMMITTER_EMAIL,
    };

    /// Returns an identity with this name and e-mail.
    pub const fn new(name: &'static str, email: &'static str) -> Identity {
        Identity { name, email }
    }

    /// Sets this identity as author and committer of whatever `cmd` writes.
    pub(in crate::git) fn apply(&self, cmd: &mut Command) {
        cmd.env("GIT_AUTHOR_NAME", self.name)
            .env("GIT_AUTHOR_EMAIL", self.email)
            .env("GIT_COMMITTER_NAME", self.name)
            .env("GIT_COMMITTER_EMAIL", self.email);
    }
}
