//! The executors: where a packet's work runs when not beside the repository — on hosts over
//! `ssh`, or in GitHub Actions runs. Each implements the engine's [`Executor`] seam, as the
//! agents implement its `Worker`, so the engine knows neither ssh nor the forge's API.
//!
//! This module sits above the engine (and the forge, whose API the Actions executor calls);
//! the orchestrator and the commands build an executor here and hand it to the engine.

pub mod actions;
pub mod ssh;

use orchestra_core::config::{ExecutorKind, RepoConfig};
use orchestra_core::engine::Executor;
use orchestra_git::git::RepoInfo;

/// Returns the executor of `kind` for `repo` (`None` for local), or what is wrong with its
/// configuration.
pub fn build(
    config: &RepoConfig,
    repo: &RepoInfo,
    kind: ExecutorKind,
) -> Result<Option<Box<dyn Executor>>, String> {
    Ok(match kind {
        ExecutorKind::Local => None,
        ExecutorKind::Ssh => Some(Box::new(ssh::SshExecutor::new(&config.executor.ssh)?)),
        ExecutorKind::GithubActions => Some(Box::new(actions::ActionsExecutor::new(
            &config.executor.github_actions,
            repo,
        )?)),
    })
}
