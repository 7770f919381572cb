//! The composition root of a run's packets: the agent CLIs by role, the packet reviewer and
//! the executor, assembled in one place for every front end that drives packets (`run`,
//! `agent` and `resume` in the terminal, the `start` workflow), so they agree on which
//! reviewer wins and which worker a packet goes to.
//!
//! Our own agents (the worker and the reviewer role's model) are built by each front end with
//! its person, gates and budget, and handed in here.

use orchestra_core::config::{ExecutorKind, RepoConfig};
use orchestra_core::engine::{DEFAULT_FIX_ROUNDS, Executor, PacketReview, Worker};
use orchestra_core::gate::Reviewer;
use orchestra_git::git::RepoInfo;

use crate::agent::cli::{AdapterError, CliReviewer, CliWorker, Routed};

/// Why a run's crew could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum CrewError {
    /// An agent CLI named by `--agent` or a role's `agent` is unknown or misconfigured.
    #[error(transparent)]
    AgentCli(#[from] AdapterError),
    /// The executor's configuration is incomplete.
    #[error("{0}")]
    Executor(String),
}

/// The agent CLIs, the packet reviewer they may provide and the executor a run's packets go
/// to.
pub struct Crew {
    /// The agent CLIs of `--agent` and the roles' `agent` settings.
    cli: CliWorker,
    /// `[roles.reviewer] agent`: the CLI that reviews packets instead of the role's model.
    cli_reviewer: Option<CliReviewer>,
    /// Where packets run: `None` here, beside the repository.
    executor: Option<Box<dyn Executor>>,
    /// Whether the run's packets go to an external worker command (`--worker-cmd`).
    worker_cmd: bool,
}

impl Crew {
    /// Assembles the crew of a run from `config`: the agent CLIs of `forced` (`--agent`) and
    /// the roles' `agent` settings, `[roles.reviewer] agent`, and the executor of `executor`
    /// (`None` or local: here); `worker_cmd` says the run's packets go to an external command.
    pub fn assemble(
        repo: &RepoInfo,
        config: &RepoConfig,
        forced: Option<&str>,
        executor: Option<ExecutorKind>,
        worker_cmd: bool,
    ) -> Result<Crew, CrewError> {
        let cli = CliWorker::in_repo(repo, config.clone(), forced)?;
        let cli_reviewer = CliReviewer::configured(config)?;
        let executor = match executor {
            Some(kind) => executor_of(config, repo, kind).map_err(CrewError::Executor)?,
            None => None,
        };
        Ok(Crew {
            cli,
            cli_reviewer,
            executor,
            worker_cmd,
        })
    }

    /// Returns this crew with its agent CLIs stopped mid-packet once what they reported
    /// reaches `limit` (an eval arm's `tokens=`/`budget=`).
    pub fn with_cli_limit(
        mut self,
        limit: std::sync::Arc<crate::agent::limit::SpendLimit>,
    ) -> Crew {
        self.cli = self.cli.with_limit(limit);
        self
    }

    /// Returns this crew with its agent CLIs resuming, in a fix round, the sessions an
    /// earlier process kept (landing's fix rounds come after the run ended).
    pub fn continuing_kept(mut self) -> Crew {
        self.cli = self.cli.continuing_kept();
        self
    }

    /// Returns the review of every packet after validation: `[roles.reviewer] agent`'s CLI
    /// when one is configured, else `model` (the reviewer role's model), if any.
    pub fn review<'a>(
        &'a self,
        model: Option<&'a (dyn Reviewer + Sync)>,
    ) -> Option<PacketReview<'a>> {
        let reviewer = match &self.cli_reviewer {
            Some(cli) => cli as &(dyn Reviewer + Sync),
            None => model?,
        };
        Some(PacketReview {
            reviewer,
            max_rounds: DEFAULT_FIX_ROUNDS,
        })
    }

    /// Returns the executor packets run on; `None` runs them here.
    pub fn executor(&self) -> Option<&dyn Executor> {
        self.executor.as_deref()
    }

    /// Returns the workers of the run's packets: roles with an agent CLI (every role with
    /// `--agent`) go to it, the others to `ours` (our agents); none when an external worker
    /// command works them.
    pub fn workers<'a>(&'a self, ours: Option<&'a dyn Worker>) -> Workers<'a> {
        Workers {
            routed: self.cli.routed(ours),
            ours,
            via_cli: self.cli.any(),
            worker_cmd: self.worker_cmd,
        }
    }
}

/// The workers a run's packets go to (see [`Crew::workers`]).
pub struct Workers<'a> {
    routed: Routed<'a>,
    ours: Option<&'a dyn Worker>,
    via_cli: bool,
    worker_cmd: bool,
}

impl Workers<'_> {
    /// Returns the in-process worker the engine hands packets to; `None` when the run's
    /// external worker command does the work.
    pub fn worker(&self) -> Option<&dyn Worker> {
        match (self.worker_cmd, self.via_cli) {
            (true, _) => None,
            (false, true) => Some(&self.routed),
            (false, false) => self.ours,
        }
    }
}

/// Returns the executor of `kind` for `repo` (`None` for local), or what is wrong with its
/// configuration: the one place executors are built.
pub fn executor_of(
    config: &RepoConfig,
    repo: &RepoInfo,
    kind: ExecutorKind,
) -> Result<Option<Box<dyn Executor>>, String> {
    crate::executor::build(config, repo, kind)
}
