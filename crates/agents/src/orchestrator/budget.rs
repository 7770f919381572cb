//! Budgets of a `start` run: tokens, cost and wall time for the whole run, and tokens per
//! role. Spending is read from the journal of model turns, so it survives restarts; when a
//! limit is reached, model calls are refused, running packets stop as interrupted (their work
//! kept), and the run fails with a message naming the limit — raise it and start again.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::start_journal::UsageRow;
use orchestra_core::config::Price;

/// The limits; `None` (or a missing role) means no limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Input plus output tokens over every role.
    pub tokens: Option<u64>,
    /// Cost in the configured prices' currency.
    pub cost: Option<f64>,
    /// Wall-clock seconds since the run started.
    pub secs: Option<u64>,
    /// Input plus output tokens per role.
    #[serde(default)]
    pub role_tokens: BTreeMap<String, u64>,
}

/// What a run has spent so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spent {
    pub tokens: u64,
    pub cost: f64,
    pub secs: u64,
    pub by_role: BTreeMap<String, u64>,
}

/// Returns the spending recorded in `usage`, priced by `price` (by model name), `secs` after
/// the run started.
pub fn spent(usage: &[UsageRow], price: &dyn Fn(&str) -> Option<Price>, secs: u64) -> Spent {
    let mut s = Spent {
        secs,
        ..Default::default()
    };
    for u in usage {
        let t = u.usage.input_tokens + u.usage.output_tokens;
        s.tokens += t;
        *s.by_role.entry(u.role.clone()).or_default() += t;
        if let Some(p) = price(orchestra_core::config::price_key(&u.model)) {
            s.cost += p.cost(u.usage);
        }
    }
    s
}

impl Budget {
    /// Returns true if and only if no limit is set.
    pub fn is_unlimited(&self) -> bool {
        self.tokens.is_none()
            && self.cost.is_none()
            && self.secs.is_none()
            && self.role_tokens.is_empty()
    }

    /// Returns which limit `spent` reached, in words, if any; `role` adds that role's limit.
    pub fn exceeded(&self, spent: &Spent, role: Option<&str>) -> Option<String> {
        if let Some(max) = self.tokens
            && spent.tokens >= max
        {
            return Some(format!(
                "token budget exhausted: {} of {max} tokens used (raise it with --budget-tokens)",
                spent.tokens
            ));
        }
        if let Some(max) = self.cost
            && spent.cost >= max
        {
            return Some(format!(
                "cost budget exhausted: {:.4} of {max:.4} spent (raise it with --budget-cost)",
                spent.cost
            ));
        }
        if let Some(max) = self.secs
            && spent.secs >= max
        {
            return Some(format!(
                "time budget exhausted: {} of {max} s (raise it with --budget-secs)",
                spent.secs
            ));
        }
        let check = |r: &str| {
            let max = *self.role_tokens.get(r)?;
            let used = spent.by_role.get(r).copied().unwrap_or(0);
            (used >= max).then(|| {
                format!(
                    "token budget of role `{r}` exhausted: {used} of {max} tokens used (raise it with --budget-role {r}=N)"
                )
            })
        };
        role.and_then(check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orchestra_core::llm::Usage;

    fn row(role: &str, i: u64, o: u64) -> UsageRow {
        UsageRow {
            role: role.into(),
            model: "openai:m".into(),
            calls: 1,
            usage: Usage {
                input_tokens: i,
                output_tokens: o,
            },
            ms: 1,
        }
    }

    #[test]
    fn each_limit_is_named_when_reached() {
        let price = |m: &str| {
            (m == "m").then_some(Price {
                input_per_mtok: 1_000_000.0,
                output_per_mtok: 0.0,
            })
        };
        let s = spent(&[row("coder", 60, 10), row("planner", 20, 0)], &price, 5);
        assert_eq!((s.tokens, s.by_role["coder"]), (90, 70));
        assert!((s.cost - 80.0).abs() < 1e-9);
        assert!(Budget::default().exceeded(&s, Some("coder")).is_none());
        let tokens = Budget {
            tokens: Some(90),
            ..Default::default()
        };
        assert!(
            tokens
                .exceeded(&s, None)
                .unwrap()
                .contains("--budget-tokens")
        );
        let cost = Budget {
            cost: Some(50.0),
            ..Default::default()
        };
        assert!(cost.exceeded(&s, None).unwrap().contains("cost budget"));
        let time = Budget {
            secs: Some(5),
            ..Default::default()
        };
        assert!(time.exceeded(&s, None).unwrap().contains("time budget"));
        let role = Budget {
            role_tokens: [("coder".to_string(), 70)].into(),
            ..Default::default()
        };
        assert!(role.exceeded(&s, Some("planner")).is_none());
        assert!(
            role.exceeded(&s, Some("coder"))
                .unwrap()
                .contains("`coder`")
        );
        assert!(!role.is_unlimited() && Budget::default().is_unlimited());
    }
}
