//! What `run`, `agent`, `start` and `resume` share about agent CLIs as workers: the `--agent`
//! choice kept with the run, so a resumed run keeps its CLI, and the worker built from it.

use std::path::PathBuf;

use git_orchestra::agent::cli::CliWorker;
use git_orchestra::config::RepoConfig;
use git_orchestra::git::RepoInfo;

use super::CommandError;

fn choice_file(repo: &RepoInfo, run: &str) -> PathBuf {
    git_orchestra::exec::RunDir::new(&repo.common_dir, run).agent_cli_choice()
}

/// Keeps `--agent <name>` with run `run`.
pub(crate) fn remember(repo: &RepoInfo, run: &str, name: &str) -> Result<(), CommandError> {
    let path = choice_file(repo, run);
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir).map_err(CommandError::internal)?;
    }
    fs_err::write(&path, name).map_err(CommandError::internal)
}

/// Returns the `--agent` run `run` was started with, if any.
pub(crate) fn chosen(repo: &RepoInfo, run: &str) -> Option<String> {
    fs_err::read_to_string(choice_file(repo, run))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Returns the agent CLI worker of `--agent <forced>` and the roles' `agent` settings, as
/// the command's error when a CLI named there is unknown.
pub(crate) fn cli_worker(
    repo: &RepoInfo,
    config: &RepoConfig,
    forced: Option<&str>,
) -> Result<CliWorker, CommandError> {
    CliWorker::new(&repo.toplevel, config.clone(), forced).map_err(|e| {
        CommandError::user(e).hint("`git orchestra agents` lists the agent CLIs it knows")
    })
}
