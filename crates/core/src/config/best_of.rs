//! The `[best_of]` table: the budget the candidates of a best-of-N packet share and how many
//! candidates a risky packet gets under `[start] best_of = "auto"`.

use serde::Deserialize;

/// Candidates a risky packet gets under `[start] best_of = "auto"` when `[best_of] n` is unset.
pub const DEFAULT_BEST_OF_N: u32 = 3;

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
    /// How many candidates a packet the planner or plan reviewer marked risky gets under
    /// `[start] best_of = "auto"` (1 to 8, default 3).
    #[serde(default)]
    pub n: Option<u32>,
}

impl BestOfConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: BestOfConfig) -> BestOfConfig {
        BestOfConfig {
            packet_tokens: self.packet_tokens.or(base.packet_tokens),
            packet_cost: self.packet_cost.or(base.packet_cost),
            n: self.n.or(base.n),
        }
    }

    /// Returns true if and only if a budget caps the number of candidates.
    pub fn caps(&self) -> bool {
        self.packet_tokens.is_some() || self.packet_cost.is_some()
    }
}

impl BestOfConfig {
    /// Returns how many candidates a risky packet gets in auto mode (`n`, default
    /// [`DEFAULT_BEST_OF_N`]), or why `n` is not a number of candidates.
    pub fn risky_candidates(&self) -> Result<u32, String> {
        let n = self.n.unwrap_or(DEFAULT_BEST_OF_N);
        if (1..=crate::plan::MAX_ATTEMPTS).contains(&n) {
            Ok(n)
        } else {
            Err(format!(
                "[best_of] n = {n} is outside 1 to {}; set it to the number of candidates a risky packet gets",
                crate::plan::MAX_ATTEMPTS
            ))
        }
    }
}
