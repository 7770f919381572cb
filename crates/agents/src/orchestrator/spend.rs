//! One accounting of a run's model calls: the calls, their tokens and what they cost, behind
//! every view that counts them — `status`, `status --json`, the final summary, the report, the
//! web view's run list, run header and chart.
//!
//! A `start` run's own model calls are its journaled turns (`workflow_turns`, one row per call
//! paid for: a replayed turn is not counted again); an agent CLI's calls are journaled only as
//! the engine's `agent_model_call` events (their role is `<role>/<cli>`), so they are added from
//! there. A `run`/`agent` run has only the engine's events. A call is priced by `[prices]` under
//! its model's name and nothing else — not a CLI's own price list — so a model without a price
//! has no cost, and a sum of calls without one is no cost either.

use std::path::Path;

use serde::Serialize;

use super::{StartJournal, WorkflowEvent};
use orchestra_core::config::Price;
use orchestra_core::llm::Usage;
use orchestra_core::store::{Event, Store};

/// One model call as the accounting counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCall {
    /// When it was journaled, in milliseconds since the Unix epoch.
    pub ts_ms: i64,
    pub role: String,
    pub model: String,
    pub usage: Usage,
}

/// Tokens a run's model calls used, and what they cost where `[prices]` knows the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Spend {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The cost of the priced models; `None` when no model has a price.
    pub cost: Option<f64>,
    /// True when some models had no price and are not counted in `cost`.
    pub partial: bool,
}

/// Tokens and cost of one role on one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpendLine {
    pub role: String,
    pub model: String,
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `None` when the model has no price.
    pub cost: Option<f64>,
}

/// The spend after one call: cumulative tokens and cost (`None` while no call had a price).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpendPoint {
    pub ts_ms: i64,
    pub tokens: u64,
    pub cost: Option<f64>,
}

/// Returns the cost of `call` as `[prices]` prices its model, or `None` without a price (a
/// `profile:model` label is priced by its model part).
pub fn call_cost(call: &ModelCall, prices: &dyn Fn(&str) -> Option<Price>) -> Option<f64> {
    prices(orchestra_core::config::price_key(&call.model)).map(|p| p.cost(call.usage))
}

/// Returns every model call of `run`, oldest first: a `start` run's journaled turns and its
/// agent CLIs' calls (those of its documenting and testing phases included), or a `run`/`agent`
/// run's calls. Unreadable sources count as no calls.
pub fn model_calls(common_dir: &Path, run: &str) -> Vec<ModelCall> {
    let Ok(Some(store)) = Store::open_existing(common_dir) else {
        return Vec::new();
    };
    let is_start = StartJournal::runs(common_dir)
        .unwrap_or_default()
        .iter()
        .any(|r| r == run);
    let mut calls = Vec::new();
    let mut engine_runs = vec![run.to_string()];
    if is_start {
        calls.extend(store.turn_calls(run).unwrap_or_default().into_iter().map(
            |(ts_ms, role, model, usage)| ModelCall {
                ts_ms,
                role,
                model,
                usage,
            },
        ));
        let entries = StartJournal::open(common_dir, run)
            .and_then(|j| j.entries())
            .unwrap_or_default();
        engine_runs.extend(entries.into_iter().filter_map(|e| match e.event {
            WorkflowEvent::PhaseRun { run, .. } => Some(run),
            _ => None,
        }));
    }
    for id in &engine_runs {
        for e in store
            .events_of_kind(id, orchestra_core::store::EventKind::AgentModelCall)
            .unwrap_or_default()
        {
            if let Event::AgentModelCall {
                role,
                model,
                input_tokens,
                output_tokens,
                ..
            } = e.event
                // A `start` run's own agents' calls are its turns, counted above.
                && (!is_start || role.contains('/'))
            {
                calls.push(ModelCall {
                    ts_ms: e.ts_ms,
                    role,
                    model,
                    usage: Usage {
                        input_tokens,
                        output_tokens,
                    },
                });
            }
        }
    }
    calls.sort_by_key(|c| c.ts_ms);
    calls
}

/// Returns the totals of `calls`, priced by `prices`.
pub fn spend(calls: &[ModelCall], prices: &dyn Fn(&str) -> Option<Price>) -> Spend {
    let mut s = Spend::default();
    let mut unpriced = false;
    for c in calls {
        s.calls += 1;
        s.input_tokens += c.usage.input_tokens;
        s.output_tokens += c.usage.output_tokens;
        match call_cost(c, prices) {
            Some(cost) => s.cost = Some(s.cost.unwrap_or(0.0) + cost),
            None => unpriced = true,
        }
    }
    s.partial = s.cost.is_some() && unpriced;
    s
}

/// Returns the tokens and cost of `calls` per role and model, sorted by role then model.
pub fn lines(calls: &[ModelCall], prices: &dyn Fn(&str) -> Option<Price>) -> Vec<SpendLine> {
    let mut out: Vec<SpendLine> = Vec::new();
    for c in calls {
        let cost = call_cost(c, prices);
        match out
            .iter_mut()
            .find(|l| l.role == c.role && l.model == c.model)
        {
            Some(l) => {
                l.calls += 1;
                l.input_tokens += c.usage.input_tokens;
                l.output_tokens += c.usage.output_tokens;
                l.cost = cost.map(|x| l.cost.unwrap_or(0.0) + x).or(l.cost);
            }
            None => out.push(SpendLine {
                role: c.role.clone(),
                model: c.model.clone(),
                calls: 1,
                input_tokens: c.usage.input_tokens,
                output_tokens: c.usage.output_tokens,
                cost,
            }),
        }
    }
    out.sort_by(|a, b| (&a.role, &a.model).cmp(&(&b.role, &b.model)));
    out
}

/// Returns the spend after each of `calls` (oldest first), for a chart over time.
pub fn points(calls: &[ModelCall], prices: &dyn Fn(&str) -> Option<Price>) -> Vec<SpendPoint> {
    let (mut tokens, mut cost) = (0u64, None::<f64>);
    calls
        .iter()
        .map(|c| {
            tokens += c.usage.input_tokens + c.usage.output_tokens;
            if let Some(x) = call_cost(c, prices) {
                cost = Some(cost.unwrap_or(0.0) + x);
            }
            SpendPoint {
                ts_ms: c.ts_ms,
                tokens,
                cost,
            }
        })
        .collect()
}

/// Returns the totals of `run`'s model calls: [`model_calls`] priced by `prices`.
pub fn run_spend(common_dir: &Path, run: &str, prices: &dyn Fn(&str) -> Option<Price>) -> Spend {
    spend(&model_calls(common_dir, run), prices)
}
