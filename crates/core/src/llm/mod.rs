//! The LLM client layer: one small trait ([`ChatModel`]) over the two wire formats providers
//! speak — OpenAI-compatible chat completions and Anthropic Messages — with streaming, tool
//! calls, usage, classified errors and a retry policy.
//!
//! # Why a client of our own
//!
//! Both wire formats are a few hundred lines each, and owning them gives us exact control of
//! what the agent loop needs most: retries and fallback (classified by [`LlmError`]),
//! streaming with cancellation, tolerance of local servers' quirks (llama.cpp's streamed
//! `tool_use` blocks carry no `input`), and the guarantee that an API key never reaches a log,
//! an event or an error. The transport is `ureq` (blocking, rustls with ring): the engine
//! drives packets on threads, so an async runtime would buy nothing but compile time.

mod anthropic;
mod error;
mod http;
mod limit;
mod openai;
mod outage;
pub mod profile;
mod retry;
mod sse;
mod types;
pub mod wait;

pub use anthropic::AnthropicClient;
pub use error::LlmError;
pub use limit::{
    DEFAULT_RECOVER_AFTER, Gate, Gates, LimitCause, LimitChange, LimitListener, Limited, Permit,
};
pub use openai::OpenAiClient;
pub use outage::is_outage;
pub use profile::{ApiKey, Profile, Provider};
pub use retry::{RetryEvent, RetryPolicy, chat_with_retry};
pub use types::{ChatRequest, ChatResponse, Delta, Message, StopReason, ToolCall, ToolDef, Usage};

/// A chat model behind one wire format; implementations are cheap to share across threads.
pub trait ChatModel: Send + Sync {
    /// Sends one request and returns the complete answer, streaming pieces to `on_delta` as
    /// they arrive.
    ///
    /// `on_delta` returns `false` to cancel: the call then ends with [`LlmError::Cancelled`].
    /// A call is one attempt; retries and fallback are [`chat_with_retry`]'s job.
    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<ChatResponse, LlmError>;

    /// Returns a short label for messages and events, e.g. `openai:gpt-4o-mini`.
    fn label(&self) -> String;
}

/// Builds the client for `profile`, reading its API key from the environment variable the
/// profile names.
pub fn connect(profile: &Profile) -> Result<Box<dyn ChatModel>, LlmError> {
    let key = profile.api_key()?;
    Ok(match profile.provider.wire() {
        profile::Wire::OpenAi => Box::new(OpenAiClient::new(profile.clone(), key)),
        profile::Wire::Anthropic => Box::new(AnthropicClient::new(profile.clone(), key)),
    })
}

/// Connects the clients of `chain` (primary first), each behind its profile's gate in
/// `gates`. A primary that cannot be connected is the error; a fallback that cannot is
/// told to `unusable` and left out, so the run goes on with the rest of the chain.
pub fn connect_chain(
    chain: &[Profile],
    gates: &Gates,
    unusable: &mut dyn FnMut(&LlmError),
) -> Result<Vec<std::sync::Arc<dyn ChatModel>>, LlmError> {
    let mut models: Vec<std::sync::Arc<dyn ChatModel>> = Vec::new();
    for (i, p) in chain.iter().enumerate() {
        match connect(p) {
            Ok(m) => models.push(std::sync::Arc::new(Limited::new(
                m,
                gates.get(&p.name, p.concurrency),
            ))),
            Err(e) if i == 0 => return Err(e),
            Err(e) => unusable(&e),
        }
    }
    Ok(models)
}
