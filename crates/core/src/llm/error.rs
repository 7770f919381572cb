//! Why a model call failed, classified by what the caller should do about it.

use std::time::Duration;

/// A failed model call. Messages never contain an API key: bodies quoted from a provider are
/// clipped and scrubbed of the key before they get here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// HTTP 429: wait (for `retry_after` when the provider said) and try again.
    #[error("{model}: rate limited{}", retry_after.map(|d| format!(" (retry after {:.1}s)", d.as_secs_f32())).unwrap_or_default())]
    RateLimited {
        model: String,
        retry_after: Option<Duration>,
    },
    /// HTTP 5xx (or 529 overloaded): the service is down or overloaded.
    #[error("{model}: service unavailable (HTTP {status}): {message}")]
    Unavailable {
        model: String,
        status: u16,
        message: String,
    },
    /// HTTP 5xx whose body says the server could not parse the tool call the model wrote
    /// (llama.cpp and other OpenAI-compatible servers answer 500 for it): the model's output
    /// was malformed, the service is fine. Sent again, the model may write it right.
    #[error(
        "{model}: the model wrote a tool call the server could not parse (HTTP {status}): {message}; the service is up — a model or chat template with reliable tool calls avoids this"
    )]
    MalformedToolCall {
        model: String,
        status: u16,
        message: String,
    },
    /// The server could not be reached at all.
    #[error("{model}: cannot reach {url}: {message}")]
    Connect {
        model: String,
        url: String,
        message: String,
    },
    /// The model stopped streaming: no further piece within the profile's `timeout_secs`
    /// after its output began.
    #[error("{model}: the model stalled: no further output for {}s after its output began (the profile's `timeout_secs`)", timeout.as_secs())]
    Timeout { model: String, timeout: Duration },
    /// Not a single token arrived within the time-to-first-token limit (the profile's
    /// `first_token_timeout_secs` plus `first_token_secs_per_1k_tokens` per thousand prompt
    /// tokens). Not sent again: the server may still be working on it, and a second request
    /// would pay for the prompt twice.
    #[error("{model}: no first token within {}s for a prompt of about {prompt_tokens} tokens (the time-to-first-token limit: raise the profile's `first_token_timeout_secs` or `first_token_secs_per_1k_tokens` for a slow model)", limit.as_secs())]
    FirstTokenTimeout {
        model: String,
        limit: Duration,
        prompt_tokens: u64,
    },
    /// The stream broke off or ended before the answer was complete.
    #[error("{model}: the answer stream broke off: {message}")]
    BrokenStream { model: String, message: String },
    /// The key is missing or was rejected; `var` names the environment variable to set.
    #[error("{model}: {message}; set the environment variable {var} to a valid API key")]
    Auth {
        model: String,
        var: String,
        message: String,
    },
    /// The conversation no longer fits the model's context window.
    #[error("{model}: the conversation is too long for the model's context window: {message}")]
    ContextTooLong { model: String, message: String },
    /// The provider refused the request as malformed (HTTP 4xx other than the above).
    #[error("{model}: request refused (HTTP {status}): {message}")]
    BadRequest {
        model: String,
        status: u16,
        message: String,
    },
    /// The provider answered something that is not its documented format.
    #[error("{model}: unexpected answer: {message}")]
    Protocol { model: String, message: String },
    /// The caller cancelled the call.
    #[error("{model}: cancelled")]
    Cancelled { model: String },
}

impl LlmError {
    /// Returns true if and only if the same request may succeed when sent again later.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Unavailable { .. }
                | LlmError::MalformedToolCall { .. }
                | LlmError::Connect { .. }
                | LlmError::Timeout { .. }
                | LlmError::BrokenStream { .. }
        )
    }

    /// Returns a short machine-readable kind, used in events and counters.
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::RateLimited { .. } => "rate_limited",
            LlmError::Unavailable { .. } => "unavailable",
            LlmError::MalformedToolCall { .. } => "malformed_tool_call",
            LlmError::Connect { .. } => "connect",
            LlmError::Timeout { .. } => "timeout",
            LlmError::FirstTokenTimeout { .. } => "first_token_timeout",
            LlmError::BrokenStream { .. } => "broken_stream",
            LlmError::Auth { .. } => "auth",
            LlmError::ContextTooLong { .. } => "context_too_long",
            LlmError::BadRequest { .. } => "bad_request",
            LlmError::Protocol { .. } => "protocol",
            LlmError::Cancelled { .. } => "cancelled",
        }
    }
}
