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

    /// Adds what `resp` of the model labelled `label` spent.
    fn add(&self, label: &str, resp: &ChatResponse) {
        let price = self
            .prices
            .get(&resp.model)
            .or_else(|| self.prices.get(orchestra_core::config::price_key(label)));
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
