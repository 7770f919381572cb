//! The `[eval]` table, read by `git orchestra eval`.

use serde::Deserialize;

/// The `[eval]` table: how `git orchestra eval` checks tasks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    /// The test command `eval tasks` checks candidates with (run with `sh -c` at the top of a
    /// scratch checkout, sandboxed like validation commands; default: the test command `init`
    /// detects). Set, it is also the project's tests every candidate of a best-of-N packet in
    /// `run`, `agent` and `start` runs must pass (after its validation and the deterministic
    /// checks) before the choice; unset there, candidates run no project tests. Applies only
    /// once the repository is trusted.
    pub test: Option<String>,
}

impl EvalConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: EvalConfig) -> EvalConfig {
        EvalConfig {
            test: self.test.or(base.test),
        }
    }
}
