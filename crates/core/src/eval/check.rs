//! Runs a candidate's check twice, each time in a scratch worktree removed afterwards: at the
//! base with the hidden tests taken from the commit (it must fail), then at the commit (it must
//! pass).

use orchestra_git::git::{ChangedFile, Git, RepoInfo};
use orchestra_sys::exec::process::{self, Outcome, Spec};

use super::{Check, EvalError, Reason};
use crate::gate::ScratchWorktree;

/// What the check did in one checkout.
enum Ran {
    Passed,
    Failed,
    /// The checkout could not be prepared or the check could not run to an exit code.
    Broken(String),
}

/// Returns why the candidate `base..commit` with hidden tests `hidden` is invalid, with a
/// detail, or `(None, None)` when the check fails before and passes after.
pub(super) fn judge(
    repo: &RepoInfo,
    base: &str,
    commit: &str,
    hidden: &[ChangedFile],
    check: &Check<'_>,
) -> Result<(Option<Reason>, Option<String>), EvalError> {
    let tests: Vec<String> = hidden
        .iter()
        .filter(|f| f.status != 'D')
        .map(|f| f.path.clone())
        .collect();
    let command = super::files::narrowed(check.command, &tests);
    let before = run_at(repo, base, Some((commit, hidden)), &command, &tests, check)?;
    match before {
        Ran::Passed => {
            return Ok((
                Some(Reason::TestsPassBefore),
                Some(format!(
                    "`{command}` passes at the base with the tests added"
                )),
            ));
        }
        Ran::Broken(why) => return Ok((Some(Reason::SetupFailed), Some(why))),
        Ran::Failed => {}
    }
    match run_at(repo, commit, None, &command, &tests, check)? {
        Ran::Passed => Ok((None, None)),
        Ran::Failed => Ok((
            Some(Reason::TestsFailAfter),
            Some(format!("`{command}` fails at the commit")),
        )),
        Ran::Broken(why) => Ok((Some(Reason::SetupFailed), Some(why))),
    }
}

/// Runs `command` in a scratch worktree at `at` (with `files` taken from another commit when
/// given) and returns how it ended.
fn run_at(
    repo: &RepoInfo,
    at: &str,
    files: Option<(&str, &[ChangedFile])>,
    command: &str,
    tests: &[String],
    check: &Check<'_>,
) -> Result<Ran, EvalError> {
    let short = &at[..at.len().min(10)];
    let scratch = match ScratchWorktree::create(repo, at, &format!("eval-{short}")) {
        Ok(s) => s,
        Err(e) => return Ok(Ran::Broken(e.to_string())),
    };
    if let Some((from, files)) = files
        && let Err(e) = Git::new(scratch.path()).take_files_from(from, files)
    {
        return Ok(Ran::Broken(format!("cannot add the hidden tests: {e}")));
    }
    let logs = orchestra_sys::exec::state_dir(&repo.common_dir).join("eval");
    fs_err::create_dir_all(&logs).map_err(|source| EvalError::Logs {
        path: logs.clone(),
        source,
    })?;
    let log = logs.join(format!("check-{}-{short}.log", std::process::id()));
    let env = [("ORCHESTRA_EVAL_TESTS".to_string(), tests.join("\n"))];
    let spec = Spec {
        command,
        dir: scratch.path(),
        env: &env,
        log: &log,
        timeout: check.timeout,
        confine: check.confine,
    };
    let outcome = process::run(&spec, check.stop, &mut |_| {});
    let _ = fs_err::remove_file(&log);
    let name = scratch
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    drop(scratch);
    if let Some(name) = name {
        remove_private_tmp(&repo.common_dir, &name);
    }
    Ok(match outcome {
        Err(e) => Ran::Broken(e.to_string()),
        Ok(o) => verdict(&o, check),
    })
}

/// Removes the private temporary directories the sandbox made for the scratch checkout named
/// `name` (`<state>/tmp/<name>-<hash>`): a check leaves nothing behind. Scratch names end in a
/// unique counter, so `<name>-` names only that checkout's.
fn remove_private_tmp(common_dir: &std::path::Path, name: &str) {
    let tmp = orchestra_sys::exec::state_dir(common_dir).join("tmp");
    let Ok(entries) = fs_err::read_dir(&tmp) else {
        return;
    };
    let prefix = format!("{name}-");
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = fs_err::remove_dir_all(entry.path());
        }
    }
}

/// Returns what an outcome says: passed on exit 0, failed on another exit code, broken when
/// the check timed out or was killed (that says nothing about the tests).
fn verdict(outcome: &Outcome, check: &Check<'_>) -> Ran {
    if outcome.success() {
        Ran::Passed
    } else if outcome.exit_code.is_some() && !outcome.timed_out && outcome.denied.is_none() {
        Ran::Failed
    } else {
        Ran::Broken(format!("the check {}", outcome.describe(check.timeout)))
    }
}
