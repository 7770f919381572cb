//! The model tables: `[profiles.<name>]`, `[roles.<role>]` and `[prices."<model>"]`.

use serde::Deserialize;

use super::RepoConfig;

/// A `[profiles.<name>]` table: which provider and model an agent talks to.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    /// openai, anthropic, gemini, ollama, openrouter or openai-compatible.
    pub provider: String,
    /// The model's name as the provider knows it.
    pub model: String,
    /// The provider's address: required for openai-compatible; the others default to their
    /// public API (ollama to `http://127.0.0.1:11434/v1`).
    pub base_url: Option<String>,
    /// The *name* of the environment variable holding the API key (default: the provider's
    /// usual one, `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …; none for ollama and
    /// openai-compatible).
    pub api_key_env: Option<String>,
    /// Sampling temperature (default: the provider's).
    pub temperature: Option<f32>,
    /// Most tokens one answer may have (default 4096).
    pub max_tokens: Option<u32>,
    /// The stall limit: longest pause in an answer once its output began, in seconds (default
    /// 120).
    pub timeout_secs: Option<u64>,
    /// Base time to first token in seconds (default 600): a local server sends nothing while
    /// it reads the prompt.
    pub first_token_timeout_secs: Option<u64>,
    /// Seconds of time to first token added per thousand prompt tokens (default 60).
    pub first_token_secs_per_1k_tokens: Option<u64>,
    /// Seconds an unreachable model server is waited for before a call fails (default 600).
    pub outage_retry_secs: Option<u64>,
    /// Most calls in flight at once through this profile (default 4).
    pub concurrency: Option<usize>,
    /// The model's context window in tokens (default 32000).
    pub context_tokens: Option<u64>,
    /// The profile tried when this one keeps failing.
    pub fallback: Option<String>,
    /// Whether the repository's configuration defined this profile (the user's did not):
    /// the `ORCHESTRA_*` environment's quick profile wins over it.
    #[serde(skip)]
    pub from_repository: bool,
}

/// A `[roles.<role>]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleConfig {
    /// The profile this role uses.
    pub profile: Option<String>,
    /// The model this role's agents ask their profile's provider for instead of the
    /// profile's own `model` (same provider, key and address); its fallbacks keep theirs.
    #[serde(default)]
    pub model: Option<String>,
    /// Overrides the fallback of the role's profile.
    pub fallback: Option<String>,
    /// An agent CLI (claude, codex, gemini, opencode, qwen or an `[agents.cli.<name>]`) that
    /// works this role's packets instead of our agents.
    pub agent: Option<String>,
    /// The MCP servers (from `.mcp.json` or `[mcp.servers]`) this role's agents may use;
    /// replaces the role file's `mcp` list.
    pub mcp: Option<Vec<String>>,
}

/// Prices of one model in a currency unit per million tokens.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// The price of a million input tokens.
    pub input_per_mtok: f64,
    /// The price of a million output tokens.
    pub output_per_mtok: f64,
}

impl Price {
    /// Returns what `usage` costs at this price; the one place tokens meet prices, so every
    /// cost shown (agent events, budget, report, status) agrees.
    pub fn cost(&self, usage: crate::llm::Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1e6
    }
}

/// Returns the model name `[prices]` is keyed by in a journaled `profile:model` label (the
/// label itself when it has no profile part).
pub fn price_key(label: &str) -> &str {
    label.rsplit(':').next().unwrap_or(label)
}

/// How an entry of `[best_of] arms` or `[routing] workers` starts that keeps the role's
/// profile and asks its provider for another model: `model:<name>`.
pub const MODEL_WORKER: &str = "model:";

/// Returns the model an entry `model:<name>` of `[best_of] arms` or `[routing] workers` names,
/// `None` for any other entry, or a message saying the entry names no model (`setting` is
/// where it was written).
pub fn worker_model<'e>(entry: &'e str, setting: &str) -> Result<Option<&'e str>, String> {
    let Some(model) = entry.strip_prefix(MODEL_WORKER) else {
        return Ok(None);
    };
    let model = model.trim();
    if model.is_empty() {
        return Err(format!(
            "{setting} entry `{entry}` names no model: write `model:<name>` with the model's name as the provider knows it, e.g. `model:gpt-4.1-mini`"
        ));
    }
    Ok(Some(model))
}

impl RepoConfig {
    /// Returns this configuration with role `role`'s agents working as `worker` (an entry of
    /// `[best_of] arms` or `[routing] workers`) says: `model:<name>` keeps the role's profile
    /// and asks it for that model; any other entry is the `[profiles]` entry the role uses
    /// instead of its own. The one place such an entry becomes a role's profile and model.
    pub fn with_worker(&self, role: &str, worker: &str) -> RepoConfig {
        let mut config = self.clone();
        let entry = config.roles.entry(role.to_string()).or_default();
        match worker.strip_prefix(MODEL_WORKER) {
            Some(model) => entry.model = Some(model.trim().to_string()),
            None => entry.profile = Some(worker.to_string()),
        }
        config
    }

    /// Returns the price of `model` from `[prices]`, if it has one.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.prices.get(model).copied()
    }
}
