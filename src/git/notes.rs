//! Reads and writes git notes, the store review verdicts live in.
//!
//! Notes are commits on a notes ref, so writing one needs an identity (the engine's) and takes
//! the ref's lock; concurrent reviews retry briefly instead of failing on each other's lock.

use super::{FailureKind, Git, GitError};

impl Git {
    /// Stores `text` as the note of `object` under `notes_ref`, replacing an earlier note;
    /// retries for a while when another process holds the notes ref's lock.
    pub fn add_note(&self, notes_ref: &str, object: &str, text: &str) -> Result<(), GitError> {
        let mut attempt = 0;
        loop {
            match self.add_note_once(notes_ref, object, text) {
                Ok(()) => return Ok(()),
                Err(GitError::Failed {
                    ref stderr, kind, ..
                }) if attempt < 20
                    && (kind == FailureKind::LockHeld
                        || stderr.contains("lock")
                        || stderr.contains("cannot update")) =>
                {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(25 * attempt));
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn add_note_once(&self, notes_ref: &str, object: &str, text: &str) -> Result<(), GitError> {
        self.writing()
            .run_with_stdin(
                [
                    "-c",
                    "core.hooksPath=/dev/null",
                    "notes",
                    "--ref",
                    notes_ref,
                    "add",
                    "--force",
                    "--file=-",
                    object,
                ],
                Some(text.as_bytes()),
            )
            .map(drop)
    }

    /// Returns the note of `object` under `notes_ref`, or `None` when it has none.
    ///
    /// `git notes show` exits 1 both for "no note" and for an unknown object; callers resolve
    /// the object first, so here it means "no note".
    pub fn note(&self, notes_ref: &str, object: &str) -> Result<Option<String>, GitError> {
        match self.run(["notes", "--ref", notes_ref, "show", object]) {
            Ok(text) => Ok(Some(text)),
            Err(GitError::Failed { code: 1, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
