//! The phases a packet's time is counted in and their sums (`status --timings`); the
//! engine derives each packet's durations from its journal (`engine::timings`).

use std::collections::BTreeMap;

use serde::Serialize;

/// One timed phase of a packet's pipeline, in pipeline order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimedPhase {
    /// Creating, recreating or recycling the worktree and copying included files.
    Worktree,
    /// The `[worktree] setup` command.
    Setup,
    /// The worker (every try and fix round), waits between retries included.
    Worker,
    /// Committing the worker's changes.
    Commit,
    /// The scope check and the packet's validation commands.
    Validation,
    /// The deterministic checks (secrets, conflict markers, …).
    Checks,
    /// A configured reviewer's review.
    Review,
    /// Merging the packet's work into the integration branch.
    Integration,
}

impl TimedPhase {
    /// Returns the phase's name as status and reports show it.
    pub fn as_str(self) -> &'static str {
        match self {
            TimedPhase::Worktree => "worktree",
            TimedPhase::Setup => "setup",
            TimedPhase::Worker => "worker",
            TimedPhase::Commit => "commit",
            TimedPhase::Validation => "validation",
            TimedPhase::Checks => "checks",
            TimedPhase::Review => "review",
            TimedPhase::Integration => "integration",
        }
    }
}

/// Milliseconds spent in each phase a packet went through (phases it never entered are absent).
pub type PhaseDurations = BTreeMap<TimedPhase, u64>;

/// Returns the sum of every packet's duration per phase.
pub fn phase_totals<'a>(packets: impl IntoIterator<Item = &'a PhaseDurations>) -> PhaseDurations {
    let mut totals = PhaseDurations::new();
    for durations in packets {
        for (phase, ms) in durations {
            *totals.entry(*phase).or_default() += ms;
        }
    }
    totals
}
