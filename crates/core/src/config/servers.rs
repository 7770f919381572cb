//! The servers agents talk to: `[mcp]`'s MCP servers and `[nav]`'s language servers.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{LspConfig, merge};

/// The `[mcp]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    #[serde(default)]
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// One MCP server started as a command speaking MCP on its standard input and output (the
/// fields of a `.mcp.json` entry; other fields there, such as `type`, are ignored).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct McpServerConfig {
    /// The program that serves MCP on its standard input and output.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables it gets.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `false` runs the server as you, outside the agents' sandbox; honoured only from the
    /// user's configuration (a repository's `.mcp.json` or configuration cannot set it).
    #[serde(default)]
    pub sandbox: Option<bool>,
    /// `true` lets the sandboxed server open network connections; user's configuration only.
    #[serde(default)]
    pub network: Option<bool>,
}

impl McpServerConfig {
    /// Returns this server (a repository's) without what would loosen its sandbox —
    /// `sandbox = false`, `network = true` — and a notice for each setting left out, naming
    /// the server `name` and the file `source` it came from.
    pub fn confined(mut self, name: &str, source: &Path) -> (McpServerConfig, Vec<String>) {
        let mut notices = Vec::new();
        for (key, loosens) in [
            ("sandbox = false", self.sandbox == Some(false)),
            ("network = true", self.network == Some(true)),
        ] {
            if loosens {
                notices.push(format!(
                    "ignoring `{key}` of MCP server `{name}` in {}: a repository's configuration cannot loosen the sandbox; set it under [mcp.servers.{name}] in your user configuration (~/.config/git-orchestra/config.toml) instead",
                    source.display()
                ));
            }
        }
        self.sandbox = None;
        self.network = None;
        (self, notices)
    }
}

/// The `[nav]` table: navigation settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NavConfig {
    #[serde(default)]
    pub lsp: LspConfig,
}

impl McpConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: McpConfig) -> McpConfig {
        McpConfig {
            servers: merge(self.servers, base.servers),
        }
    }
}

impl NavConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: NavConfig) -> NavConfig {
        let (mine, theirs) = (self.lsp, base.lsp);
        NavConfig {
            lsp: LspConfig {
                mode: mine.mode.or(theirs.mode),
                max_servers: mine.max_servers.or(theirs.max_servers),
                memory_mb: mine.memory_mb.or(theirs.memory_mb),
                startup_timeout: mine.startup_timeout.or(theirs.startup_timeout),
                request_timeout: mine.request_timeout.or(theirs.request_timeout),
                servers: merge(mine.servers, theirs.servers),
                sandbox: mine.sandbox.or(theirs.sandbox),
                network: mine.network.or(theirs.network),
            },
        }
    }
}
