//! Provider profiles: which service, model and key variable a role's agent talks to.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::LlmError;

/// A provider family. Several share the OpenAI-compatible wire format and differ only in
/// their default base URL and whether a key is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// api.openai.com, chat completions.
    Openai,
    /// api.anthropic.com, Messages API.
    Anthropic,
    /// Gemini through Google's OpenAI-compatible endpoint.
    Gemini,
    /// Ollama's OpenAI-compatible `/v1` endpoint.
    Ollama,
    /// openrouter.ai, OpenAI-compatible.
    Openrouter,
    /// Any OpenAI-compatible server at `base_url` (llama.cpp, vLLM, LM Studio, …).
    OpenaiCompatible,
}

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

impl Provider {
    /// Every provider, for help texts and error messages.
    pub const ALL: [Provider; 6] = [
        Provider::Openai,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Ollama,
        Provider::Openrouter,
        Provider::OpenaiCompatible,
    ];

    /// Returns the provider's configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Ollama => "ollama",
            Provider::Openrouter => "openrouter",
            Provider::OpenaiCompatible => "openai-compatible",
        }
    }

    /// Parses a configuration name, listing the valid ones when it is unknown.
    pub fn parse(name: &str) -> Result<Provider, String> {
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| {
                format!(
                    "unknown provider `{name}`; use one of: {}",
                    Provider::ALL.map(Provider::as_str).join(", ")
                )
            })
    }

    /// Returns the wire format the provider speaks.
    pub fn wire(self) -> Wire {
        match self {
            Provider::Anthropic => Wire::Anthropic,
            _ => Wire::OpenAi,
        }
    }

    /// Returns the base URL used when the profile gives none.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Provider::Openai => Some("https://api.openai.com/v1"),
            Provider::Anthropic => Some("https://api.anthropic.com/v1"),
            Provider::Gemini => Some("https://generativelanguage.googleapis.com/v1beta/openai"),
            Provider::Ollama => Some("http://127.0.0.1:11434/v1"),
            Provider::Openrouter => Some("https://openrouter.ai/api/v1"),
            Provider::OpenaiCompatible => None,
        }
    }

    /// Returns the key variable used when the profile names none (`None`: no key needed).
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            Provider::Openai => Some("OPENAI_API_KEY"),
            Provider::Anthropic => Some("ANTHROPIC_API_KEY"),
            Provider::Gemini => Some("GEMINI_API_KEY"),
            Provider::Openrouter => Some("OPENROUTER_API_KEY"),
            Provider::Ollama | Provider::OpenaiCompatible => None,
        }
    }
}

/// A resolved provider profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    pub name: String,
    pub provider: Provider,
    pub model: String,
    pub base_url: String,
    /// The *name* of the environment variable holding the key; never the key itself.
    pub api_key_env: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: u32,
    /// Longest wait for each further piece of an answer once its output began (the stall
    /// limit).
    #[serde(with = "secs")]
    pub timeout: Duration,
    /// Longest wait for the first token of an answer, before [`Profile::first_token_per_1k`]
    /// is added for the prompt's size: a local server sends nothing while it reads the prompt.
    #[serde(with = "secs")]
    pub first_token_timeout: Duration,
    /// Time to first token added per thousand prompt tokens.
    #[serde(with = "secs")]
    pub first_token_per_1k: Duration,
    /// How long an unreachable model server is waited for (retrying with growing pauses)
    /// before the call fails: long enough to outlast a restart.
    #[serde(with = "secs")]
    pub outage_retry: Duration,
    /// Most calls in flight at once through this profile.
    pub concurrency: usize,
    /// The profile tried when this one keeps failing.
    pub fallback: Option<String>,
    /// The context window in tokens, for bounding the conversation.
    pub context_tokens: u64,
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
}

/// Default output token limit per call.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// Default stall limit: the longest pause in an answer once its output began.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default base time to first token, suited to a slow local model.
pub const DEFAULT_FIRST_TOKEN_TIMEOUT: Duration = Duration::from_secs(600);
/// Default time to first token added per thousand prompt tokens (prompt processing on a
/// small CPU runs at a few dozen tokens a second).
pub const DEFAULT_FIRST_TOKEN_PER_1K: Duration = Duration::from_secs(60);
/// Default time an unreachable model server is waited for.
pub const DEFAULT_OUTAGE_RETRY: Duration = Duration::from_secs(600);
/// Default context window assumed when the profile does not say.
pub const DEFAULT_CONTEXT_TOKENS: u64 = 32_000;

