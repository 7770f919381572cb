//! Continuing a run: resume (from where it stopped) and retry (its failed or skipped packets
//! again), for both kinds of run; the frontend then drives what this prepared.

use std::time::Duration;

use crate::orchestrator::{self, StartJournal, StartRequest, WorkflowEvent};
use orchestra_core::config::RepoConfig;
use orchestra_core::engine;
use orchestra_core::merge;
use orchestra_core::store::{Event, Store};

use super::{Launch, Launched, LifecycleError, Run, RunKind, Verb};

/// What drives a run that continues.
#[derive(Debug)]
pub enum Restart {
    /// A `start` run: its whole workflow continues with the request it was started with.
    Workflow(Box<StartRequest>),
    /// A run the engine drives (`run`, `agent`).
    Engine,
}

/// What a retry reopened, and what drives the run on.
#[derive(Debug)]
pub struct Retried {
    /// The packets reopened (empty when a `start` run goes on from where it stopped).
    pub packets: Vec<String>,
    pub restart: Restart,
}

impl Run {
    /// Prepares the run to be resumed and returns what drives it. A run picked as the newest
    /// that has ended is refused; a named one is left to the engine to judge.
    pub fn resume(&self, config: &RepoConfig) -> Result<Restart, LifecycleError> {
        if self.kind == RunKind::Start && self.start_state().is_some() {
            return Ok(Restart::Workflow(Box::new(self.start_request(config)?)));
        }
        if self.picked {
            engine::check_resumable(&self.repo, &self.id)?;
        }
        Ok(Restart::Engine)
    }

    /// Resumes the run in a driver `launcher` starts; returns what it said.
    pub fn resume_with(&self, launcher: &dyn Launch) -> Result<Launched, LifecycleError> {
        launcher
            .launch(&self.id, Verb::Resume)
            .map_err(LifecycleError::Launch)
    }

    /// Retries the run in a driver `launcher` starts; returns what it said.
    pub fn retry_with(&self, launcher: &dyn Launch) -> Result<Launched, LifecycleError> {
        launcher
            .launch(&self.id, Verb::Retry)
            .map_err(LifecycleError::Launch)
    }

    /// Reopens the run's `packets` (default: every failed or skipped one) with `note` for their
    /// workers, and returns what drives the run on. A `start` run goes on through its own
    /// workflow; an engine run that was merged before is asked to merge again afterwards, the
    /// request journaled before the run reopens so a resume after a crash integrates too.
    pub fn retry(
        &self,
        config: &RepoConfig,
        packets: &[String],
        note: Option<&str>,
    ) -> Result<Retried, LifecycleError> {
        if self.start_state().is_some() {
            let packets = orchestrator::retry::reopen(&self.repo, &self.id, packets, note)?;
            let restart = Restart::Workflow(Box::new(self.start_request(config)?));
            return Ok(Retried { packets, restart });
        }
        if self.was_merged()? {
            let sandboxes =
                crate::agent::sandbox::command_sandboxes(self.common(), &config.sandbox);
            let mut store = Store::open(self.common())?;
            let before = merge::phase::last_request(&store, &self.id, &sandboxes)?;
            let opts = before.unwrap_or_else(|| merge::MergeOptions {
                timeout: config.timeout(None),
                keep_worktrees: config.keep_worktrees(),
                sandboxes,
                recycle_worktrees: config.recycle_worktrees(),
                ..Default::default()
            });
            merge::phase::request(&mut store, &self.id, &opts)?;
        }
        let packets = engine::reopen(&self.repo, &self.id, packets, note)?;
        Ok(Retried {
            packets,
            restart: Restart::Engine,
        })
    }

    /// Returns true if and only if the run was integrated before (`run --merge` or `merge`).
    fn was_merged(&self) -> Result<bool, LifecycleError> {
        let store = Store::open(self.common())?;
        let started =
            store.events_of_kind(&self.id, orchestra_core::store::EventKind::MergeStarted)?;
        Ok(started
            .iter()
            .any(|e| matches!(e.event, Event::MergeStarted { .. })))
    }

    /// Returns the request a `start` run was started with, rebuilt from its first event, with
    /// this configuration's limits. Fault injection is left off; a test frontend sets it.
    pub fn start_request(&self, config: &RepoConfig) -> Result<StartRequest, LifecycleError> {
        let j = StartJournal::open(self.common(), &self.id)?;
        let entries = j.entries()?;
        let Some(WorkflowEvent::Started {
            objective,
            settings,
            ..
        }) = entries.first().map(|e| e.event.clone())
        else {
            return Err(LifecycleError::NotStart {
                run: self.id.clone(),
                what: "resumes its workflow".into(),
            });
        };
        Ok(StartRequest {
            objective,
            settings,
            timeout: config.timeout(None),
            worktree_root: config.worktree_root(None, &self.repo.toplevel),
            setup: config.worktree.setup.clone(),
            target: None,
            crash_after_events: None,
            crash_after_steps: None,
            answer_wait: Duration::from_secs(3600),
            fix_rounds: config.fix_rounds(),
        })
    }
}

impl Run {
    /// Returns the engine's record of the run `id` if the repository has one, for a frontend
    /// about to create or continue it.
    pub fn existing(
        repo: &orchestra_git::git::RepoInfo,
        id: &str,
    ) -> Result<Option<orchestra_core::store::RunRecord>, LifecycleError> {
        Run::at(repo, id, false).record()
    }

    /// Journals that the run `id` is to be integrated with `opts` once its packets are final,
    /// before any of them runs: a resume after a crash or Ctrl-C integrates too.
    pub fn request_merge(
        repo: &orchestra_git::git::RepoInfo,
        id: &str,
        opts: &merge::MergeOptions,
    ) -> Result<(), LifecycleError> {
        let mut store = Store::open(&repo.common_dir)?;
        merge::phase::request(&mut store, id, opts)?;
        Ok(())
    }
}
