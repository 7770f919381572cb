//! Runs a candidate's check, each time in a scratch worktree removed afterwards: at the base
//! with the hidden tests taken from the commit, at the commit, and (when the check reports
//! per-test results) at the base alone, then judges the candidate from what they report.

use std::path::Path;

use orchestra_git::git::{ChangedFile, Git, GitError, RepoInfo};
use orchestra_sys::exec::process::{self, Outcome, Spec};

use super::results::{self, Results};
use super::{Check, EvalError, Reason};
use crate::gate::ScratchWorktree;

/// How the check ended in one checkout.
pub(super) enum Status {
    Passed,
    Failed,
    /// The checkout could not be prepared or the check could not run to an exit code.
    Broken(String),
}

/// What the check did in one checkout: how it ended and the per-test results it printed.
pub(super) struct Ran {
    pub status: Status,
    pub results: Results,
}

impl Ran {
    /// Returns a check that could not run, for `why`.
    fn broken(why: String) -> Self {
        Ran {
            status: Status::Broken(why),
            results: Results::new(),
        }
    }
}

/// What judging a candidate found.
#[derive(Debug, Default)]
pub(super) struct Judgement {
    /// Why the candidate is invalid; `None` when it is valid.
    pub reason: Option<Reason>,
    /// More about the reason.
    pub detail: Option<String>,
    /// Whether the check reported per-test results (else it was judged by exit status).
    pub per_test: bool,
    /// Tests failing or absent at the base with the hidden tests, passing at the commit.
    pub fail_to_pass: Vec<String>,
    /// Tests passing at the base that still pass at the commit.
    pub pass_to_pass: Vec<String>,
}

impl Judgement {
    /// Returns an invalid judgement for `reason` with `detail`.
    fn invalid(reason: Reason, detail: String) -> Self {
        Judgement {
            reason: Some(reason),
            detail: Some(detail),
            ..Judgement::default()
        }
    }
}

/// Returns the judgement of the candidate `base..commit` with hidden tests `hidden`: per test
/// when the check reports per-test results at the commit, else by its exit status (it must
/// fail at the base with the hidden tests and pass at the commit).
pub(super) fn judge(
    repo: &RepoInfo,
    base: &str,
    commit: &str,
    hidden: &[ChangedFile],
    check: &Check<'_>,
) -> Result<Judgement, EvalError> {
    let tests: Vec<String> = hidden
        .iter()
        .filter(|f| f.status != 'D')
        .map(|f| f.path.clone())
        .collect();
    let command = super::files::narrowed(check.command, &tests);
    let before = run_at(
        repo,
        base,
        &Prepare::TakeFiles(commit, hidden),
        &command,
        &tests,
        check,
    )?;
    if let Status::Broken(why) = before.status {
        return Ok(Judgement::invalid(Reason::SetupFailed, why));
    }
    let after = run_at(repo, commit, &Prepare::Nothing, &command, &tests, check)?;
    if let Status::Broken(why) = after.status {
        return Ok(Judgement::invalid(Reason::SetupFailed, why));
    }
    if after.results.is_empty() {
        return Ok(by_exit_status(&command, &before.status, &after.status));
    }
    // The tests passing at the base alone: the hidden test files that existed there, run the
    // way the check narrows; a narrowed check with none of them has nothing to run.
    let existing: Vec<String> = hidden
        .iter()
        .filter(|f| f.status == 'M')
        .map(|f| f.path.clone())
        .collect();
    let base_command = super::files::narrowed(check.command, &existing);
    let at_base = if existing.is_empty() && super::files::takes_paths(check.command) {
        Results::new()
    } else {
        let alone = run_at(
            repo,
            base,
            &Prepare::Nothing,
            &base_command,
            &existing,
            check,
        )?;
        if let Status::Broken(why) = alone.status {
            return Ok(Judgement::invalid(Reason::SetupFailed, why));
        }
        alone.results
    };
    Ok(per_test(
        &command,
        &before.results,
        &at_base,
        &after.results,
    ))
}

