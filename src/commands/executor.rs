//! Where a run's packets run: `--executor` kept with the run (so a resumed run keeps it), else
//! `[executor] kind`, else here; and the executor built from it.

use std::path::PathBuf;

use git_orchestra::config::{ExecutorKind, RepoConfig};
use git_orchestra::engine::remote::ssh::SshExecutor;
use git_orchestra::git::RepoInfo;

use super::CommandError;

/// `--executor` as the command line takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecutorArg {
    /// In worktrees beside the repository (the default).
    Local,
    /// On the hosts of `[executor.ssh]`, through the user's ssh.
    Ssh,
}

impl ExecutorArg {
    pub fn kind(self) -> ExecutorKind {
        match self {
            ExecutorArg::Local => ExecutorKind::Local,
            ExecutorArg::Ssh => ExecutorKind::Ssh,
        }
    }
}

fn choice_file(repo: &RepoInfo, run: &str) -> PathBuf {
    git_orchestra::exec::run_dir(&repo.common_dir, run).join("executor")
}

/// Keeps `--executor <kind>` with run `run`.
fn remember(repo: &RepoInfo, run: &str, kind: ExecutorKind) -> Result<(), CommandError> {
    let path = choice_file(repo, run);
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir).map_err(CommandError::internal)?;
    }
    fs_err::write(&path, kind.as_str()).map_err(CommandError::internal)
}

/// Keeps where a run's packets run with the run when it was just created or `--executor`
/// was given, so that resuming it later does not depend on the configuration of that day.
pub(crate) fn keep(
    repo: &RepoInfo,
    prepared: &git_orchestra::engine::Prepared,
    given: bool,
    kind: ExecutorKind,
) -> Result<(), CommandError> {
    if given || prepared.created {
        remember(repo, &prepared.run.id, kind)?;
    }
    Ok(())
}

/// Returns where run `run`'s packets run: its `--executor`, else the configuration's.
pub(crate) fn kind_of(repo: &RepoInfo, config: &RepoConfig, run: Option<&str>) -> ExecutorKind {
    let kept = run
        .and_then(|r| fs_err::read_to_string(choice_file(repo, r)).ok())
        .and_then(|s| match s.trim() {
            "ssh" => Some(ExecutorKind::Ssh),
            "local" => Some(ExecutorKind::Local),
            _ => None,
        });
    kept.or(config.executor.kind).unwrap_or(ExecutorKind::Local)
}

/// Returns the executor of `kind` (`None` for local), or what is wrong with its configuration.
pub(crate) fn build(
    config: &RepoConfig,
    kind: ExecutorKind,
) -> Result<Option<SshExecutor>, CommandError> {
    match kind {
        ExecutorKind::Local => Ok(None),
        ExecutorKind::Ssh => SshExecutor::new(&config.executor.ssh)
            .map(Some)
            .map_err(|e| {
                CommandError::user(e).hint(
                    "README's \"Running packets on other machines\" shows an [executor.ssh] table",
                )
            }),
    }
}

/// Returns where the packets of a run started with `arg` (or found `existing`) run, checked:
/// its executor's configuration is complete and a worker command is there for it.
pub(crate) fn choose(
    repo: &RepoInfo,
    config: &RepoConfig,
    arg: Option<ExecutorArg>,
    existing: Option<&git_orchestra::store::RunRecord>,
    worker_cmd_given: bool,
) -> Result<ExecutorKind, CommandError> {
    let kind = match arg {
        Some(e) => e.kind(),
        None => kind_of(repo, config, existing.map(|r| r.id.as_str())),
    };
    build(config, kind)?;
    check_worker(
        kind,
        worker_cmd_given || existing.is_some_and(|r| r.worker_cmd.is_some()),
    )?;
    Ok(kind)
}

/// Returns where a new `start` run's packets run (`None` here), checked like `run`'s.
pub(crate) fn for_start(
    config: &RepoConfig,
    arg: Option<ExecutorArg>,
    worker_cmd_given: bool,
) -> Result<Option<ExecutorKind>, CommandError> {
    let kind = arg
        .map(ExecutorArg::kind)
        .or(config.executor.kind)
        .unwrap_or(ExecutorKind::Local);
    build(config, kind)?;
    check_worker(kind, worker_cmd_given)?;
    Ok((kind != ExecutorKind::Local).then_some(kind))
}

/// Checks that a run of `kind` can work its packets there: the ssh executor runs an external
/// worker command, not our agents.
pub(crate) fn check_worker(kind: ExecutorKind, has_worker_cmd: bool) -> Result<(), CommandError> {
    if kind == ExecutorKind::Ssh && !has_worker_cmd {
        return Err(CommandError::user(
            "the ssh executor runs packets with an external worker command, and this run has none",
        )
        .hint("pass --worker-cmd '<command>' (it runs on the host, in the packet's worktree), or --executor local"));
    }
    Ok(())
}
