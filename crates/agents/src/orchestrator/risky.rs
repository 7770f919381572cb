//! The candidates of a `start` plan's packets: the planner's and the plan reviewer's `risky`
//! marks and `[start] best_of` applied to the plan text, so that the approval shows, the
//! forecast prices and the engine runs the same best-of-N packets.

use super::driver::{Ctx, StartError};
use super::start_journal::{Entry, WorkflowEvent};
use orchestra_core::config::{DEFAULT_BEST_OF_N, RepoConfig};
use orchestra_core::plan::{self, Plan};

/// Returns the plan text `toml` as it runs under `config`: the packets in `risky` (the plan
/// reviewer's) marked risky, and each packet given its candidates by `[start] best_of`; the
/// text unchanged when nothing changes or it does not parse (the validation then says why).
pub fn as_it_runs(toml: &str, risky: &[String], config: &RepoConfig) -> String {
    let Ok(mut plan) = Plan::from_toml_str(toml, "plan.toml") else {
        return toml.to_string();
    };
    // `start` refuses a bad `[best_of] n` before planning; the default stands in for it here.
    let n = config
        .best_of
        .risky_candidates()
        .unwrap_or(DEFAULT_BEST_OF_N);
    if !plan::fan_out(&mut plan, config.start.best_of, n, risky) {
        return toml.to_string();
    }
    toml::to_string(&plan).unwrap_or_else(|_| toml.to_string())
}

/// Returns the packets the last plan review in `entries` judged risky.
pub fn reviewed_risky(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            WorkflowEvent::PlanReviewed { risky, .. } => Some(risky.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

impl Ctx<'_> {
    /// Returns the plan text `toml` as this run works it: with the plan reviewer's risky marks
    /// and the candidates `[start] best_of` gives its packets.
    pub(super) fn as_it_runs(&self, toml: &str) -> Result<String, StartError> {
        let risky = reviewed_risky(&self.all()?);
        Ok(as_it_runs(toml, &risky, &self.models.config))
    }
}
