//! What `run`, `agent`, `start` and `resume` share about agent CLIs as workers: the `--agent`
//! choice kept with the run, so a resumed run keeps its CLI, and the worker built from it.

use git_orchestra::agent::cli::CliWorker;
use git_orchestra::config::RepoConfig;
use git_orchestra::git::RepoInfo;
use git_orchestra::run::Run;

use super::CommandError;

/// Keeps `--agent <name>` with run `run`.
pub(crate) fn remember(repo: &RepoInfo, run: &str, name: &str) -> Result<(), CommandError> {
    Run::keep_agent_cli(repo, run, name).map_err(super::lifecycle_error)
}

/// Returns the `--agent` run `run` was started with, if any.
pub(crate) fn chosen(repo: &RepoInfo, run: &str) -> Option<String> {
    Run::settings_of(repo, run).ok()?.agent_cli
}

/// Returns the agent CLI worker of `--agent <forced>` and the roles' `agent` settings, as
/// the command's error when a CLI named there is unknown.
pub(crate) fn cli_worker(
    repo: &RepoInfo,
    config: &RepoConfig,
    forced: Option<&str>,
) -> Result<CliWorker, CommandError> {
    CliWorker::in_repo(repo, config.clone(), forced).map_err(|e| {
        CommandError::user(e).hint("`git orchestra agents` lists the agent CLIs it knows")
    })
}
