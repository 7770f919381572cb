//! The repository's configuration file, `.orchestra/config.toml`.
//!
//! Every key is optional; unknown keys are errors (with line and column) so a typo never
//! silently falls back to a default.
//!
//! This file holds the whole file's shape ([`RepoConfig`]), loading, merging the repository's
//! file over the user's and the notices of what was left out; each table lives beside the
//! tables read by the same part of the program: `run.rs` (`[worktree]`, `[run]`, `[start]`),
//! `models.rs` (`[profiles]`, `[roles]`, `[prices]`), `sandbox.rs`, `agents.rs`,
//! `executor.rs`, `servers.rs` (`[mcp]`, `[nav]`), `notify.rs`, `eval.rs`, `land.rs`, `merge.rs`,
//! `budget.rs`, `best_of.rs` and `routing.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use orchestra_nav::lsp::config::{LspConfig, LspMode, LspServerConfig};

pub mod trust;

mod agents;
mod best_of;
mod budget;
mod eval;
mod executor;
mod land;
mod merge;
mod models;
mod notify;
mod routing;
mod run;
mod sandbox;
mod servers;

pub use agents::{AgentsConfig, CliAgentConfig};
pub use best_of::{BestOfConfig, DEFAULT_BEST_OF_N, STRATEGY_ARM, arm_of};
pub use budget::BudgetConfig;
pub use eval::EvalConfig;
pub use executor::{ActionsConfig, ExecutorConfig, ExecutorKind, SshConfig};
pub use land::LandConfig;
pub use merge::MergeConfig;
pub use models::{MODEL_WORKER, Price, ProfileConfig, RoleConfig, price_key, worker_model};
pub use notify::NotifyConfig;
pub use routing::{
    DEFAULT_MIN_OBSERVATIONS, DEFAULT_MIN_PASS_RATE, RoutedWorker, RoutingConfig, RoutingMode,
};
pub use run::{DEFAULT_FIX_ROUNDS, DEFAULT_RECYCLE, RunConfig, StartConfig, WorktreeConfig};
pub use sandbox::{
    DEFAULT_MAX_FILE_MB, DEFAULT_MAX_PROCESSES, NetworkUse, SandboxConfig, SandboxPolicy,
    WorkersSandbox,
};
pub use servers::{McpConfig, McpServerConfig, NavConfig};

/// The source text of this module and its tables' files, whose doc comments the generated
/// reference quotes.
pub const SOURCE: &str = concat!(
    include_str!("mod.rs"),
    include_str!("run.rs"),
    include_str!("models.rs"),
    include_str!("sandbox.rs"),
    include_str!("agents.rs"),
    include_str!("executor.rs"),
    include_str!("servers.rs"),
    include_str!("notify.rs"),
    include_str!("eval.rs"),
    include_str!("land.rs"),
    include_str!("merge.rs"),
    include_str!("budget.rs"),
    include_str!("best_of.rs"),
    include_str!("routing.rs"),
);

/// Settings read from `.orchestra/config.toml` at the top of the repository.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoConfig {
    #[serde(default)]
    pub worktree: WorktreeConfig,
    #[serde(default)]
    pub run: RunConfig,
    #[serde(default)]
    pub start: StartConfig,
    /// Model provider profiles by name (`[profiles.<name>]`).
    #[serde(default)]
    pub profiles: BTreeMap<String, ProfileConfig>,
    /// Per-role choices (`[roles.<role>] profile = …`).
    #[serde(default)]
    pub roles: BTreeMap<String, RoleConfig>,
    /// Prices per million tokens by model name (`[prices."<model>"]`), for cost accounting.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    #[serde(default)]
    pub sandbox: SandboxConfig,
    #[serde(default)]
    pub agents: AgentsConfig,
    /// What loading ignored and why (a repository's file trying to loosen the sandbox), for
    /// the command to show.
    #[serde(skip)]
    pub notices: Vec<String>,
    /// Whether the user trusts this repository's configuration (`git orchestra trust`): only
    /// then do its commands, servers, URLs and key names apply.
    #[serde(skip)]
    pub trusted: bool,
    #[serde(default)]
    pub nav: NavConfig,
    #[serde(default)]
    pub notify: NotifyConfig,
    /// MCP servers our agents may use (`[mcp.servers.<name>]`), beside `.mcp.json`'s.
    #[serde(default)]
    pub mcp: McpConfig,
    #[serde(default)]
    pub executor: ExecutorConfig,
    #[serde(default)]
    pub eval: EvalConfig,
    #[serde(default)]
    pub land: LandConfig,
    #[serde(default)]
    pub budget: BudgetConfig,
    #[serde(default)]
    pub best_of: BestOfConfig,
    #[serde(default)]
    pub routing: RoutingConfig,
    #[serde(default)]
    pub merge: MergeConfig,
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

