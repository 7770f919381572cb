//! The seam through which the engine integrates a run that was asked to be merged: the
//! request is a journaled event (`integration_requested`, written by the merge module before
//! the run executes), the merging is an [`Integrator`] the caller hands in, so the engine
//! finishes a run only once its integration is done — and a resumed run integrates too.

use std::sync::atomic::AtomicBool;

use super::{Journal, Worker};
use crate::store::{Event, JournalEntry, Store, StoreError};
use orchestra_git::git::RepoInfo;

/// How an integration handed to an [`Integrator`] ended, for the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Integrated {
    /// The merge ran to its end and journaled `merge_finished` (packets may have been sent
    /// back, the target may not have advanced: its report says why).
    Done,
    /// A stop request ended it between two steps; integrating again continues it.
    Interrupted,
    /// It could not do its job, for this reason; the run stays resumable.
    Failed(String),
}

/// Integrates a run's succeeded packets once they are final (the merge coordinator).
pub trait Integrator: Sync {
    /// Integrates the journal's run with the settings of its pending request, journaling each
    /// step through `journal`; returns how it ended. `stop` set ends it between steps;
    /// `worker` resolves conflicts for runs without a worker command.
    fn integrate(
        &self,
        repo: &RepoInfo,
        journal: &Journal<'_>,
        stop: &AtomicBool,
        worker: Option<&dyn Worker>,
    ) -> Result<Integrated, StoreError>;
}

/// Returns the journal entry of `run`'s integration request that no finished merge has
/// answered yet, if any.
pub fn pending_request(store: &Store, run: &str) -> Result<Option<JournalEntry>, StoreError> {
    let entries = store.events_of_kinds(
        run,
        &[
            crate::store::EventKind::IntegrationRequested,
            crate::store::EventKind::MergeFinished,
        ],
    )?;
    Ok(entries
        .into_iter()
        .last()
        .filter(|e| matches!(e.event, Event::IntegrationRequested { .. })))
}

/// Integrates the run when integration was asked of it and not yet done, once every packet
/// is final and no stop was requested. Returns the reason the run cannot finish yet: a
/// pending integration that was stopped, failed, or has no integrator here.
pub(super) fn run_pending(
    repo: &RepoInfo,
    journal: &Journal<'_>,
    ctl: &super::Control<'_>,
    worker: Option<&dyn Worker>,
) -> Result<Option<String>, StoreError> {
    if journal.read(pending_request)?.is_none() {
        return Ok(None);
    }
    let stopped = ctl.stop.load(std::sync::atomic::Ordering::SeqCst);
    if stopped || !journal.packets()?.iter().all(|r| r.state.is_final()) {
        return Ok(Some("stopped by a signal".to_string()));
    }
    let Some(integrator) = ctl.integrator else {
        return Ok(Some(
            "its integration is pending; `git orchestra resume` integrates it".to_string(),
        ));
    };
    Ok(
        match integrator.integrate(repo, journal, ctl.stop, worker)? {
            Integrated::Done => None,
            Integrated::Interrupted => {
                Some("stopped by a signal during its integration".to_string())
            }
            Integrated::Failed(reason) => Some(format!("its integration stopped: {reason}")),
        },
    )
}
