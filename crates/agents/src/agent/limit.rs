//! A hard spend limit on one worker's model calls: tokens (input plus output) and cost,
//! counted from each answer's usage as it arrives. Once either is reached, every further call
//! is refused with the limit named, so the agent stops mid-packet instead of finishing its
//! work and being judged over budget afterwards; at most the call that crossed it is spent
//! beyond the limit.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use orchestra_core::config::Price;
use orchestra_core::llm::{ChatModel, ChatRequest, ChatResponse, Delta, LlmError};

/// The limits and what has been spent against them, shared by every model of a worker.
pub struct SpendLimit {
    /// Most input plus output tokens; `None`: no limit.
    pub tokens: Option<u64>,
    /// Most cost, in `[prices]`' currency; `None`: no limit.
    pub cost: Option<f64>,
    /// The prices of models by name, for the cost.
    prices: BTreeMap<String, Price>,
    /// Tokens and cost spent so far.
    spent: Mutex<(u64, f64)>,
}

impl SpendLimit {
    /// Returns a limit of `tokens` and `cost` (each optional), costing answers at `prices`.
    pub fn new(tokens: Option<u64>, cost: Option<f64>, prices: BTreeMap<String, Price>) -> Self {
        SpendLimit {
            tokens,
            cost,
            prices,
            spent: Mutex::new((0, 0.0)),
        }
    }

    /// Returns the reason further calls are refused, naming the limit reached; `None` while
    /// under every limit.
    pub fn reached(&self) -> Option<String> {
        let (tokens, cost) = *self.spent.lock().unwrap_or_else(|p| p.into_inner());
        self.reached_at(tokens, cost)
    }

    /// Returns the reason a worker that spent `tokens` and `cost` is stopped, naming the
    /// limit reached; `None` while under every limit.
    pub fn reached_at(&self, tokens: u64, cost: f64) -> Option<String> {
        if let Some(limit) = self.tokens
            && tokens >= limit
        {
            return Some(format!(
                "the budget of {limit} tokens is spent ({tokens} tokens used)"
            ));
        }
        match self.cost {
            Some(limit) if cost >= limit => Some(format!(
                "the budget of {limit:.4} is spent ({cost:.4} used)"
            )),
            _ => None,
        }
    }

    /// Returns what `input` and `output` tokens of model `model` cost at the limit's prices;
    /// 0 for a model without a price.
    pub fn cost_of(&self, model: &str, input: u64, output: u64) -> f64 {
        let usage = orchestra_core::llm::Usage {
            input_tokens: input,
            output_tokens: output,
        };
        self.price(model, model).map_or(0.0, |p| p.cost(usage))
    }

    /// Returns the price of the answering `model`, else of the model a journaled `label`
    /// names: the one lookup both the streamed and the answered spend use.
    fn price(&self, model: &str, label: &str) -> Option<&Price> {
        self.prices
            .get(model)
            .or_else(|| self.prices.get(orchestra_core::config::price_key(label)))
    }

    /// Adds what `resp` of the model labelled `label` spent.
    fn add(&self, label: &str, resp: &ChatResponse) {
        let price = self.price(&resp.model, label);
        let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        spent.0 += resp.usage.input_tokens + resp.usage.output_tokens;
        spent.1 += price.map_or(0.0, |p| p.cost(resp.usage));
    }
}

/// A model whose calls count against a [`SpendLimit`] and are refused once it is reached.
pub struct Limited {
    /// The model called.
    pub inner: Arc<dyn ChatModel>,
    /// The limit shared with the worker's other models.
    pub limit: Arc<SpendLimit>,
}

impl ChatModel for Limited {
    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<ChatResponse, LlmError> {
        if let Some(reason) = self.limit.reached() {
            return Err(LlmError::Protocol {
                model: self.inner.label(),
                message: format!("refused: {reason}"),
            });
        }
        let resp = self.inner.chat(req, on_delta)?;
        self.limit.add(&self.inner.label(), &resp);
        Ok(resp)
    }

    fn label(&self) -> String {
        self.inner.label()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orchestra_core::llm::{StopReason, Usage};

    /// A model answering every call with 40 tokens in and 20 out.
    struct Fixed;

    impl ChatModel for Fixed {
        fn chat(
            &self,
            _req: &ChatRequest,
            _on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
        ) -> Result<ChatResponse, LlmError> {
            Ok(ChatResponse {
                text: "ok".into(),
                tool_calls: Vec::new(),
                stop: StopReason::End,
                usage: Usage {
                    input_tokens: 40,
                    output_tokens: 20,
                },
                model: "m".into(),
            })
        }

        fn label(&self) -> String {
            "p:m".into()
        }
    }

    /// Returns how many calls of a `Fixed` model `limit` lets through before refusing one,
    /// and the refusal.
    fn calls_until_refused(limit: SpendLimit) -> (usize, String) {
        let model = Limited {
            inner: Arc::new(Fixed),
            limit: Arc::new(limit),
        };
        for n in 0..100 {
            if let Err(e) = model.chat(&ChatRequest::default(), &mut |_| true) {
                return (n, e.to_string());
            }
        }
        (100, String::new())
    }

    #[test]
    fn calls_are_refused_once_the_tokens_or_the_cost_are_spent() {
        // 60 tokens a call: the third call would start at 120 ≥ 100.
        let (n, why) = calls_until_refused(SpendLimit::new(Some(100), None, BTreeMap::new()));
        assert_eq!(n, 2);
        assert!(why.contains("budget of 100 tokens"), "{why}");
        // $1 per million tokens in and out: 60e-6 a call, so 0.0001 lasts two calls.
        let price = Price {
            input_per_mtok: 1.0,
            output_per_mtok: 1.0,
        };
        let prices = BTreeMap::from([("m".to_string(), price)]);
        let (n, why) = calls_until_refused(SpendLimit::new(None, Some(0.0001), prices));
        assert_eq!(n, 2);
        assert!(why.contains("budget of 0.0001"), "{why}");
        // No limit, or a cost limit on an unpriced model: never refused.
        assert_eq!(
            calls_until_refused(SpendLimit::new(None, None, BTreeMap::new())).0,
            100
        );
        assert_eq!(
            calls_until_refused(SpendLimit::new(None, Some(0.0001), BTreeMap::new())).0,
            100
        );
    }
}
