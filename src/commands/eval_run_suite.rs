//! `git orchestra eval run <SUITE>`: the suite file's tasks made into an eval's tasks, each with
//! the repository it starts from and the check command that judges it.

use std::collections::BTreeMap;
use std::path::Path;

use git_orchestra::eval::Task;
use git_orchestra::eval::suite::{self, SuiteTask};
use git_orchestra::eval_run::journal::SuiteRecord;
use git_orchestra::git::RepoInfo;

use super::CommandError;

/// Returns the tasks of the suite file `path` (relative to `cwd`), every field checked; a bad
/// file is a user error naming the task and the field.
pub(super) fn read(
    cwd: &Path,
    path: &Path,
    repos_dir: Option<&Path>,
) -> Result<Vec<SuiteTask>, CommandError> {
    let repos_dir = repos_dir.map(|d| cwd.join(d));
    let repos = suite::Repos {
        dir: repos_dir.as_deref(),
    };
    suite::from_file(&cwd.join(path), &repos).map_err(CommandError::user)
}

/// Returns the repository an eval keeps its journal, attempts and results in: the one `cwd`
/// is in, else (a suite run from outside any repository) the first suite task's.
pub(super) fn home(cwd: &Path, suite: Option<&[SuiteTask]>) -> Result<RepoInfo, CommandError> {
    match (RepoInfo::discover(cwd), suite.and_then(|s| s.first())) {
        (Ok(repo), _) => Ok(repo),
        (Err(_), Some(first)) => Ok(RepoInfo::discover(&first.repo)?),
        (Err(e), None) => Err(e.into()),
    }
}

/// Returns what each suite task needs to be attempted and judged, by its id: its check
/// command is its own `check`, else `--test`, else its repository's `[eval] test` or detected
/// test command; a task left without one is a user error naming it.
pub(super) fn records(
    tasks: &[SuiteTask],
    test: Option<&str>,
) -> Result<BTreeMap<String, SuiteRecord>, CommandError> {
    let mut out = BTreeMap::new();
    for task in tasks {
        let repo = RepoInfo::discover(&task.repo)?;
        let config = super::load_config_quietly(&repo)?;
        let flag = task.check.as_deref().or(test);
        let command =
            super::eval::test_command(&repo, flag, config.eval.test.as_deref()).map_err(|e| {
                CommandError::user(format!("task `{}`: {}", task.id, e.message)).hint(
                    "give the task a `check`, or the eval a test command with `--test <COMMAND>`",
                )
            })?;
        out.insert(task.id.clone(), SuiteRecord::of(task, &command));
    }
    Ok(out)
}

/// Returns the eval task of a suite task: its `commit` is the task's id (a suite holds no
/// solution commit), which names its attempts in results.
pub(super) fn task(t: SuiteTask) -> Task {
    Task {
        commit: t.id,
        ..t.task
    }
}