/// Returns the user configuration file's path, `$XDG_CONFIG_HOME/git-orchestra/config.toml`
/// or `$HOME/.config/git-orchestra/config.toml`, from the environment lookup `env`; `None`
/// when neither variable is set.
///
/// The library never reads the home directory on its own: the command line passes the path
/// to [`RepoConfig::load_with_user`], so tests and embedders decide what applies.
pub fn user_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let base = match env("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env("HOME").filter(|v| !v.is_empty())?).join(".config"),
    };
    Some(base.join("git-orchestra").join("config.toml"))
}

impl RepoConfig {
    /// Returns how long a worker or validation command may run: `secs` (a command-line
    /// Reads the repository's configuration, or the defaults when the file does not exist.
    pub fn load(toplevel: &Path) -> Result<RepoConfig, ConfigError> {
        RepoConfig::load_with_user(toplevel, None)
    }

    /// Reads the repository's configuration merged over the user's file at `user` (when given
    /// and present): the repository wins key by key, and tables of roles and prices are merged
    /// entry by entry; a profile the user defines is never replaced by the repository's.
    ///
    /// What in the repository's file runs code, sends keys or data elsewhere (see
    /// [`trust::config_items`]) and `.mcp.json`'s servers apply only when the user trusts the
    /// repository (pins beside `user`, see [`trust::state`]); otherwise they are left out with
    /// a notice each. Without `user` the repository is untrusted.
    pub fn load_with_user(toplevel: &Path, user: Option<&Path>) -> Result<RepoConfig, ConfigError> {
        let path = repo_config_path(toplevel);
        let repo = RepoConfig::read(&path, Some(toplevel))?.unwrap_or_default();
        let user_config = match user {
            Some(path) => RepoConfig::read(path, None)?.unwrap_or_default(),
            None => RepoConfig::default(),
        };
        let (mut repo, mut notices, trusted) = RepoConfig::within_trust(toplevel, user, repo);
        // The repository's file travels with a clone and a packet's agent may edit it: it may
        // tighten the sandbox, never loosen it, trusted or not.
        let (sandbox, sandbox_notices) = repo.sandbox.within(&user_config.sandbox, &path);
        repo.sandbox = sandbox;
        notices.extend(sandbox_notices);
        notices.extend(repo.confine_servers(&path));
        if let Some(keep) = repo.worktree.keep_ignored.take() {
            let allowed = user_config
                .worktree
                .keep_ignored
                .clone()
                .unwrap_or_default();
            if keep.iter().any(|k| !allowed.contains(k)) {
                notices.push(format!(
                    "ignoring `[worktree] keep_ignored` entries in {} that your user configuration does not list: a repository's configuration cannot keep another packet's ignored files",
                    path.display()
                ));
            }
            repo.worktree.keep_ignored =
                Some(keep.into_iter().filter(|k| allowed.contains(k)).collect());
        }
        for profile in repo.profiles.values_mut() {
            profile.from_repository = true;
        }
        let mut config = repo.over(user_config);
        config.notices = notices;
        config.trusted = trusted;
        orchestra_sys::exec::command_env::allow(
            config.sandbox.env.iter().flatten().map(String::as_str),
        );
        orchestra_git::git::keep_ignored(
            config
                .worktree
                .keep_ignored
                .iter()
                .flatten()
                .map(String::as_str),
        );
        orchestra_sys::exec::secret_env::withhold(
            config
                .profiles
                .values()
                .filter_map(|p| p.api_key_env.as_deref()),
        );
        if let Some(root) = &config.worktree.root
            && root.is_relative()
        {
            config.worktree.root = Some(toplevel.join(root));
        }
        Ok(config)
    }

