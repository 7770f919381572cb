//! Checks a suite task the way a mined candidate is checked at its base: in a scratch checkout
//! of the base, after the setup command and with the test patch applied, the task's tests must
//! fail (per test: no FAIL_TO_PASS test passes, no PASS_TO_PASS test fails).
//!
//! A suite holds no solution, so the second half of a mined candidate's check (the tests pass
//! at the commit) has nothing to run against; the suite's FAIL_TO_PASS and PASS_TO_PASS lists
//! are its author's claim about the solution.

use orchestra_git::git::RepoInfo;

use super::check::{Prepare, Status, run_at};
use super::suite::SuiteTask;
use super::{Check, EvalError, Reason};

/// Judges `task` in `repo` (its repository) by running `check` at its base, and records the
/// verdict in `task.task` (`valid`, `reason`, `detail`). The repository's refs, branches and
/// working tree are left as they were.
pub fn check_suite_task(
    repo: &RepoInfo,
    task: &mut SuiteTask,
    check: &Check<'_>,
) -> Result<(), EvalError> {
    let Some(base) = task.task.base.clone() else {
        return Ok(());
    };
    let tests = task.task.tests.clone();
    let command = super::files::narrowed(check.command, &tests);
    let prepare = Prepare::Suite {
        setup: task.setup.as_deref(),
        patch: task.test_patch.as_deref(),
    };
    let ran = run_at(repo, &base, &prepare, &command, &tests, check)?;
    let t = &mut task.task;
    let passes = |id: &String| ran.results.get(id) == Some(&true);
    let fails = |id: &String| ran.results.get(id) == Some(&false);
    let (reason, detail) = match ran.status {
        Status::Broken(why) => (Some(Reason::SetupFailed), Some(why)),
        _ if !ran.results.is_empty() && !t.fail_to_pass.is_empty() => {
            let passing: Vec<&str> = t
                .fail_to_pass
                .iter()
                .filter(|id| passes(id))
                .map(String::as_str)
                .collect();
            let failing: Vec<&str> = t
                .pass_to_pass
                .iter()
                .filter(|id| fails(id))
                .map(String::as_str)
                .collect();
            if !passing.is_empty() {
                (
                    Some(Reason::TestsPassBefore),
                    Some(format!(
                        "FAIL_TO_PASS tests pass at the base: {}",
                        passing.join(", ")
                    )),
                )
            } else if !failing.is_empty() {
                (
                    Some(Reason::SetupFailed),
                    Some(format!(
                        "PASS_TO_PASS tests fail at the base: {}",
                        failing.join(", ")
                    )),
                )
            } else {
                (None, None)
            }
        }
        Status::Passed => (
            Some(Reason::TestsPassBefore),
            Some(format!(
                "`{command}` passes at the base with the tests added"
            )),
        ),
        Status::Failed => (None, None),
    };
    t.valid = reason.is_none();
    t.reason = reason;
    t.detail = detail;
    Ok(())
}
