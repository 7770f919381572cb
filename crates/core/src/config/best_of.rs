//! The `[best_of]` table: the budget the candidates of a best-of-N packet share.

use serde::Deserialize;

/// The `[best_of]` table: what the candidates of one best-of-N packet (`attempts = N` in the
/// plan, `run --best-of N`) may together be forecast to spend. N is capped, before the run
/// starts, to as many candidates as the high end of the packet's forecast fits in.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BestOfConfig {
    /// Most tokens (input plus output) a best-of-N packet's candidates together may be
    /// forecast to use; unset, the number of candidates is not capped by tokens.
    #[serde(default)]
    pub packet_tokens: Option<u64>,
    /// Most cost (in `[prices]`' currency) a best-of-N packet's candidates together may be
    /// forecast to spend; unset, or without a price for the packet's model, the number of
    /// candidates is not capped by cost.
    #[serde(default)]
    pub packet_cost: Option<f64>,
}

impl BestOfConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: BestOfConfig) -> BestOfConfig {
        BestOfConfig {
            packet_tokens: self.packet_tokens.or(base.packet_tokens),
            packet_cost: self.packet_cost.or(base.packet_cost),
        }
    }

    /// Returns true if and only if a budget caps the number of candidates.
    pub fn caps(&self) -> bool {
        self.packet_tokens.is_some() || self.packet_cost.is_some()
    }
}