    /// Reads the repository's own configuration file at `toplevel` as it is, nothing left
    /// out (for `git orchestra trust` to show); the defaults when there is none.
    pub fn read_repository(toplevel: &Path) -> Result<RepoConfig, ConfigError> {
        Ok(RepoConfig::read(&repo_config_path(toplevel), Some(toplevel))?.unwrap_or_default())
    }

    /// Returns the repository's settings `repo` as far as the user's trust (pins beside
    /// `user`) allows, the notices of what was left out, and whether the repository is
    /// trusted. A trusted repository's `.mcp.json` servers join its `[mcp.servers]` (which
    /// win on a name both give).
    fn within_trust(
        toplevel: &Path,
        user: Option<&Path>,
        mut repo: RepoConfig,
    ) -> (RepoConfig, Vec<String>, bool) {
        let mut notices = Vec::new();
        let state = match user.map(|u| trust::state(toplevel, u)) {
            Some(Ok(state)) => state,
            Some(Err(e)) => {
                notices.push(format!(
                    "{e}; the repository's configuration is treated as untrusted"
                ));
                trust::TrustState::Untrusted
            }
            None => trust::TrustState::Untrusted,
        };
        if state == trust::TrustState::Trusted {
            let (servers, notes) = trust::mcp_json(toplevel);
            for (name, server) in servers {
                repo.mcp.servers.entry(name).or_insert(server);
            }
            notices.extend(notes);
            return (repo, notices, true);
        }
        let items = trust::config_items(&repo)
            .into_iter()
            .chain(trust::mcp_json_items(toplevel));
        notices.extend(items.map(|item| item.notice(state)));
        (trust::without_trusted_settings(repo), notices, false)
    }

    /// Drops from this configuration (a repository's, read from `path`) what would let its
    /// MCP or language servers run outside the sandbox or reach the network; returns a notice
    /// for each setting dropped.
    fn confine_servers(&mut self, path: &Path) -> Vec<String> {
        let mut notices = Vec::new();
        let servers = std::mem::take(&mut self.mcp.servers);
        for (name, server) in servers {
            let (server, dropped) = server.confined(&name, path);
            notices.extend(dropped);
            self.mcp.servers.insert(name, server);
        }
        let lsp = &mut self.nav.lsp;
        for (key, loosens) in [
            ("sandbox = false", lsp.sandbox.take() == Some(false)),
            ("network = true", lsp.network.take() == Some(true)),
        ] {
            if loosens {
                notices.push(format!(
                    "ignoring `[nav.lsp] {key}` in {}: a repository's configuration cannot loosen the sandbox; set it in your user configuration (~/.config/git-orchestra/config.toml) instead",
                    path.display()
                ));
            }
        }
        notices
    }

    /// Parses the file at `path`; `None` when it does not exist. A pipe, device or oversized
    /// file is refused, and so is a file resolving outside `within` (the repository's).
    fn read(path: &Path, within: Option<&Path>) -> Result<Option<RepoConfig>, ConfigError> {
        let text = match orchestra_sys::confine::read_text_file(
            path,
            within,
            orchestra_sys::confine::MAX_TEXT_FILE,
        ) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        toml::from_str(&text)
            .map(Some)
            .map_err(|e| ConfigError::Parse {
                path: path.to_path_buf(),
                message: e.to_string().trim().to_string(),
            })
    }

    /// Returns `self` with every setting it leaves unset taken from `base`.
    fn over(self, base: RepoConfig) -> RepoConfig {
        RepoConfig {
            worktree: self.worktree.over(base.worktree),
            run: self.run.over(base.run),
            eval: self.eval.over(base.eval),
            land: self.land.over(base.land),
            budget: self.budget.over(base.budget),
            best_of: self.best_of.over(base.best_of),
            routing: self.routing.over(base.routing),
            merge: self.merge.over(base.merge),
            start: self.start.over(base.start),
            // The user's profile of a name wins whole: where their keys go is theirs to say.
            profiles: merge(base.profiles, self.profiles),
            roles: merge(self.roles, base.roles),
            prices: merge(self.prices, base.prices),
            sandbox: self.sandbox.over(base.sandbox),
            notices: Vec::new(),
            trusted: false,
            mcp: self.mcp.over(base.mcp),
            agents: self.agents.over(base.agents),
            nav: self.nav.over(base.nav),
            notify: self.notify.over(base.notify),
            executor: self.executor.over(base.executor),
        }
    }
}

