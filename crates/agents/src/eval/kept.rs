//! An eval's results kept in git: a commit holding `results.json` (the [`EvalReport`]) under
//! `refs/orchestra/eval/<eval>`, so that a clone that fetches `refs/orchestra/eval/*` can list
//! and compare evals it never ran.
//!
//! The commit is made with plumbing (`hash-object`, `mktree`, `commit-tree`) under the
//! engine's identity: it needs no identity configured, and touches no branch, index or working
//! tree. Keeping an eval again (a resumed one) commits on top of what its ref held.

use orchestra_git::git::{Git, GitError};

use super::report::EvalReport;

/// The prefix of the refs that keep evals' results.
pub const EVAL_REF_PREFIX: &str = "refs/orchestra/eval/";

/// The file of a kept eval's commit that holds its report.
pub const RESULTS_FILE: &str = "results.json";

/// Why an eval's kept results could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum KeptError {
    #[error("cannot keep or read eval results in git: {0}")]
    Git(#[from] GitError),
    #[error(
        "no eval `{id}` is kept in this repository (no ref {EVAL_REF_PREFIX}{id}); `git orchestra eval report --list` lists the kept evals, and `git fetch origin '{EVAL_REF_PREFIX}*:{EVAL_REF_PREFIX}*'` fetches them"
    )]
    Unknown { id: String },
    #[error("`{refname}` holds no readable {RESULTS_FILE}: {why}")]
    Unreadable { refname: String, why: String },
}

/// Returns the ref that keeps the eval `id`'s results.
pub fn eval_ref(id: &str) -> String {
    format!("{EVAL_REF_PREFIX}{id}")
}

/// Commits `report` as `results.json` and points the eval's ref at the commit; returns the
/// commit's id.
pub fn keep(git: &Git, report: &EvalReport) -> Result<String, KeptError> {
    let refname = eval_ref(&report.eval);
    let text = serde_json::to_string_pretty(report).map_err(|e| KeptError::Unreadable {
        refname: refname.clone(),
        why: e.to_string(),
    })?;
    let blob = git.hash_object("blob", format!("{text}\n").as_bytes(), true)?;
    let tree = git.mktree(&[(RESULTS_FILE, &blob)])?;
    let parent = git.resolve_commit(&refname)?;
    let parents: Vec<&str> = parent.iter().map(String::as_str).collect();
    let resolved: usize = report.arms.iter().map(|a| a.resolved).sum();
    let message = format!(
        "eval {}: {} of {} attempts ended, {resolved} resolved\n\nTasks: {}\nTest: {}",
        report.eval, report.done, report.total, report.range, report.test
    );
    let commit = git.commit_tree(&tree, &parents, &message)?;
    git.set_ref(&refname, &commit)?;
    Ok(commit)
}

/// Returns the ids of the kept evals, in name order.
pub fn list(git: &Git) -> Result<Vec<String>, KeptError> {
    Ok(git
        .refs_under(EVAL_REF_PREFIX)?
        .into_iter()
        .filter_map(|(name, _)| name.strip_prefix(EVAL_REF_PREFIX).map(str::to_string))
        .collect())
}

/// Returns the report kept for the eval `id`.
pub fn read(git: &Git, id: &str) -> Result<EvalReport, KeptError> {
    let refname = eval_ref(id);
    if id.is_empty() || git.resolve_commit(&refname)?.is_none() {
        return Err(KeptError::Unknown { id: id.to_string() });
    }
    let bytes = git
        .blob_at(&refname, RESULTS_FILE)?
        .ok_or_else(|| KeptError::Unreadable {
            refname: refname.clone(),
            why: "no such file in its commit".to_string(),
        })?;
    serde_json::from_slice(&bytes).map_err(|e| KeptError::Unreadable {
        refname,
        why: e.to_string(),
    })
}
