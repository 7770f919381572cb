//! What an attempt's runs did besides landing: fix rounds, questions and model time, read from
//! the engine journal of the attempt's own repository (which holds that attempt's runs only).

use orchestra_core::store::{Event, Store};
use orchestra_git::git::RepoInfo;

use super::AttemptResult;

/// Adds the fix rounds, questions asked and model time of every run in `attempt`'s store to
/// `result`. A fix round is a worker run of a packet after its first that is not a retry of a
/// failed try.
pub(super) fn engine_runs(attempt: &RepoInfo, result: &mut AttemptResult) {
    let Ok(store) = Store::open(&attempt.common_dir) else {
        return;
    };
    for run in store.runs().unwrap_or_default() {
        let mut workers = 0u32;
        let mut retries = 0u32;
        let mut started = std::collections::BTreeSet::new();
        for entry in store.events(&run.id, 0).unwrap_or_default() {
            match entry.event {
                Event::WorkerStarted { packet, .. } => {
                    workers += 1;
                    started.insert(packet);
                }
                Event::WorkerRetrying { .. } => retries += 1,
                Event::QuestionAsked { .. } => result.questions += 1,
                Event::AgentModelCall { duration_ms, .. } => result.model_ms += duration_ms,
                _ => {}
            }
        }
        let first_runs = u32::try_from(started.len()).unwrap_or(u32::MAX);
        result.fix_rounds += workers.saturating_sub(retries).saturating_sub(first_runs);
    }
}
