//! The integration phase of a run: a request to merge (`run --merge`, `retry` of a run merged
//! before) is journaled with its settings before any packet runs; the engine integrates once
//! every packet is final through [`RunIntegrator`], and finishes the run only after the merge
//! has. A request with no `merge_finished` after it is pending, so a resumed run integrates too.

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use super::MergeError;
use super::coordinator::{MergeOptions, integrate_journaled};
use super::report::MergeReport;
use crate::engine::integration::pending_request;
use crate::engine::{Integrated, Integrator, Journal, Worker};
use crate::store::{Event, Store, StoreError};
use orchestra_git::git::RepoInfo;
use orchestra_sys::exec::process::Sandboxes;

/// The merge coordinator as the engine's [`Integrator`]: integrates with the settings of the
/// run's pending request, confined by the integrating process's sandboxes, and keeps how the
/// merge ended for the front end to show.
pub struct RunIntegrator {
    sandboxes: Sandboxes,
    outcome: Mutex<Option<Result<MergeReport, MergeError>>>,
}

impl RunIntegrator {
    /// Returns an integrator whose validation and conflict-resolving commands run confined by
    /// `sandboxes`.
    pub fn new(sandboxes: Sandboxes) -> RunIntegrator {
        RunIntegrator {
            sandboxes,
            outcome: Mutex::new(None),
        }
    }

    /// Returns the report of the merge that ran to its end, or the error that stopped it;
    /// `None` when no merge ran (or a stop request cut it short).
    pub fn take(&self) -> Option<Result<MergeReport, MergeError>> {
        self.outcome
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

impl Integrator for RunIntegrator {
    fn integrate(
        &self,
        repo: &RepoInfo,
        journal: &Journal<'_>,
        stop: &AtomicBool,
        worker: Option<&dyn Worker>,
    ) -> Result<Integrated, StoreError> {
        let Some(opts) = journal.read(|s, run| pending(s, run, &self.sandboxes))? else {
            return Ok(Integrated::Done);
        };
        let (integrated, outcome) = match integrate_journaled(repo, &opts, worker, journal, stop) {
            Ok(report) => (Integrated::Done, Ok(report)),
            Err(MergeError::Interrupted { .. }) => return Ok(Integrated::Interrupted),
            Err(MergeError::Store(e)) => return Err(e),
            Err(e) => (Integrated::Failed(e.to_string()), Err(e)),
        };
        *self.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome);
        Ok(integrated)
    }
}

/// Journals that `run` is to be integrated with `opts` once its packets are final.
///
/// `opts.sandboxes` is not kept: the confinement comes from the configuration of the process
/// that integrates.
pub fn request(store: &mut Store, run: &str, opts: &MergeOptions) -> Result<(), StoreError> {
    store.record(
        run,
        &Event::IntegrationRequested {
            target: opts.target.clone(),
            timeout_secs: opts.timeout.as_secs().max(1),
            max_batch: opts.max_batch.max(1),
            resolve_rounds: opts.resolve_rounds,
            keep_worktrees: opts.keep_worktrees,
            recycle_worktrees: opts.recycle_worktrees,
            revalidate_integrated: opts.revalidate_integrated,
        },
    )?;
    Ok(())
}

/// Returns the settings of `run`'s integration request that no finished merge has answered
/// yet, confined by `sandboxes`; `None` when there is none.
pub fn pending(
    store: &Store,
    run: &str,
    sandboxes: &Sandboxes,
) -> Result<Option<MergeOptions>, StoreError> {
    Ok(pending_request(store, run)?.and_then(|e| options_of(&e.event, sandboxes)))
}

/// Returns the settings of `run`'s latest integration request, answered or not.
pub fn last_request(
    store: &Store,
    run: &str,
    sandboxes: &Sandboxes,
) -> Result<Option<MergeOptions>, StoreError> {
    let entries = store.events_of_kind(run, crate::store::EventKind::IntegrationRequested)?;
    Ok(entries.last().and_then(|e| options_of(&e.event, sandboxes)))
}

/// Returns the merge options an `integration_requested` event carries.
fn options_of(event: &Event, sandboxes: &Sandboxes) -> Option<MergeOptions> {
    match event {
        Event::IntegrationRequested {
            target,
            timeout_secs,
            max_batch,
            resolve_rounds,
            keep_worktrees,
            recycle_worktrees,
            revalidate_integrated,
        } => Some(MergeOptions {
            target: target.clone(),
            timeout: std::time::Duration::from_secs(*timeout_secs),
            max_batch: (*max_batch).max(1),
            resolve_rounds: *resolve_rounds,
            keep_worktrees: *keep_worktrees,
            sandboxes: sandboxes.clone(),
            recycle_worktrees: *recycle_worktrees,
            revalidate_integrated: *revalidate_integrated,
        }),
        _ => None,
    }
}
