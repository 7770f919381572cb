//! `git orchestra retry` of a `start` run: a completed run's failed or skipped packets go back
//! to pending and the workflow back to execution, so the next drive runs them with the run's
//! agents, then integrates and reports as the run was asked to.

use super::driver::{StartError, driver_lock};
use super::start_journal::{StartJournal, WorkflowEvent};
use super::workflow::WorkflowState as S;
use orchestra_core::engine;
use orchestra_git::git::RepoInfo;

/// Why a `start` run cannot be retried as it stands.
#[derive(Debug, thiserror::Error)]
pub enum RetryRefused {
    #[error("run `{run}` is {state}; `git orchestra resume {run}` continues it where it stopped")]
    Unfinished { run: String, state: S },
    #[error("run `{run}` was cancelled; start the objective again for a new run")]
    Cancelled { run: String },
}

/// Reopens the `start` run `run` for `packets` (empty: every failed or skipped one) with a
/// `note` for their agents, and moves its workflow back to execution; returns the packets
/// reopened. The models are asked again (the turns that led to the failures are not replayed).
/// A run that stopped before execution (its planning failed) keeps its phase: the note is
/// journaled for the planner and no packet is reopened (an empty list); the caller resumes it.
/// Nothing changes when an error is returned.
pub fn reopen(
    repo: &RepoInfo,
    run: &str,
    packets: &[String],
    note: Option<&str>,
) -> Result<Vec<String>, StartError> {
    // Nobody drives the run meanwhile.
    let _driver = driver_lock(repo, run)?;
    let journal = StartJournal::open(&repo.common_dir, run)?;
    let mut workflow = journal.workflow()?;
    match workflow.state() {
        S::Completed => {}
        S::Cancelled => return Err(RetryRefused::Cancelled { run: run.into() }.into()),
        // Stopped before execution (planning failed, say): the note goes to the planner and
        // the run goes on where it stopped, asking the models again.
        S::Failed | S::Paused
            if workflow.resume_target().is_some_and(|s| {
                matches!(
                    s,
                    S::Clarifying | S::Planning | S::PlanReview | S::PlanRevision
                )
            }) =>
        {
            if let Some(note) = note.map(str::trim).filter(|n| !n.is_empty()) {
                journal.append(&WorkflowEvent::Noted { note: note.into() })?;
            }
            journal.append(&WorkflowEvent::ReplayEpochEnded {
                reason: "retry".into(),
            })?;
            return Ok(Vec::new());
        }
        state => {
            return Err(RetryRefused::Unfinished {
                run: run.into(),
                state,
            }
            .into());
        }
    }
    let reopened = engine::reopen(repo, run, packets, note)?;
    journal.append(&WorkflowEvent::ReplayEpochEnded {
        reason: format!("retry of {}", reopened.join(", ")),
    })?;
    journal.transition(
        &mut workflow,
        S::Executing,
        &format!("retry of {}", reopened.join(", ")),
    )?;
    Ok(reopened)
}
