//! The verbs of a run's life in one library API — open, status, pause, cancel, answer,
//! comment, approve, retry, resume, finish — that every frontend calls, whatever drove the run.
//!
//! Two kinds of run exist: `run`/`agent` runs the engine drives (their journal is the store's
//! `events`) and `start` runs (their workflow journal, driver lock and pid). [`Run`] hides the
//! difference: a frontend opens a run and calls a verb; the verb dispatches on [`Run::kind`].
//! Frontends parse and render; they never open a journal or the store themselves.

mod answer;
mod controls;
mod error;
mod finish;
mod land;
mod launch;
mod restart;
mod settings;
mod steer;
mod stop;
mod view;

use std::path::Path;

use crate::status::{self, StatusError};
use orchestra_core::store::{PacketRecord, RunRecord, Store, StoreError};
use orchestra_git::git::RepoInfo;

pub use crate::status::RunKind;
pub use controls::{Control, PlanRound, Planning};
pub use error::LifecycleError;
pub use finish::report_notes;
pub use launch::{Launch, Launched, Verb};
pub use restart::{Restart, Retried};
pub use settings::Settings;
pub use steer::Comment;
pub use stop::Cancelled;
pub use view::{GateEntry, Gates};

/// Which run an action names: one by its id, or the newest one `status` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunRef {
    /// The run with this id.
    Id(String),
    /// The newest run of the repository, exactly as `git orchestra status` shows it.
    Latest,
}

impl RunRef {
    /// Returns `Id(run)` when a run is named, else `Latest`.
    pub fn from_arg(run: Option<&str>) -> RunRef {
        match run {
            Some(id) => RunRef::Id(id.to_string()),
            None => RunRef::Latest,
        }
    }
}

/// One run of a repository, opened to act on it or to read it.
#[derive(Debug, Clone)]
pub struct Run {
    repo: RepoInfo,
    id: String,
    kind: RunKind,
    /// True when the run was picked as the newest rather than named.
    picked: bool,
}

impl Run {
    /// Opens the run `which` names in `repo`: an unknown id is [`LifecycleError::UnknownRun`],
    /// no run at all [`LifecycleError::NoRun`].
    pub fn open(repo: &RepoInfo, which: RunRef) -> Result<Run, LifecycleError> {
        let named = match &which {
            RunRef::Id(id) => Some(id.as_str()),
            RunRef::Latest => None,
        };
        let id = status::pick_run(&repo.common_dir, named).map_err(|e| match e {
            StatusError::NoRun => LifecycleError::NoRun,
            StatusError::Store(StoreError::UnknownRun { id }) => LifecycleError::UnknownRun { id },
            other => LifecycleError::Status(other),
        })?;
        Ok(Run::at(repo, &id, named.is_none()))
    }

    /// Returns the run `id` as it is, without checking that it exists.
    fn at(repo: &RepoInfo, id: &str, picked: bool) -> Run {
        let kind = if is_start_run(&repo.common_dir, id) {
            RunKind::Start
        } else {
            RunKind::Run
        };
        Run {
            repo: repo.clone(),
            id: id.to_string(),
            kind,
            picked,
        }
    }

    /// Returns the run's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Returns which command made the run.
    pub fn kind(&self) -> RunKind {
        self.kind
    }

    /// Returns true if and only if the run was picked as the newest rather than named.
    pub fn picked(&self) -> bool {
        self.picked
    }

    /// Returns the repository the run belongs to.
    pub fn repo(&self) -> &RepoInfo {
        &self.repo
    }

    fn common(&self) -> &Path {
        &self.repo.common_dir
    }

    /// Returns the `start` state (phase, objective) when this is a `start` run with one.
    pub fn start_state(&self) -> Option<status::StartState> {
        status::start_state(self.common(), &self.id)
    }

    /// Returns the engine's record of the run, when the engine has one (a `start` run still
    /// planning has none).
    pub fn record(&self) -> Result<Option<RunRecord>, LifecycleError> {
        match Store::open_existing(self.common())? {
            Some(store) => Ok(store.run(&self.id)?),
            None => Ok(None),
        }
    }

    /// Returns the run's packets as the engine records them (none while it plans).
    pub fn packets(&self) -> Result<Vec<PacketRecord>, LifecycleError> {
        match Store::open_existing(self.common())? {
            Some(store) if store.run(&self.id)?.is_some() => Ok(store.packets(&self.id)?),
            _ => Ok(Vec::new()),
        }
    }

    /// Returns the run as `status` shows it, with prices from `prices`.
    pub fn status(
        &self,
        prices: &dyn Fn(&str) -> Option<orchestra_core::config::Price>,
    ) -> Result<status::Overview, LifecycleError> {
        Ok(status::overview(self.common(), Some(&self.id), prices)?)
    }

    /// Checks the run has packets: a `start` run still planning has none to show, merge or
    /// publish yet, and is named as such ([`LifecycleError::NoPacketsYet`]).
    pub fn require_packets(self) -> Result<Run, LifecycleError> {
        if self.record()?.is_some() {
            return Ok(self);
        }
        let phase = self
            .start_state()
            .map_or_else(|| "planning".to_string(), |s| s.phase.to_string());
        Err(LifecycleError::NoPacketsYet {
            run: self.id.clone(),
            phase,
        })
    }
}

/// Returns true if and only if `run` has a workflow journal (it was made by `start`).
fn is_start_run(common: &Path, run: &str) -> bool {
    crate::orchestrator::StartJournal::runs(common)
        .map(|ids| ids.iter().any(|i| i == run))
        .unwrap_or(false)
}

impl Run {
    /// Returns the run `listing` names, as [`status::all_runs`] listed it: a run known to
    /// exist, opened without looking it up again.
    pub fn listed(repo: &RepoInfo, listing: &status::RunListing) -> Run {
        Run {
            repo: repo.clone(),
            id: listing.id.clone(),
            kind: listing.kind,
            picked: false,
        }
    }
}