/// Returns the judgement by exit status alone: the check must fail at the base with the hidden
/// tests and pass at the commit.
fn by_exit_status(command: &str, before: &Status, after: &Status) -> Judgement {
    if matches!(before, Status::Passed) {
        return Judgement::invalid(
            Reason::TestsPassBefore,
            format!("`{command}` passes at the base with the tests added"),
        );
    }
    if !matches!(after, Status::Passed) {
        return Judgement::invalid(
            Reason::TestsFailAfter,
            format!("`{command}` fails at the commit"),
        );
    }
    Judgement::default()
}

/// Returns the judgement from per-test results: valid when some test fails (or is absent) at
/// the base with the hidden tests and passes at the commit, and no test passing at the base
/// alone fails at the commit.
fn per_test(command: &str, before: &Results, at_base: &Results, after: &Results) -> Judgement {
    let passes = |r: &Results, id: &str| r.get(id) == Some(&true);
    let fail_to_pass: Vec<String> = after
        .iter()
        .filter(|(id, p)| **p && !passes(before, id))
        .map(|(id, _)| id.clone())
        .collect();
    let pass_to_pass: Vec<String> = at_base
        .iter()
        .filter(|(id, p)| **p && passes(after, id))
        .map(|(id, _)| id.clone())
        .collect();
    let broken: Vec<&str> = at_base
        .iter()
        .filter(|(id, p)| **p && after.get(id.as_str()) == Some(&false))
        .map(|(id, _)| id.as_str())
        .collect();
    let mut judgement = Judgement {
        per_test: true,
        fail_to_pass,
        pass_to_pass,
        ..Judgement::default()
    };
    if !broken.is_empty() {
        judgement.reason = Some(Reason::BreaksPassingTests);
        judgement.detail = Some(format!(
            "passing at the base, failing at the commit: {}",
            broken.join(", ")
        ));
    } else if judgement.fail_to_pass.is_empty() {
        // Tests failing at the commit that did not already fail at the base alone are what
        // makes the commit fail its own tests; without any, the hidden tests passed before.
        let failing: Vec<&str> = after
            .iter()
            .filter(|(id, p)| !**p && at_base.get(id.as_str()) != Some(&false))
            .map(|(id, _)| id.as_str())
            .collect();
        let (reason, detail) = if failing.is_empty() {
            (
                Reason::TestsPassBefore,
                format!(
                    "no test of `{command}` fails at the base with the tests added and passes at the commit"
                ),
            )
        } else {
            (
                Reason::TestsFailAfter,
                format!("failing at the commit: {}", failing.join(", ")),
            )
        };
        judgement.reason = Some(reason);
        judgement.detail = Some(detail);
    }
    judgement
}

/// What is done in a scratch checkout before the check runs.
pub(super) enum Prepare<'a> {
    /// Nothing: the checkout as it is.
    Nothing,
    /// The hidden tests `files` taken from the commit given.
    TakeFiles(&'a str, &'a [ChangedFile]),
    /// A suite task's setup command run, then its test patch applied.
    Suite {
        setup: Option<&'a str>,
        patch: Option<&'a str>,
    },
    /// An attempt's landed tree judged: its test files `tests` put back as `base` has them
    /// (the attempt's own edits to them count for nothing), then as [`Prepare::Suite`].
    Attempt {
        base: &'a str,
        setup: Option<&'a str>,
        patch: Option<&'a str>,
    },
}

/// Runs `command` in a scratch worktree at `at`, prepared as `prepare` says, and returns how
/// it ended and the per-test results it printed. The worktree and the sandbox's temporary
/// files are removed afterwards, whatever happened.
pub(super) fn run_at(
    repo: &RepoInfo,
    at: &str,
    prepare: &Prepare<'_>,
    command: &str,
    tests: &[String],
    check: &Check<'_>,
) -> Result<Ran, EvalError> {
    let short = &at[..at.len().min(10)];
    let scratch = match ScratchWorktree::create(repo, at, &format!("eval-{short}")) {
        Ok(s) => s,
        Err(e) => return Ok(Ran::broken(e.to_string())),
    };
    let dir = scratch.path();
    let ran = match prepared(repo, dir, prepare, tests, check) {
        Ok(None) => execute(repo, dir, command, tests, check),
        Ok(Some(why)) => Ok(Ran::broken(why)),
        Err(e) => Err(e),
    };
    drop(scratch);
    ran
}

