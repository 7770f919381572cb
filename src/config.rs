//! The repository's configuration file, `.orchestra/config.toml`.
//!
//! Every key is optional; unknown keys are errors (with line and column) so a typo never
//! silently falls back to a default.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Settings read from `.orchestra/config.toml` at the top of the repository.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoConfig {
    #[serde(default)]
    pub worktree: WorktreeConfig,
    #[serde(default)]
    pub run: RunConfig,
    /// Model provider profiles by name (`[profiles.<name>]`).
    #[serde(default)]
    pub profiles: BTreeMap<String, ProfileConfig>,
    /// Per-role choices (`[roles.<role>] profile = …`).
    #[serde(default)]
    pub roles: BTreeMap<String, RoleConfig>,
    /// Prices per million tokens by model name (`[prices."<model>"]`), for cost accounting.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
}

/// A `[profiles.<name>]` table: which provider and model an agent talks to.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    /// openai, anthropic, gemini, ollama, openrouter or openai-compatible.
    pub provider: String,
    pub model: String,
    /// Required for openai-compatible; the others have a default.
    pub base_url: Option<String>,
    /// The *name* of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub timeout_secs: Option<u64>,
    /// Most calls in flight at once through this profile.
    pub concurrency: Option<usize>,
    /// The model's context window in tokens.
    pub context_tokens: Option<u64>,
    /// The profile tried when this one keeps failing.
    pub fallback: Option<String>,
}

/// A `[roles.<role>]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleConfig {
    /// The profile this role uses.
    pub profile: Option<String>,
    /// Overrides the fallback of the role's profile.
    pub fallback: Option<String>,
}

/// Prices of one model in a currency unit per million tokens.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

/// The `[worktree]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeConfig {
    /// Where packet worktrees are created; relative paths are relative to the repository top.
    pub root: Option<PathBuf>,
    /// A shell command run once in each new worktree (e.g. `npm ci`).
    pub setup: Option<String>,
}

/// The `[run]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Longest a worker or validation command may run, in seconds.
    pub timeout_secs: Option<u64>,
    /// Default cap on packets running at once.
    pub max_parallel: Option<usize>,
}

/// Why the configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
}

/// Returns the path of the repository configuration file under `toplevel`.
pub fn repo_config_path(toplevel: &Path) -> PathBuf {
    toplevel.join(".orchestra").join("config.toml")
}

impl RepoConfig {
    /// Reads the repository's configuration, or the defaults when the file does not exist.
    pub fn load(toplevel: &Path) -> Result<RepoConfig, ConfigError> {
        let path = repo_config_path(toplevel);
        let text = match fs_err::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RepoConfig::default()),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        let mut config: RepoConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.clone(),
            message: e.to_string().trim().to_string(),
        })?;
        if let Some(root) = &config.worktree.root
            && root.is_relative()
        {
            config.worktree.root = Some(toplevel.join(root));
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_gives_defaults_and_typos_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = RepoConfig::load(dir.path()).unwrap();
        assert!(cfg.worktree.root.is_none());
        std::fs::create_dir_all(dir.path().join(".orchestra")).unwrap();
        std::fs::write(
            repo_config_path(dir.path()),
            "[worktree]\nroot = \"../wt\"\nsetup = \"make\"\n[run]\ntimeout_secs = 5\n",
        )
        .unwrap();
        let cfg = RepoConfig::load(dir.path()).unwrap();
        assert_eq!(cfg.worktree.root, Some(dir.path().join("../wt")));
        assert_eq!(cfg.run.timeout_secs, Some(5));
        std::fs::write(repo_config_path(dir.path()), "[worktree]\nrooot = 1\n").unwrap();
        let err = RepoConfig::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("rooot") && err.contains("line 2"), "{err}");
    }
}