impl Profile {
    /// Returns a profile for `provider` and `model` with every other setting at its default.
    pub fn new(name: &str, provider: Provider, model: &str, base_url: &str) -> Profile {
        Profile {
            name: name.to_string(),
            provider,
            model: model.to_string(),
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key_env: provider.default_key_env().map(str::to_string),
            temperature: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            timeout: DEFAULT_TIMEOUT,
            first_token_timeout: DEFAULT_FIRST_TOKEN_TIMEOUT,
            first_token_per_1k: DEFAULT_FIRST_TOKEN_PER_1K,
            outage_retry: DEFAULT_OUTAGE_RETRY,
            concurrency: 4,
            fallback: None,
            context_tokens: DEFAULT_CONTEXT_TOKENS,
        }
    }

    /// Returns the time-to-first-token limit for a prompt of `prompt_tokens` tokens.
    pub fn first_token_limit(&self, prompt_tokens: u64) -> Duration {
        self.first_token_timeout
            + self
                .first_token_per_1k
                .mul_f64(prompt_tokens as f64 / 1000.0)
    }

    /// Returns `provider:model`, the label used in messages.
    pub fn label(&self) -> String {
        format!("{}:{}", self.provider.as_str(), self.model)
    }

    /// Reads the API key from the variable the profile names; `None` when it names none.
    ///
    /// A named but unset (or empty) variable is an error naming the variable, so the user
    /// knows exactly what to export.
    pub fn api_key(&self) -> Result<Option<ApiKey>, LlmError> {
        let Some(var) = &self.api_key_env else {
            return Ok(None);
        };
        // Through the store: keys named `*_API_KEY` are taken out of the environment at start.
        match orchestra_sys::exec::secret_env::var(var) {
            Some(v) if !v.trim().is_empty() => Ok(Some(ApiKey(v.trim().to_string()))),
            _ => Err(LlmError::Auth {
                model: self.label(),
                var: var.clone(),
                message: format!(
                    "profile `{}` needs an API key but {var} is not set",
                    self.name
                ),
            }),
        }
    }

    /// Returns the keys `profiles` read (those set), for scrubbing what their models say.
    pub fn keys_of<'p>(profiles: impl IntoIterator<Item = &'p Profile>) -> Vec<ApiKey> {
        profiles
            .into_iter()
            .filter_map(|p| p.api_key().ok().flatten())
            .collect()
    }
}

/// What a scrubbed API key is replaced with.
pub const KEY_PLACEHOLDER: &str = "<redacted>";

/// An API key. Its `Debug` prints a placeholder and it has no `Display`, so it cannot end up
/// in a log line or an error message by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (tests and callers holding one already).
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// Returns the secret, for the one place that builds the request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Returns `text` with every occurrence of the key replaced by a placeholder.
    pub fn scrub(&self, text: &str) -> String {
        ApiKey::scrub_all(std::slice::from_ref(self), text)
    }

    /// Returns `text` with every occurrence of any of `keys` replaced by a placeholder.
    pub fn scrub_all(keys: &[ApiKey], text: &str) -> String {
        orchestra_sys::redact::scrub(text, keys.iter().map(ApiKey::expose), KEY_PLACEHOLDER)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_print() {
        let k = ApiKey::new("sk-very-secret");
        assert!(!format!("{k:?}").contains("secret"));
        assert_eq!(k.scrub("auth sk-very-secret!"), "auth <redacted>!");
    }

    #[test]
    fn providers_parse_and_name_the_choices() {
        assert_eq!(
            Provider::parse("openai-compatible"),
            Ok(Provider::OpenaiCompatible)
        );
        let err = Provider::parse("gpt").unwrap_err();
        assert!(err.contains("anthropic") && err.contains("`gpt`"), "{err}");
        assert_eq!(Provider::Ollama.wire(), Wire::OpenAi);
    }

    #[test]
    fn a_missing_key_names_its_variable() {
        let mut p = Profile::new("x", Provider::Openai, "m", "http://h");
        p.api_key_env = Some("ORCHESTRA_TEST_UNSET_KEY_VAR".into());
        let err = p.api_key().unwrap_err();
        assert!(
            err.to_string().contains("ORCHESTRA_TEST_UNSET_KEY_VAR"),
            "{err}"
        );
        p.api_key_env = None;
        assert!(p.api_key().unwrap().is_none());
    }
}
