//! The `[budget]` table, read by the `start` workflow's budget checks.

use serde::Deserialize;

/// The `[budget]` table: soft thresholds of a `start` run, where it pauses to ask a person
/// instead of failing (the hard limits are `start --budget-tokens`, `--budget-cost`, …).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Cost (in `[prices]`' currency) at which a `start` run pauses and asks whether to go on;
    /// going on (`git orchestra answer budget …` and `resume`) asks again at the next multiple.
    pub ask_at_cost: Option<f64>,
    /// Tokens (input plus output, every role) at which a `start` run pauses and asks whether to
    /// go on; going on asks again at the next multiple.
    pub ask_at_tokens: Option<u64>,
}

impl BudgetConfig {
    /// Returns `self` with every threshold it leaves unset taken from `base`.
    pub(super) fn over(self, base: BudgetConfig) -> BudgetConfig {
        BudgetConfig {
            ask_at_cost: self.ask_at_cost.or(base.ask_at_cost),
            ask_at_tokens: self.ask_at_tokens.or(base.ask_at_tokens),
        }
    }
}
