//! Finds an eval's report by id, wherever it is: the run store's journal (an eval run here,
//! finished or not) or the eval's ref in git (kept when it finished, fetched from elsewhere).

use orchestra_git::git::RepoInfo;

use super::journal::{self, JournalError};
use super::kept::{self, KeptError};
use super::report::EvalReport;

/// Which copy of an eval is read first when both exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefer {
    /// The journal: the live state of an eval that may still be running.
    Journal,
    /// The ref: the results as kept in git, the same on every clone.
    Kept,
}

/// Why no report was found.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    #[error(
        "no eval `{id}` in this repository's journal or under refs/orchestra/eval/; `git orchestra eval report --list` lists the evals there are"
    )]
    Unknown { id: String },
    #[error("no eval has run in this repository; start one with `git orchestra eval run`")]
    None,
    #[error(transparent)]
    Journal(JournalError),
    #[error(transparent)]
    Kept(KeptError),
}

/// Returns the report of the eval `named` (the journal's newest when `None`), read from the
/// copy `prefer` names first and from the other when that one does not hold it.
pub fn report(
    repo: &RepoInfo,
    named: Option<&str>,
    prefer: Prefer,
) -> Result<EvalReport, LookupError> {
    let Some(id) = named else {
        let id = match journal::pick(&repo.common_dir, None) {
            Ok(id) => id,
            Err(JournalError::None) => return Err(LookupError::None),
            Err(e) => return Err(LookupError::Journal(e)),
        };
        return from_journal(repo, &id)?.ok_or(LookupError::None);
    };
    let found = match prefer {
        Prefer::Journal => match from_journal(repo, id)? {
            Some(r) => Some(r),
            None => from_ref(repo, id)?,
        },
        Prefer::Kept => match from_ref(repo, id)? {
            Some(r) => Some(r),
            None => from_journal(repo, id)?,
        },
    };
    found.ok_or_else(|| LookupError::Unknown { id: id.to_string() })
}

/// Returns the report of the journal of eval `id`, `None` when the journal holds no such eval.
fn from_journal(repo: &RepoInfo, id: &str) -> Result<Option<EvalReport>, LookupError> {
    match journal::load(&repo.common_dir, id) {
        Ok(state) => Ok(Some(EvalReport::of(&state))),
        Err(JournalError::Unknown { .. } | JournalError::None) => Ok(None),
        Err(e) => Err(LookupError::Journal(e)),
    }
}

/// Returns the report kept under the ref of eval `id`, `None` when there is no such ref.
fn from_ref(repo: &RepoInfo, id: &str) -> Result<Option<EvalReport>, LookupError> {
    match kept::read(&repo.git(), id) {
        Ok(report) => Ok(Some(report)),
        Err(KeptError::Unknown { .. }) => Ok(None),
        Err(e) => Err(LookupError::Kept(e)),
    }
}

/// Returns the ids of the evals the run store of `common_dir` journals, newest first.
pub fn journaled(common_dir: &std::path::Path) -> Result<Vec<String>, LookupError> {
    orchestra_core::store::Store::open(common_dir)
        .and_then(|s| s.evals())
        .map_err(|e| LookupError::Journal(JournalError::Store(e)))
}

/// An eval as lists show it: its report, and whether its results are kept in git.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The eval's report.
    pub report: EvalReport,
    /// True if and only if `refs/orchestra/eval/<eval>` holds its results.
    pub kept: bool,
}

/// Returns every eval of the repository: those its journal holds (newest first), then those
/// only kept in git (in name order).
pub fn all(repo: &RepoInfo) -> Result<Vec<Listed>, LookupError> {
    let kept_ids = kept::list(&repo.git()).map_err(LookupError::Kept)?;
    let mut ids = journaled(&repo.common_dir)?;
    let only_kept: Vec<String> = kept_ids
        .iter()
        .filter(|k| !ids.contains(k))
        .cloned()
        .collect();
    ids.extend(only_kept);
    ids.iter()
        .map(|id| {
            Ok(Listed {
                report: report(repo, Some(id), Prefer::Journal)?,
                kept: kept_ids.contains(id),
            })
        })
        .collect()
}
