//! Reads and writes git notes, the store review verdicts live in.
//!
//! Notes are commits on a notes ref, so writing one needs an identity (the engine's) and takes
//! the ref's lock; concurrent reviews retry briefly instead of failing on each other's lock, and
//! take turns under a file lock so that no writer drops another's note.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use super::{FailureKind, Git, GitError};

/// The notes this process wrote, by common git directory, notes ref and object, each with
/// the notes ref's tip right after the write: while the tip is still there, nothing has
/// changed any note under that ref, and [`Git::note`] answers without `git notes show` (a
/// process that starts `git show` in turn). Only texts git stores as written are kept.
static WRITTEN: Mutex<BTreeMap<NoteKey, (String, String)>> = Mutex::new(BTreeMap::new());

/// A note's common git directory, notes ref and object.
type NoteKey = (PathBuf, String, String);

/// Bounds [`WRITTEN`]: past it, it starts again (a cache, not a record).
const WRITTEN_LIMIT: usize = 1024;

/// Returns true if and only if git keeps `text` as it is, but for its final line break, when
/// it stores it as a note (its clean-up drops trailing spaces and blank lines): the text
/// [`Git::note`] would read back.
fn stored_as_written(text: &str) -> bool {
    let body = text.strip_suffix('\n').unwrap_or(text);
    !body.is_empty()
        && body
            .split('\n')
            .all(|line| !line.is_empty() && !line.ends_with(char::is_whitespace))
}

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
        // `git notes add` moves the notes ref without checking its old value, so two writers
        // at once would each drop the other's note: writers take turns under a file lock.
        let common = self.common_dir()?;
        let _turn = NotesLock::acquire(&common.join("orchestra-notes.lock"));
        let key = (common.clone(), notes_ref.to_string(), object.to_string());
        let mut written = WRITTEN.lock().unwrap_or_else(|p| p.into_inner());
        written.remove(&key);
        drop(written);
        self.writing().run_with_stdin(
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
        )?;
        // Read under the lock: the tip this write made (see `WRITTEN`).
        if stored_as_written(text)
            && let Some(tip) = super::watch::ref_tips_named(&common, &[notes_ref]).remove(notes_ref)
        {
            let mut written = WRITTEN.lock().unwrap_or_else(|p| p.into_inner());
            if written.len() >= WRITTEN_LIMIT {
                written.clear();
            }
            let text = text.strip_suffix('\n').unwrap_or(text).to_string();
            written.insert(key, (tip, text));
        }
        Ok(())
    }

    /// Returns the notes under `notes_ref` of those of `objects` (full object ids) that have
    /// one, read by one `git notes list` and one `cat-file` batch instead of a `notes show`
    /// each; bytes that are not UTF-8 are replaced.
    pub fn notes_of(
        &self,
        notes_ref: &str,
        objects: &[&str],
    ) -> Result<std::collections::HashMap<String, String>, GitError> {
        // "<note blob> <annotated object>" per line, whatever the notes tree's fan-out.
        let listed = self.run(["notes", "--ref", notes_ref, "list"])?;
        let wanted: Vec<(&str, &str)> = listed
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, object)| objects.contains(object))
            .collect();
        let mut notes = std::collections::HashMap::new();
        if wanted.is_empty() {
            return Ok(notes);
        }
        let input: String = wanted.iter().map(|(blob, _)| format!("{blob}\n")).collect();
        let out = self.finish(["cat-file", "--batch"], Some(input.as_bytes()))?;
        if !out.success() {
            return Err(out.into_error());
        }
        // "<id> blob <size>\n<bytes>\n" per object, in the order asked ("<id> missing\n").
        let mut rest = out.stdout.as_slice();
        for (_, object) in wanted {
            let Some(nl) = rest.iter().position(|b| *b == b'\n') else {
                break;
            };
            let header = String::from_utf8_lossy(&rest[..nl]).into_owned();
            rest = &rest[nl + 1..];
            let fields: Vec<&str> = header.split(' ').collect();
            let Some(size) = (match fields[..] {
                [_, "blob", size] => size.parse::<usize>().ok(),
                _ => None,
            }) else {
                continue;
            };
            let body = rest.get(..size).unwrap_or(rest);
            notes.insert(
                object.to_string(),
                String::from_utf8_lossy(body).into_owned(),
            );
            rest = rest.get(size + 1..).unwrap_or_default();
        }
        Ok(notes)
    }

    /// Returns the note of `object` under `notes_ref`, or `None` when it has none.
    ///
    /// `git notes show` exits 1 both for "no note" and for an unknown object; callers resolve
    /// the object first, so here it means "no note".
    pub fn note(&self, notes_ref: &str, object: &str) -> Result<Option<String>, GitError> {
        if let Some(common) = self.known_common_dir() {
            let key = (
                common.to_path_buf(),
                notes_ref.to_string(),
                object.to_string(),
            );
            let kept = WRITTEN
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&key)
                .cloned();
            if let Some((tip, text)) = kept
                && !common.join("reftable").exists()
                && super::watch::ref_tips_named(common, &[notes_ref]).get(notes_ref) == Some(&tip)
            {
                return Ok(Some(text));
            }
        }
        match self.run(["notes", "--ref", notes_ref, "show", object]) {
            Ok(text) => Ok(Some(text)),
            Err(GitError::Failed { code: 1, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// An exclusive `flock` on the notes lock file, held until dropped; the kernel releases it if
/// the process dies. Each acquisition opens its own descriptor, so threads take turns too.
/// Without a lock file (a read-only git directory) writers go on unlocked.
struct NotesLock {
    _held: Option<std::fs::File>,
}

impl NotesLock {
    fn acquire(path: &std::path::Path) -> NotesLock {
        use std::os::fd::AsRawFd;
        let Ok(file) = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
        else {
            return NotesLock { _held: None };
        };
        // SAFETY: flock on a descriptor we own; no memory is shared with the kernel.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        NotesLock {
            _held: (rc == 0).then_some(file),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::git::Git;
    use crate::git::testing::git;

    /// A note this process wrote is read back without git while the notes ref is still
    /// where the write left it; once anything moves the ref, or for a text git would clean
    /// up, git is asked (here a git that finds no repository, so it answers nothing).
    #[test]
    fn a_note_just_written_is_read_back_without_git_until_the_notes_ref_moves() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "--quiet", "-b", "main"]);
        git(dir, &["commit", "--quiet", "--allow-empty", "-m", "a"]);
        let head = git(dir, &["rev-parse", "HEAD"]).trim().to_string();
        let tree = git(dir, &["rev-parse", "HEAD^{tree}"]).trim().to_string();
        let g = Git::new(dir)
            .in_common_dir(&dir.join(".git"))
            .with_env("GIT_CONFIG_GLOBAL", "/dev/null");
        let blind = g.with_env("GIT_DIR", "/nonexistent");
        let verdict = "{\n  \"verdict\": \"approve\"\n}";
        g.add_note("refs/notes/v", &head, verdict).unwrap();
        assert_eq!(
            blind.note("refs/notes/v", &head).unwrap().as_deref(),
            Some(verdict)
        );
        g.add_note("refs/notes/v", &tree, &format!("{verdict}\n"))
            .unwrap();
        assert_eq!(
            blind.note("refs/notes/v", &tree).unwrap().as_deref(),
            Some(verdict)
        );
        assert_eq!(
            g.note("refs/notes/v", &tree).unwrap().as_deref(),
            Some(verdict)
        );
        // The second write moved the ref since the first one's.
        assert!(blind.note("refs/notes/v", &head).is_err());
        assert_eq!(
            g.note("refs/notes/v", &head).unwrap().as_deref(),
            Some(verdict)
        );
        // Git cleans this one up: never kept, always read from git.
        g.add_note("refs/notes/v", &head, "spaced  \n").unwrap();
        assert!(blind.note("refs/notes/v", &head).is_err());
        assert_eq!(
            g.note("refs/notes/v", &head).unwrap().as_deref(),
            Some("spaced")
        );
        // Another writer moved the ref: what was kept is not trusted any more.
        git(
            dir,
            &[
                "notes",
                "--ref",
                "refs/notes/v",
                "add",
                "-f",
                "-m",
                "other",
                &tree,
            ],
        );
        assert!(blind.note("refs/notes/v", &tree).is_err());
        assert_eq!(
            g.note("refs/notes/v", &tree).unwrap().as_deref(),
            Some("other")
        );
    }

    #[test]
    fn notes_written_at_once_from_many_threads_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "--quiet", "-b", "main"]);
        let mut commits = Vec::new();
        for i in 0..8 {
            git(
                dir.path(),
                &["commit", "--quiet", "--allow-empty", "-m", &format!("c{i}")],
            );
            commits.push(git(dir.path(), &["rev-parse", "HEAD"]).trim().to_string());
        }
        std::thread::scope(|s| {
            for (i, c) in commits.iter().enumerate() {
                let path = dir.path();
                s.spawn(move || {
                    Git::new(path)
                        .with_env("GIT_CONFIG_GLOBAL", "/dev/null")
                        .add_note("refs/notes/t", c, &format!("note {i}"))
                        .unwrap();
                });
            }
        });
        let g = Git::new(dir.path());
        for (i, c) in commits.iter().enumerate() {
            let note = g.note("refs/notes/t", c).unwrap();
            assert_eq!(note.as_deref().map(str::trim), Some(&*format!("note {i}")));
        }
        // Read together, the same notes; an object without one is left out.
        let asked: Vec<&str> = commits.iter().map(String::as_str).take(3).collect();
        let mut with_none = asked.clone();
        let tree = git(dir.path(), &["rev-parse", "HEAD^{tree}"])
            .trim()
            .to_string();
        with_none.push(&tree);
        let together = g.notes_of("refs/notes/t", &with_none).unwrap();
        assert_eq!(together.len(), 3);
        for (i, c) in asked.iter().enumerate() {
            assert_eq!(together[*c].trim(), format!("note {i}"));
        }
        assert!(g.notes_of("refs/notes/none", &asked).unwrap().is_empty());
    }
}
