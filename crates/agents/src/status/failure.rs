//! Why a run stopped short, and the command that continues it: what `status`, the report, the
//! final summary and the web view say after a failure, so the reason never lives only in the
//! terminal that watched the run fail.

use serde::Serialize;

use orchestra_core::store::{Event, PacketRecord, PacketState, RunState, Store, StoreError};

/// Reasons longer than this are clipped in a run's failure (the packet table has them whole).
const MAX_REASON: usize = 600;

/// Why a run failed or was interrupted, and what moves it on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// Why, in the words of the failing step (a model's refusal, a packet's failure).
    pub reason: String,
    /// The command that continues the run, e.g. `git orchestra resume <run>`.
    pub next: String,
}

/// Returns why the `start` run `run` failed, from its journal's `entries`, when its phase is
/// `failed`; `resume` continues it.
pub fn start_failure(
    run: &str,
    phase: crate::orchestrator::WorkflowState,
    entries: &[crate::orchestrator::start_journal::Entry],
) -> Option<Failure> {
    if phase != crate::orchestrator::WorkflowState::Failed {
        return None;
    }
    let reason = crate::orchestrator::report::failure_reason(entries)?;
    Some(Failure {
        reason: orchestra_sys::redact::clip(reason.trim(), MAX_REASON),
        next: crate::orchestrator::report::continue_command(run),
    })
}

/// Returns why the engine run `run` (in `state` as users see it) stopped short: its failed
/// packets' reasons with `retry`, or why it was interrupted with `resume`; `None` otherwise.
pub fn run_failure(
    store: &Store,
    run: &str,
    state: RunState,
    packets: &[PacketRecord],
) -> Result<Option<Failure>, StoreError> {
    Ok(match state {
        RunState::Failed => {
            let failed: Vec<String> = packets
                .iter()
                .filter(|p| matches!(p.state, PacketState::Failed | PacketState::Skipped))
                .map(|p| {
                    let why = p
                        .reason
                        .as_deref()
                        .and_then(|r| r.lines().next())
                        .unwrap_or("no reason recorded");
                    format!("packet {} {}: {why}", p.id, p.state.as_str())
                })
                .collect();
            let reason = if failed.is_empty() {
                "not every packet succeeded".to_string()
            } else {
                failed.join("; ")
            };
            Some(Failure {
                reason: orchestra_sys::redact::clip(&reason, MAX_REASON),
                next: format!("git orchestra retry {run}"),
            })
        }
        RunState::Interrupted => {
            let said = store
                .events_of_kind(run, orchestra_core::store::EventKind::RunInterrupted)?
                .into_iter()
                .rev()
                .find_map(|e| match e.event {
                    Event::RunInterrupted { reason } => Some(reason),
                    _ => None,
                });
            Some(Failure {
                reason: said.unwrap_or_else(|| {
                    "its process ended before the run finished (killed, or its machine went down)"
                        .to_string()
                }),
                next: format!("git orchestra resume {run}"),
            })
        }
        _ => None,
    })
}
