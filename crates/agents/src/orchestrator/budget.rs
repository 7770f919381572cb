//! Budgets of a `start` run: tokens, cost and wall time for the whole run, and tokens per
//! role. Spending is read from the journal of model turns, so it survives restarts; when a
//! limit is reached, model calls are refused, running packets stop as interrupted (their work
//! kept), and the run fails with a message naming the limit — raise it and start again.
//!
//! The soft thresholds of `[budget]` (`ask_at_cost`, `ask_at_tokens`) stop the run the same
//! way but pause it instead, with a question to a person under the packet name [`QUESTION`]:
//! going on (`git orchestra answer budget …`, then `resume`) raises each threshold reached to
//! the next multiple of its configured value above the spend, so the run asks again there.

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

/// The name under which a soft threshold's question is asked (`git orchestra answer budget …`).
pub const QUESTION: &str = "budget";

/// Soft thresholds: reaching one pauses the run to ask a person; `None` means none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Soft {
    /// Input plus output tokens over every role.
    pub tokens: Option<u64>,
    /// Cost in the configured prices' currency.
    pub cost: Option<f64>,
}

impl Soft {
    /// Returns the thresholds `[budget]` configures.
    pub fn configured(config: &orchestra_core::config::BudgetConfig) -> Soft {
        Soft {
            tokens: config.ask_at_tokens,
            cost: config.ask_at_cost,
        }
    }

    /// Returns the question that asks whether to go on when `spent` reached a threshold,
    /// naming each threshold reached and the spend; `None` below every threshold.
    pub fn reached(&self, spent: &Spent) -> Option<String> {
        let mut what = Vec::new();
        if let Some(at) = self.cost
            && spent.cost >= at
        {
            what.push(format!(
                "cost {:.4} reached the soft threshold of {at:.4} (`[budget] ask_at_cost`)",
                spent.cost
            ));
        }
        if let Some(at) = self.tokens
            && spent.tokens >= at
        {
            what.push(format!(
                "{} tokens reached the soft threshold of {at} (`[budget] ask_at_tokens`)",
                spent.tokens
            ));
        }
        (!what.is_empty()).then(|| {
            format!(
                "The run paused: {}. Go on? `git orchestra answer {QUESTION} yes` then `git orchestra resume` continues (asking again at the next multiple); `git orchestra cancel` stops it.",
                what.join("; ")
            )
        })
    }

    /// Returns the thresholds once a person goes on at `spent`: each threshold reached is
    /// raised to the next multiple of its configured value `step` above the spend.
    pub fn raised(&self, step: &Soft, spent: &Spent) -> Soft {
        let next = |now: f64, step: f64, used: f64| {
            if used < now || step <= 0.0 {
                now
            } else {
                ((used / step).floor() + 1.0) * step
            }
        };
        Soft {
            tokens: match (self.tokens, step.tokens) {
                (Some(now), Some(s)) => {
                    Some(next(now as f64, s as f64, spent.tokens as f64).round() as u64)
                }
                (now, _) => now,
            },
            cost: match (self.cost, step.cost) {
                (Some(now), Some(s)) => Some(next(now, s, spent.cost)),
                (now, _) => now,
            },
        }
    }

    /// Returns these thresholds, never below the configured ones `step` and gone where
    /// `step` has none (the configuration changed since they were raised).
    pub fn at_least(&self, step: &Soft) -> Soft {
        Soft {
            tokens: step.tokens.map(|s| self.tokens.map_or(s, |t| t.max(s))),
            cost: step.cost.map(|s| self.cost.map_or(s, |c| c.max(s))),
        }
    }

    /// Returns true if and only if no threshold is set.
    pub fn is_unset(&self) -> bool {
        self.tokens.is_none() && self.cost.is_none()
    }
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

    #[test]
    fn a_soft_threshold_asks_with_the_spend_and_going_on_raises_it_to_the_next_multiple() {
        let step = Soft {
            tokens: Some(1_000),
            cost: Some(0.5),
        };
        let spent = |tokens, cost| Spent {
            tokens,
            cost,
            ..Default::default()
        };
        assert_eq!(step.reached(&spent(999, 0.1)), None);
        let q = step.reached(&spent(1_200, 0.1)).unwrap();
        assert!(
            q.contains("1200 tokens reached the soft threshold of 1000 (`[budget] ask_at_tokens`)"),
            "{q}"
        );
        assert!(
            q.contains("git orchestra answer budget") && !q.contains("cost"),
            "{q}"
        );
        let q = step.reached(&spent(10, 0.75)).unwrap();
        assert!(
            q.contains("cost 0.7500 reached the soft threshold of 0.5000"),
            "{q}"
        );
        // Only the thresholds reached move, to the next multiple above the spend.
        let next = step.raised(&step, &spent(2_300, 0.1));
        assert_eq!((next.tokens, next.cost), (Some(3_000), Some(0.5)));
        assert_eq!(next.reached(&spent(2_999, 0.1)), None);
        assert!(next.reached(&spent(3_000, 0.1)).is_some());
        // Configuration wins where it rose or went away.
        let higher = Soft {
            tokens: Some(5_000),
            cost: None,
        };
        assert_eq!(
            next.at_least(&higher),
            Soft {
                tokens: Some(5_000),
                cost: None
            }
        );
        assert!(Soft::default().is_unset() && !step.is_unset());
    }

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
