//! The `[nav.lsp]` settings table: which language servers navigation uses, and how.
//!
//! It lives beside the client tier so navigation needs nothing from the rest of the
//! configuration; `config` embeds it as `[nav] lsp`.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The source text of this module, whose doc comments the generated reference quotes.
pub const SOURCE: &str = include_str!("config.rs");

/// The `[nav.lsp]` table: language servers behind navigation.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LspConfig {
    /// `auto` (default): use a server found on `PATH` or configured; `off`: the graph only.
    pub mode: Option<LspMode>,
    /// Most servers running at once in one process (default 4).
    pub max_servers: Option<usize>,
    /// A server using more resident memory than this is shut down (default 2048).
    pub memory_mb: Option<u64>,
    /// Seconds a server may take to start before answers stop waiting for it (default 60).
    pub startup_timeout: Option<u64>,
    /// Seconds a ready server may take to answer one request (default 10).
    pub request_timeout: Option<u64>,
    /// Per language (`python`, `rust`, `typescript`, `javascript`, `go`): the server's command.
    #[serde(default)]
    pub servers: BTreeMap<String, LspServerConfig>,
    /// `false` runs language servers as you, outside the sandbox; user's configuration only.
    pub sandbox: Option<bool>,
    /// `true` lets sandboxed language servers open network connections; user's configuration
    /// only.
    pub network: Option<bool>,
}

/// Whether language servers are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LspMode {
    Auto,
    Off,
}

/// One language's server command (`[nav.lsp.servers.python]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LspServerConfig {
    /// The language server's program (e.g. `pyright-langserver`).
    pub command: String,
    /// Its arguments (e.g. `["--stdio"]`).
    #[serde(default)]
    pub args: Vec<String>,
}
