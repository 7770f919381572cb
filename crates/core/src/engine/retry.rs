//! Opens a finished run again: its failed and skipped packets (or the ones named) go back to
//! pending, with their skipped dependents, so `execute` runs them from the work their worktrees
//! and branches already hold.

use super::EngineError;
use crate::store::{Event, PacketState, RunState, Store};
use orchestra_git::git::RepoInfo;
use orchestra_sys::exec::{RunDir, RunLock};

/// Reopens `run` for `packets` (empty: every failed or skipped packet) and their skipped
/// dependents, journaling `note` for their workers; returns the packets reopened, in plan order.
///
/// Only a completed or failed run can be retried; a named packet must have failed or been
/// skipped. Nothing changes when an error is returned.
pub fn reopen(
    repo: &RepoInfo,
    run: &str,
    packets: &[String],
    note: Option<&str>,
) -> Result<Vec<String>, EngineError> {
    let dir = RunDir::new(&repo.common_dir, run);
    let _lock = RunLock::acquire(dir.path(), run)?;
    let mut store = Store::open(&repo.common_dir)?;
    let record = store.require_run(run)?;
    if !matches!(record.state, RunState::Completed | RunState::Failed) {
        return Err(EngineError::NotRetryable {
            run: run.to_string(),
            state: record.state.as_str(),
        });
    }
    let plan = record.plan().map_err(|e| EngineError::StoredPlan {
        run: run.to_string(),
        message: e.to_string(),
    })?;
    let states = store.packets(run)?;
    let retryable = |s: PacketState| matches!(s, PacketState::Failed | PacketState::Skipped);
    let mut chosen: Vec<String> = if packets.is_empty() {
        states
            .iter()
            .filter(|p| retryable(p.state))
            .map(|p| p.id.clone())
            .collect()
    } else {
        let mut named = Vec::new();
        for id in packets {
            match states.iter().find(|p| &p.id == id) {
                None => {
                    return Err(EngineError::NoSuchPacket {
                        run: run.to_string(),
                        packet: id.clone(),
                        known: states.iter().map(|p| p.id.clone()).collect(),
                    });
                }
                Some(p) if !retryable(p.state) => {
                    return Err(EngineError::PacketNotRetryable {
                        packet: id.clone(),
                        state: p.state.as_str(),
                    });
                }
                Some(p) => named.push(p.id.clone()),
            }
        }
        named
    };
    // Skipped packets that wait on a reopened one run again with it.
    loop {
        let more: Vec<String> = states
            .iter()
            .filter(|p| p.state == PacketState::Skipped && !chosen.contains(&p.id))
            .filter(|p| {
                chosen
                    .iter()
                    .any(|c| plan.depends_on_transitively(&p.id, c))
            })
            .map(|p| p.id.clone())
            .collect();
        if more.is_empty() {
            break;
        }
        chosen.extend(more);
    }
    if chosen.is_empty() {
        return Err(EngineError::NothingToRetry {
            run: run.to_string(),
        });
    }
    let order: Vec<&str> = plan.packets.iter().map(|p| p.id.as_str()).collect();
    chosen.sort_by_key(|id| order.iter().position(|o| o == id));
    store.record(
        run,
        &Event::RunReopened {
            packets: chosen.clone(),
            note: note.map(str::to_string).filter(|n| !n.trim().is_empty()),
        },
    )?;
    Ok(chosen)
}

/// Reopens the finished `run` with none of its packets, so that `execute` integrates it: the
/// caller has journaled an integration request, and the run is `completed` or `failed` again
/// only once the merge has finished.
///
/// Only a completed or failed run is reopened; nothing changes when an error is returned.
pub fn reopen_to_integrate(repo: &RepoInfo, run: &str) -> Result<(), EngineError> {
    let dir = RunDir::new(&repo.common_dir, run);
    let _lock = RunLock::acquire(dir.path(), run)?;
    let mut store = Store::open(&repo.common_dir)?;
    let record = store.require_run(run)?;
    if !matches!(record.state, RunState::Completed | RunState::Failed) {
        return Err(EngineError::NotRetryable {
            run: run.to_string(),
            state: record.state.as_str(),
        });
    }
    store.record(
        run,
        &Event::RunReopened {
            packets: Vec::new(),
            note: None,
        },
    )?;
    Ok(())
}

/// Returns the note the latest reopening of `run` left for `packet`'s worker, if any.
pub(super) fn note_for(store: &Store, run: &str, packet: &str) -> Option<String> {
    store
        .events_of_kind(run, crate::store::EventKind::RunReopened)
        .ok()?
        .into_iter()
        .rev()
        .find_map(|e| match e.event {
            Event::RunReopened { packets, note } if packets.iter().any(|p| p == packet) => {
                Some(note)
            }
            _ => None,
        })
        .flatten()
}
