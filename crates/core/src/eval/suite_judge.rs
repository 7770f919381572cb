//! Judges an attempt at a suite task on the tree it landed: in a scratch checkout of that tree,
//! the task's test files are put back as the base has them (an attempt's edits to them count
//! for nothing), its setup command runs, its test patch is applied, and its check runs.
//!
//! A task naming FAIL_TO_PASS tests is resolved when the check reports every one of them
//! passing and none of its PASS_TO_PASS tests failing (a PASS_TO_PASS test the narrowed check
//! does not run is not held against it); a task naming none is resolved when the check exits 0.

use orchestra_git::git::RepoInfo;

use super::check::{Prepare, Status, run_at};
use super::suite::SuiteTask;
use super::{Check, EvalError};

/// How an attempt at a suite task was judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuiteVerdict {
    /// The task is resolved.
    Passed,
    /// The check ran and the task is not resolved; the detail says which tests failed.
    Failed(Option<String>),
    /// The checkout could not be prepared (setup, test patch) or the check did not run to an
    /// exit code.
    Broken { timed_out: bool, detail: String },
}

/// Returns the verdict on `landed` (a commit of `attempt`, the attempt's repository) for
/// `task`, run with `check` (its command the task's own). The scratch checkout is removed
/// afterwards.
pub fn judge_attempt(
    attempt: &RepoInfo,
    landed: &str,
    task: &SuiteTask,
    check: &Check<'_>,
) -> Result<SuiteVerdict, EvalError> {
    let Some(base) = task.task.base.as_deref() else {
        return Ok(SuiteVerdict::Broken {
            timed_out: false,
            detail: "the task has no base".to_string(),
        });
    };
    let tests = &task.task.tests;
    let command = super::files::narrowed(check.command, tests);
    let prepare = Prepare::Attempt {
        base,
        setup: task.setup.as_deref(),
        patch: task.test_patch.as_deref(),
    };
    let ran = run_at(attempt, landed, &prepare, &command, tests, check)?;
    if let Status::Broken(why) = ran.status {
        return Ok(SuiteVerdict::Broken {
            timed_out: why.contains("timed out"),
            detail: why,
        });
    }
    let t = &task.task;
    if t.fail_to_pass.is_empty() {
        return Ok(match ran.status {
            Status::Passed => SuiteVerdict::Passed,
            _ => SuiteVerdict::Failed(None),
        });
    }
    let not_passing: Vec<&str> = t
        .fail_to_pass
        .iter()
        .filter(|id| ran.results.get(*id) != Some(&true))
        .map(String::as_str)
        .collect();
    let broken: Vec<&str> = t
        .pass_to_pass
        .iter()
        .filter(|id| ran.results.get(*id) == Some(&false))
        .map(String::as_str)
        .collect();
    Ok(match (not_passing.is_empty(), broken.is_empty()) {
        (true, true) => SuiteVerdict::Passed,
        (false, _) => SuiteVerdict::Failed(Some(format!(
            "FAIL_TO_PASS tests not passing: {}",
            not_passing.join(", ")
        ))),
        (true, false) => SuiteVerdict::Failed(Some(format!(
            "PASS_TO_PASS tests failing: {}",
            broken.join(", ")
        ))),
    })
}
