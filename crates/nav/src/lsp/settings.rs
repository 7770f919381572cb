//! Which language server serves which language, from `[nav.lsp]`, and whether it is installed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::lsp::config::{LspConfig, LspMode};
use crate::nav::Lang;

/// The languages servers may be configured for, with their default server commands.
pub const DEFAULTS: &[(&str, &str, &[&str])] = &[
    ("python", "pyright-langserver", &["--stdio"]),
    ("rust", "rust-analyzer", &[]),
    ("typescript", "typescript-language-server", &["--stdio"]),
    ("javascript", "typescript-language-server", &["--stdio"]),
    ("go", "gopls", &[]),
];

/// A server command: what runs, and so what may be shared between languages.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ServerCommand {
    pub command: String,
    pub args: Vec<String>,
    /// The one worktree a confined server serves (it reads no other); `None`: the server may
    /// serve several through workspace folders.
    #[serde(skip)]
    pub root: Option<PathBuf>,
}

/// The client tier's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    pub enabled: bool,
    /// Language → server command.
    pub servers: BTreeMap<String, ServerCommand>,
    /// Languages whose command comes from the configuration rather than the defaults.
    pub configured: Vec<String>,
    pub max_servers: usize,
    pub memory_mb: u64,
    pub startup_timeout: Duration,
    pub request_timeout: Duration,
    /// How servers start: as the user unless the caller confines them (see
    /// `agent::sandbox::language_servers`).
    pub launch: super::launch::Launch,
}

/// One language's server as `nav status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    pub language: String,
    pub command: String,
    pub args: Vec<String>,
    pub configured: bool,
    /// Where the command was found, if it was.
    pub found: Option<PathBuf>,
}

/// Returns the configuration's name of a file language (TSX is TypeScript).
pub fn language_of(lang: Lang) -> &'static str {
    match lang {
        Lang::Tsx => "typescript",
        other => other.name(),
    }
}

/// Returns the protocol's language id of a file.
pub fn language_id(path: &str) -> &'static str {
    match Lang::from_path(path) {
        Some(Lang::Tsx) => "typescriptreact",
        Some(Lang::JavaScript) if path.ends_with(".jsx") => "javascriptreact",
        Some(l) => l.name(),
        None => "plaintext",
    }
}

impl Settings {
    /// The settings `[nav.lsp]` gives (defaults for what it leaves out).
    pub fn from_config(c: &LspConfig) -> Settings {
        let mut servers: BTreeMap<String, ServerCommand> = DEFAULTS
            .iter()
            .map(|(lang, cmd, args)| {
                (
                    lang.to_string(),
                    ServerCommand {
                        command: cmd.to_string(),
                        args: args.iter().map(|a| a.to_string()).collect(),
                        root: None,
                    },
                )
            })
            .collect();
        let mut configured = Vec::new();
        for (lang, s) in &c.servers {
            servers.insert(
                lang.clone(),
                ServerCommand {
                    command: s.command.clone(),
                    args: s.args.clone(),
                    root: None,
                },
            );
            configured.push(lang.clone());
        }
        Settings {
            enabled: c.mode != Some(LspMode::Off),
            servers,
            configured,
            max_servers: c.max_servers.unwrap_or(4),
            memory_mb: c.memory_mb.unwrap_or(2048),
            startup_timeout: Duration::from_secs(c.startup_timeout.unwrap_or(60)),
            request_timeout: Duration::from_secs(c.request_timeout.unwrap_or(10)),
            launch: super::launch::Launch::default(),
        }
    }

    /// Returns the languages configured that no default covers (a typo, most likely).
    pub fn unknown_languages(&self) -> Vec<&str> {
        self.configured
            .iter()
            .filter(|l| !DEFAULTS.iter().any(|(d, _, _)| d == l))
            .map(String::as_str)
            .collect()
    }

    /// Returns the server command for files of `lang`, if servers are on.
    pub fn command_for(&self, lang: Lang) -> Option<&ServerCommand> {
        if !self.enabled {
            return None;
        }
        self.servers.get(language_of(lang))
    }

    /// Returns the server for files of `lang` in the worktree at `root`, if servers are on: a
    /// confined server is one per worktree, so its command names the worktree too.
    pub fn server_for(&self, lang: Lang, root: &Path) -> Option<ServerCommand> {
        let mut cmd = self.command_for(lang)?.clone();
        if self.launch.confine.is_some() {
            cmd.root = Some(root.to_path_buf());
        }
        Some(cmd)
    }

    /// Returns every language's server and whether it is installed.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|(lang, s)| ServerStatus {
                language: lang.clone(),
                command: s.command.clone(),
                args: s.args.clone(),
                configured: self.configured.contains(lang),
                found: which(&s.command),
            })
            .collect()
    }
}

/// Returns the executable `command` names: itself when it holds a `/`, else the first match
/// among `PATH`'s absolute entries (a relative one would depend on the current directory).
pub fn which(command: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let p = PathBuf::from(command);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(command))
        .find(|p| executable(p))
}
