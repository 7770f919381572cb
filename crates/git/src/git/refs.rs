//! Moves and deletes refs, always as a compare-and-swap when the caller knows what the ref held.
//!
//! Several processes and threads advance the same integration, target and backup refs; an
//! update that names the value it expects fails (`RefMoved`) instead of silently dropping
//! another writer's work.

use super::{Git, GitError};

/// What a ref must hold for an update to go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected<'a> {
    /// The ref must not exist yet.
    Absent,
    /// The ref must point at this object.
    At(&'a str),
}

/// Why a ref was not updated.
#[derive(Debug, thiserror::Error)]
pub enum RefError {
    #[error("{refname} no longer holds the value the update expected")]
    RefMoved { refname: String, source: GitError },
    #[error(transparent)]
    Git(#[from] GitError),
}

impl From<RefError> for GitError {
    /// Returns the git failure behind a ref that was not updated.
    fn from(e: RefError) -> GitError {
        match e {
            RefError::RefMoved { source, .. } | RefError::Git(source) => source,
        }
    }
}

impl Git {
    /// Points `refname` at `new` if and only if it currently holds `expected`, recording
    /// `message` in its reflog (under the engine's identity).
    ///
    /// A ref that moved (or appeared) in between, or that another writer holds locked, is
    /// `RefError::RefMoved` (its source says which); git not running at all is `RefError::Git`.
    pub fn update_ref(
        &self,
        refname: &str,
        new: &str,
        expected: Expected<'_>,
        message: Option<&str>,
    ) -> Result<(), RefError> {
        let old = match expected {
            // An empty old value means "must not exist yet".
            Expected::Absent => "",
            Expected::At(id) => id,
        };
        let mut args = vec!["update-ref"];
        if let Some(m) = message {
            args.extend(["-m", m]);
        }
        args.extend([refname, new, old]);
        self.writing()
            .run(args)
            .map(drop)
            .map_err(|e| moved(refname, e))
    }

    /// Deletes `refname` if and only if it still points at `expected`.
    pub fn delete_ref(&self, refname: &str, expected: &str) -> Result<(), RefError> {
        self.writing()
            .run(["update-ref", "-d", refname, expected])
            .map(drop)
            .map_err(|e| moved(refname, e))
    }

    /// Deletes the local branch `branch` whatever it holds (`git branch -D`).
    pub fn force_delete_branch(&self, branch: &str) -> Result<(), GitError> {
        self.writing().run(["branch", "-D", "--", branch]).map(drop)
    }
}

/// Returns a failed `update-ref` as a lost compare-and-swap; git could not tell a ref that moved
/// from one another writer holds locked, and both mean "someone else got there first".
fn moved(refname: &str, e: GitError) -> RefError {
    match e {
        GitError::Failed { .. } => RefError::RefMoved {
            refname: refname.to_string(),
            source: e,
        },
        e => RefError::Git(e),
    }
}