/// Returns the entries of `base` with those of `top` over them, name by name.
fn merge<V>(top: BTreeMap<String, V>, mut base: BTreeMap<String, V>) -> BTreeMap<String, V> {
    base.extend(top);
    base
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

    #[test]
    fn a_repository_cannot_take_its_servers_out_of_the_sandbox_but_the_user_can() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        std::fs::write(
            &user,
            "[mcp.servers.mine]\ncommand = \"mine\"\nsandbox = false\nnetwork = true\n[nav.lsp]\nnetwork = true\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join(".orchestra")).unwrap();
        std::fs::write(
            repo_config_path(dir.path()),
            "[mcp.servers.theirs]\ncommand = \"theirs\"\nsandbox = false\nnetwork = true\n[nav.lsp]\nsandbox = false\n",
        )
        .unwrap();
        // Trusted, so its servers apply at all; still within the sandbox.
        trust::pin(dir.path(), &user).unwrap();
        let cfg = RepoConfig::load_with_user(dir.path(), Some(&user)).unwrap();
        let theirs = &cfg.mcp.servers["theirs"];
        assert_eq!((theirs.sandbox, theirs.network), (None, None));
        let mine = &cfg.mcp.servers["mine"];
        assert_eq!((mine.sandbox, mine.network), (Some(false), Some(true)));
        assert_eq!(
            (cfg.nav.lsp.sandbox, cfg.nav.lsp.network),
            (None, Some(true))
        );
        let notices = cfg.notices.join("\n");
        for dropped in [
            "`sandbox = false` of MCP server `theirs`",
            "`network = true` of MCP server `theirs`",
            "`[nav.lsp] sandbox = false`",
        ] {
            assert!(notices.contains(dropped), "{notices}");
        }
        assert!(cfg.trusted);
    }

    #[test]
    fn the_repository_config_wins_over_the_users_entry_by_entry_but_for_profiles() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        std::fs::write(
            &user,
            "[run]\ntimeout_secs = 9\nmax_parallel = 3\n[start]\ndocs = true\ntests = true\n[profiles.default]\nprovider = \"openai\"\nmodel = \"user-model\"\n[profiles.fast]\nprovider = \"ollama\"\nmodel = \"small\"\n[prices.\"user-model\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join(".orchestra")).unwrap();
        std::fs::write(
            repo_config_path(dir.path()),
            "[run]\ntimeout_secs = 5\n[start]\ntests = false\n[profiles.default]\nprovider = \"anthropic\"\nmodel = \"repo-model\"\n",
        )
        .unwrap();
        let cfg = RepoConfig::load_with_user(dir.path(), Some(&user)).unwrap();
        assert_eq!(
            (cfg.start.docs, cfg.start.tests, cfg.start.clarify),
            (Some(true), Some(false), None)
        );
        assert_eq!(
            (cfg.run.timeout_secs, cfg.run.max_parallel),
            (Some(5), Some(3))
        );
        // A profile the user defines is theirs whole; the repository's of that name is not used.
        assert_eq!(cfg.profiles["default"].model, "user-model");
        assert_eq!(cfg.profiles["fast"].model, "small");
        assert!(cfg.prices.contains_key("user-model"));
        // Without the user file, only the repository's settings apply.
        let cfg = RepoConfig::load(dir.path()).unwrap();
        assert!(!cfg.profiles.contains_key("fast"));
        // A typo in the user file names that file.
        std::fs::write(&user, "[runn]\n").unwrap();
        let err = RepoConfig::load_with_user(dir.path(), Some(&user))
            .unwrap_err()
            .to_string();
        assert!(err.contains("user.toml") && err.contains("runn"), "{err}");
        std::fs::write(&user, "[sandbox]\nif_unavailable = \"warn\"\n").unwrap();
        let cfg = RepoConfig::load_with_user(dir.path(), Some(&user)).unwrap();
        assert_eq!(cfg.sandbox.if_unavailable, Some(SandboxPolicy::Warn));
        std::fs::write(&user, "[sandbox]\nif_unavailable = \"allow\"\n").unwrap();
        let err = RepoConfig::load_with_user(dir.path(), Some(&user))
            .unwrap_err()
            .to_string();
        assert!(err.contains("refuse") && err.contains("warn"), "{err}");
        let missing = dir.path().join("none.toml");
        assert!(RepoConfig::load_with_user(dir.path(), Some(&missing)).is_ok());
    }

    #[test]
    fn a_repositorys_env_and_keep_ignored_lists_only_narrow_the_users() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        std::fs::write(
            &user,
            "[sandbox]\nenv = [\"HTTPS_PROXY\", \"MY_TOOL\"]\n\n[worktree]\nkeep_ignored = [\"target\"]\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join(".orchestra")).unwrap();
        std::fs::write(
            dir.path().join(".orchestra/config.toml"),
            "[sandbox]\nenv = [\"MY_TOOL\", \"GITHUB_TOKEN\"]\n\n[worktree]\nkeep_ignored = [\"target\", \"node_modules\"]\n",
        )
        .unwrap();
        let cfg = RepoConfig::load_with_user(dir.path(), Some(&user)).unwrap();
        assert_eq!(cfg.sandbox.env, Some(vec!["MY_TOOL".to_string()]));
        assert_eq!(cfg.worktree.keep_ignored, Some(vec!["target".to_string()]));
        assert_eq!(cfg.notices.len(), 2, "{:?}", cfg.notices);
    }

    #[test]
    fn a_repository_may_tighten_the_sandbox_never_loosen_it() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        let repo = |body: &str| {
            std::fs::create_dir_all(dir.path().join(".orchestra")).unwrap();
            std::fs::write(dir.path().join(".orchestra/config.toml"), body).unwrap();
            RepoConfig::load_with_user(dir.path(), Some(&user)).unwrap()
        };
        std::fs::write(
            &user,
            "[sandbox]\nnetwork = [\"worker\", \"setup\"]\nmax_file_mb = 100\n",
        )
        .unwrap();
        let cfg = repo(
            "[sandbox]\nworkers = \"off\"\nnetwork = [\"setup\", \"validation\"]\nmax_file_mb = 50\nmax_processes = 2000\nwritable = [\"/\"]\n",
        );
        assert_eq!(cfg.sandbox.workers, None);
        assert_eq!(cfg.sandbox.network, Some(vec![NetworkUse::Setup]));
        assert_eq!(cfg.sandbox.max_file_mb, Some(50));
        assert_eq!(cfg.sandbox.max_processes, None);
        assert_eq!(cfg.sandbox.writable, None);
        assert_eq!(cfg.notices.len(), 4, "{:?}", cfg.notices);
        assert!(cfg.notices.iter().all(|n| n.contains("cannot loosen")));
        // Tightening is taken, silently; the user's own loosening stays.
        std::fs::write(
            &user,
            "[sandbox]\nworkers = \"off\"\nif_unavailable = \"warn\"\n",
        )
        .unwrap();
        let cfg = repo("[sandbox]\nnetwork = []\nif_unavailable = \"refuse\"\n");
        assert_eq!(cfg.sandbox.workers, Some(WorkersSandbox::Off));
        assert_eq!(cfg.sandbox.if_unavailable, Some(SandboxPolicy::Refuse));
        assert_eq!(cfg.sandbox.network_uses(), Vec::new());
        assert!(cfg.notices.is_empty(), "{:?}", cfg.notices);
    }

    #[test]
    fn the_user_config_path_follows_xdg_then_home() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            user_config_path(&env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")])),
            Some(PathBuf::from("/x/git-orchestra/config.toml"))
        );
        assert_eq!(
            user_config_path(&env(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.config/git-orchestra/config.toml"))
        );
        assert_eq!(user_config_path(&env(&[])), None);
    }
}
