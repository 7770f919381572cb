//! Judges an attempt: the task's hidden tests (the task commit's versions of its test files,
//! read from the source repository) are written over the tree the arm landed, in a scratch
//! checkout of the attempt repository, and the check runs there.
//!
//! The hidden tests replace whatever the attempt left in those files, so an agent that
//! rewrites a test to pass trivially gets no credit; test files the task deletes are removed.

use std::path::Path;

use orchestra_core::eval::suite::SuiteTask;
use orchestra_core::eval::suite_judge::{self, SuiteVerdict};
use orchestra_core::eval::{Check, Task, files};
use orchestra_core::gate::ScratchWorktree;
use orchestra_git::git::RepoInfo;
use orchestra_sys::exec::process::{self, Spec};

/// How the check ended on the landed tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// It exited 0: the attempt is resolved.
    Passed,
    /// It exited with another code, or (per test) some hidden test did not pass; the detail
    /// says which when known.
    Failed(Option<String>),
    /// It timed out, was killed, or the checkout could not be prepared.
    Broken { timed_out: bool, detail: String },
}

/// Returns how `check` ends on `landed` (a commit of `attempt`) with `task`'s hidden tests from
/// `source` written over it.
pub(super) fn judge(
    source: &RepoInfo,
    attempt: &RepoInfo,
    landed: &str,
    task: &Task,
    check: &Check<'_>,
) -> Verdict {
    let broken = |detail: String| Verdict::Broken {
        timed_out: false,
        detail,
    };
    let scratch = match ScratchWorktree::create(attempt, landed, "eval-check") {
        Ok(s) => s,
        Err(e) => return broken(e.to_string()),
    };
    if let Err(detail) = write_hidden(source, task, scratch.path()) {
        return broken(detail);
    }
    let present: Vec<String> = task
        .tests
        .iter()
        .filter(|t| scratch.path().join(t).exists())
        .cloned()
        .collect();
    let command = files::narrowed(check.command, &present);
    let log = orchestra_sys::exec::state_dir(&attempt.common_dir)
        .join("eval")
        .join("check.log");
    let env = [("ORCHESTRA_EVAL_TESTS".to_string(), present.join("\n"))];
    let spec = Spec {
        command: &command,
        dir: scratch.path(),
        env: &env,
        log: &log,
        timeout: check.timeout,
        confine: check.confine,
    };
    match process::run(&spec, check.stop, &mut |_| {}) {
        Err(e) => broken(e.to_string()),
        Ok(o) if o.success() => Verdict::Passed,
        Ok(o) if o.exit_code.is_some() && !o.timed_out && o.denied.is_none() => {
            Verdict::Failed(None)
        }
        Ok(o) => Verdict::Broken {
            timed_out: o.timed_out,
            detail: format!("the check {}", o.describe(check.timeout)),
        },
    }
}

/// Writes each of the task's hidden test files into `dir` as the task commit has it, removing
/// those the commit deletes; the error says which could not be written.
fn write_hidden(source: &RepoInfo, task: &Task, dir: &Path) -> Result<(), String> {
    let git = source.git();
    for test in task.tests.iter().filter(|t| files::is_test_file(t)) {
        let path = dir.join(test);
        let blob = git
            .read_blob_ref(&format!("{}:{test}", task.commit))
            .map_err(|e| format!("cannot read the hidden test {test}: {e}"))?;
        match blob {
            Some(bytes) => {
                if let Some(parent) = path.parent() {
                    fs_err::create_dir_all(parent).map_err(|e| e.to_string())?;
                }
                fs_err::write(&path, bytes).map_err(|e| e.to_string())?;
            }
            None if path.exists() => fs_err::remove_file(&path).map_err(|e| e.to_string())?,
            None => {}
        }
    }
    Ok(())
}

/// Returns how the suite task `task`'s check ends on `landed` (a commit of `attempt`): its test
/// files put back as its base has them, its setup run and its test patch applied over it (see
/// [`suite_judge`]). The check's command is the task's own.
pub(super) fn judge_suite(
    attempt: &RepoInfo,
    landed: &str,
    task: &SuiteTask,
    check: &Check<'_>,
) -> Verdict {
    let command = task.check.as_deref().unwrap_or(check.command);
    let check = Check { command, ..*check };
    match suite_judge::judge_attempt(attempt, landed, task, &check) {
        Err(e) => Verdict::Broken {
            timed_out: false,
            detail: e.to_string(),
        },
        Ok(SuiteVerdict::Passed) => Verdict::Passed,
        Ok(SuiteVerdict::Failed(detail)) => Verdict::Failed(detail),
        Ok(SuiteVerdict::Broken { timed_out, detail }) => Verdict::Broken { timed_out, detail },
    }
}