/// Prepares the checkout `dir` as `prepare` says; returns why it could not be prepared, or
/// `None` when it is ready.
fn prepared(
    repo: &RepoInfo,
    dir: &Path,
    prepare: &Prepare<'_>,
    tests: &[String],
    check: &Check<'_>,
) -> Result<Option<String>, EvalError> {
    match prepare {
        Prepare::Nothing => Ok(None),
        Prepare::TakeFiles(from, files) => Ok(Git::new(dir)
            .take_files_from(from, files)
            .err()
            .map(|e| format!("cannot add the hidden tests: {e}"))),
        Prepare::Suite { setup, patch } => {
            suite_ready(repo, dir, *setup, *patch, tests, check, "at the base")
        }
        Prepare::Attempt { base, setup, patch } => {
            if let Err(e) = restore_tests(dir, base, tests) {
                return Ok(Some(format!(
                    "cannot put the test files back as the base has them: {e}"
                )));
            }
            suite_ready(
                repo,
                dir,
                *setup,
                *patch,
                tests,
                check,
                "to the landed tree",
            )
        }
    }
}

/// Puts each of `tests` in the checkout `dir` back as `base` has it, removing those `base`
/// does not hold.
fn restore_tests(dir: &Path, base: &str, tests: &[String]) -> Result<(), GitError> {
    let git = Git::new(dir);
    let mut files = Vec::with_capacity(tests.len());
    for test in tests {
        let at_base = git.read_blob_ref(&format!("{base}:{test}"))?.is_some();
        files.push(ChangedFile {
            status: if at_base { 'M' } else { 'D' },
            path: test.clone(),
        });
    }
    git.take_files_from(base, &files)
}

/// Runs a suite task's setup command in `dir`, then applies its test patch; returns why that
/// failed (the patch not applying `place`), or `None` when the checkout is ready.
fn suite_ready(
    repo: &RepoInfo,
    dir: &Path,
    setup: Option<&str>,
    patch: Option<&str>,
    tests: &[String],
    check: &Check<'_>,
    place: &str,
) -> Result<Option<String>, EvalError> {
    if let Some(setup) = setup {
        let ran = execute(repo, dir, setup, tests, check)?;
        match ran.status {
            Status::Passed => {}
            Status::Failed => return Ok(Some(format!("the setup command `{setup}` failed"))),
            Status::Broken(why) => return Ok(Some(format!("the setup command `{setup}`: {why}"))),
        }
    }
    Ok(patch.and_then(|p| {
        Git::new(dir)
            .apply_patch(p)
            .err()
            .map(|e| format!("the test patch does not apply {place}: {e}"))
    }))
}

/// Runs `command` in `dir` under the check's sandbox and limits, with the hidden test files in
/// `ORCHESTRA_EVAL_TESTS`, and returns how it ended and the per-test results it printed.
fn execute(
    repo: &RepoInfo,
    dir: &Path,
    command: &str,
    tests: &[String],
    check: &Check<'_>,
) -> Result<Ran, EvalError> {
    let logs = orchestra_sys::exec::state_dir(&repo.common_dir).join("eval");
    fs_err::create_dir_all(&logs).map_err(|source| EvalError::Logs {
        path: logs.clone(),
        source,
    })?;
    let log = logs.join(format!(
        "check-{}-{}.log",
        std::process::id(),
        dir.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let env = [("ORCHESTRA_EVAL_TESTS".to_string(), tests.join("\n"))];
    let spec = Spec {
        command,
        dir,
        env: &env,
        log: &log,
        timeout: check.timeout,
        confine: check.confine,
    };
    let outcome = process::run(&spec, check.stop, &mut |_| {});
    let output = fs_err::read(&log)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let _ = fs_err::remove_file(&log);
    Ok(match outcome {
        Err(e) => Ran::broken(e.to_string()),
        Ok(o) => Ran {
            status: verdict(&o, check),
            results: results::parse(&output),
        },
    })
}

/// Returns what an outcome says: passed on exit 0, failed on another exit code, broken when
/// the check timed out or was killed (that says nothing about the tests).
fn verdict(outcome: &Outcome, check: &Check<'_>) -> Status {
    if outcome.success() {
        Status::Passed
    } else if outcome.exit_code.is_some() && !outcome.timed_out && outcome.denied.is_none() {
        Status::Failed
    } else {
        Status::Broken(format!("the check {}", outcome.describe(check.timeout)))
    }
}
