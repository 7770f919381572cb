//! The `[eval]` table, read by `git orchestra eval`.

use serde::Deserialize;

/// The `[eval]` table: how `git orchestra eval` checks tasks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    /// The test command `eval tasks` checks candidates with (run with `sh -c` at the top of a
    /// scratch checkout, sandboxed like validation commands; default: the test command `init`
    /// detects). Applies only once the repository is trusted.
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
