//! The repository's configuration file, `.orchestra/config.toml`.
//!
//! Every key is optional; unknown keys are errors (with line and column) so a typo never
//! silently falls back to a default.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use orchestra_nav::lsp::config::{LspConfig, LspMode, LspServerConfig};

pub mod trust;

/// The source text of this module, whose doc comments the generated reference quotes.
pub const SOURCE: &str = include_str!("config.rs");

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
    pub budget: BudgetConfig,
}

/// The `[budget]` table: soft thresholds of a `start` run, where it pauses to ask a person
/// instead of failing (the hard limits are `start --budget-tokens`, `--budget-cost`, …).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Cost (in `[prices]`' currency) at which a `start` run pauses and asks whether to go on;
    /// going on (`git orchestra answer budget …` and `resume`) asks again at the next multiple.
    pub ask_at_cost: Option<f64>,
    /// Tokens (input plus output, every role) at which a `start` run pauses and asks whether to
    /// go on; going on asks again at the next multiple.
    pub ask_at_tokens: Option<u64>,
}

/// The `[eval]` table: how `git orchestra eval` checks tasks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    /// The test command `eval tasks` checks candidates with (run with `sh -c` at the top of a
    /// scratch checkout, sandboxed like validation commands; default: the test command `init`
    /// detects). Applies only once the repository is trusted.
    pub test: Option<String>,
}

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

/// The `[executor]` table: where packets run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorConfig {
    /// `local` (default): in worktrees beside the repository; `ssh`: on `[executor.ssh]` hosts;
    /// `github-actions`: one workflow run per packet (`[executor.github-actions]`).
    pub kind: Option<ExecutorKind>,
    #[serde(default)]
    pub ssh: SshConfig,
    #[serde(default, rename = "github-actions")]
    pub github_actions: ActionsConfig,
}

/// The `[executor.github-actions]` table: packets as runs of a `workflow_dispatch` workflow.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionsConfig {
    /// The workflow file's name under `.github/workflows/` (default `orchestra-packet.yml`).
    pub workflow: Option<String>,
    /// The branch (or tag) whose workflow file runs (default: the branch checked out here).
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// The URL the runners fetch jobs from and push results to (default: the forge remote's
    /// URL, `orchestra.forge.remote`, `origin` unless set); it must name that same repository,
    /// since the runners push with its token.
    pub remote_url: Option<String>,
    /// Milliseconds between two looks at a workflow run (default 10000).
    pub poll_ms: Option<u64>,
}

/// Where a run's packets run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExecutorKind {
    Local,
    Ssh,
    GithubActions,
}

impl ExecutorKind {
    /// Returns the kind's name as configured.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutorKind::Local => "local",
            ExecutorKind::Ssh => "ssh",
            ExecutorKind::GithubActions => "github-actions",
        }
    }
}

/// The `[executor.ssh]` table: the hosts packets run on over ssh.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SshConfig {
    /// Host names as `ssh` knows them (its config's `Host` entries or `user@host`).
    pub hosts: Option<Vec<String>>,
    /// Packets one host runs at once (default 2).
    pub slots: Option<usize>,
    /// The ssh program and its options, split like a shell word list (default `ssh`).
    pub ssh_command: Option<String>,
    /// Where on each host the repository packets meet in lives, relative to the remote home
    /// unless absolute (default `.cache/git-orchestra/remote`).
    pub remote_dir: Option<String>,
}

/// The `[nav]` table: navigation settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NavConfig {
    #[serde(default)]
    pub lsp: LspConfig,
}

/// The `[notify]` table: where to tell people that a run needs them or ended.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// An address that gets a JSON post (Slack- and Discord-compatible) when a packet waits for
    /// a person, a plan waits for approval, or a run ends.
    pub webhook: Option<String>,
}

/// The `[agents]` table: how far agents may consult each other and spawn subtasks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsConfig {
    /// Deepest chain of consultations (a consulted role consulting another …); default 2.
    pub consult_depth: Option<u32>,
    /// Most turns a consulted role may take to answer; default 6.
    pub consult_turns: Option<u32>,
    /// Most turns the clarifier, the planner and the plan reviewer may read the code before
    /// answering; default 12.
    pub explore_turns: Option<u32>,
    /// Deepest nesting of subtasks; default 1 (a subtask cannot spawn subtasks).
    pub subtask_depth: Option<u32>,
    /// Most subtasks one packet may spawn; default 3.
    pub subtasks_per_packet: Option<u32>,
    /// Agent CLIs by name (`[agents.cli.<name>]`): a built-in one changed, or another one.
    #[serde(default)]
    pub cli: BTreeMap<String, CliAgentConfig>,
}

/// An `[agents.cli.<name>]` table: how to run an agent CLI as a packet's worker.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CliAgentConfig {
    /// The program (default: the table's name).
    pub command: Option<String>,
    /// Arguments before the prompt (after a built-in adapter's own).
    pub args: Option<Vec<String>>,
    /// How the prompt is passed: `arg` (default), `stdin` or `flag:<flag>`.
    pub prompt: Option<String>,
    /// Its output format: claude, codex, gemini, qwen, opencode or text (default).
    pub output: Option<String>,
    /// The model, passed as `--model`.
    pub model: Option<String>,
    /// Extra environment variables (keys belong in the environment, not here).
    pub env: Option<BTreeMap<String, String>>,
    /// Seconds it may print nothing before it counts as stalled and is stopped (default 900).
    pub stall_secs: Option<u64>,
    /// Seconds the packet's activity may go without a line while it runs before a note says
    /// it is still running, for how long, and what it printed last (default 30).
    pub heartbeat_secs: Option<u64>,
}

/// The `[sandbox]` table: how agents' commands are confined.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// What to do where Landlock is unavailable; default `refuse`.
    pub if_unavailable: Option<SandboxPolicy>,
    /// Paths agents' commands may read besides the defaults (`~/` is the home directory);
    /// a credential location listed here (`~/.docker`) becomes readable.
    pub read: Option<Vec<String>>,
    /// Processes an agent's command may run at once beyond the user's others; default 1024.
    pub max_processes: Option<u64>,
    /// Data memory per process of an agent's command, in MiB; default three quarters of RAM.
    pub max_memory_mb: Option<u64>,
    /// Largest file an agent's command may write, in MiB; default 4096.
    pub max_file_mb: Option<u64>,
    /// How external worker commands, setup and validation commands (the merged tree's and
    /// `review --validate`'s too) run: `landlock` (the default) or `off` (as the user).
    pub workers: Option<WorkersSandbox>,
    /// Which of those commands may open network connections; default `["worker"]` (an agent
    /// CLI needs its provider); setup and validation commands get none unless listed.
    pub network: Option<Vec<NetworkUse>>,
    /// Paths those commands may write besides their tree and temporary directory: tool
    /// caches such as `~/.cargo/registry` or `~/.npm` (`~/` is the home directory).
    pub writable: Option<Vec<String>>,
    /// Names of environment variables sandboxed commands keep from the engine's environment
    /// besides those tools need (`PATH`, `HOME`, the locale, toolchains): a proxy's
    /// `HTTPS_PROXY`, a tool's setting. A repository's list can only narrow the user's.
    pub env: Option<Vec<String>>,
}

/// Processes a sandboxed command may add to its user's by default.
pub const DEFAULT_MAX_PROCESSES: u64 = 1024;

/// Largest file a sandboxed command may write by default, in MiB.
pub const DEFAULT_MAX_FILE_MB: u64 = 4096;

/// `[sandbox] workers`: whether worker, setup and validation commands are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkersSandbox {
    /// Under the Landlock launcher, like agents' commands.
    Landlock,
    /// As the user, unconfined.
    Off,
}

/// An entry of `[sandbox] network`: a kind of command allowed to open connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkUse {
    /// External worker commands (`--worker-cmd`), conflict resolution by them included.
    Worker,
    /// `[worktree] setup` commands.
    Setup,
    /// Validation commands: a packet's, the merged tree's, `review --validate`'s.
    Validation,
}

impl SandboxConfig {
    /// Returns the kinds of command allowed the network (default: the worker).
    pub fn network_uses(&self) -> Vec<NetworkUse> {
        self.network
            .clone()
            .unwrap_or_else(|| vec![NetworkUse::Worker])
    }

    /// Returns this table (a repository's, read from `path`) with everything that would
    /// loosen `user`'s sandbox left out — running unconfined where the user's settings do not
    /// say so, paths to read or write, network the user's settings do not allow, higher
    /// limits — and a notice for each setting left out.
    pub fn within(&self, user: &SandboxConfig, path: &Path) -> (SandboxConfig, Vec<String>) {
        let mut notices = Vec::new();
        let mut ignore = |what: &str| {
            notices.push(format!(
                "ignoring `[sandbox] {what}` in {}: a repository's configuration cannot loosen the sandbox; set it in your user configuration (~/.config/git-orchestra/config.toml) instead",
                path.display()
            ));
        };
        let mut out = SandboxConfig::default();
        match (self.if_unavailable, user.if_unavailable) {
            (Some(SandboxPolicy::Warn), Some(SandboxPolicy::Warn)) | (None, _) => {}
            (Some(SandboxPolicy::Warn), _) => ignore("if_unavailable = \"warn\""),
            (Some(p), _) => out.if_unavailable = Some(p),
        }
        match (self.workers, user.workers) {
            (Some(WorkersSandbox::Off), Some(WorkersSandbox::Off)) | (None, _) => {}
            (Some(WorkersSandbox::Off), _) => ignore("workers = \"off\""),
            (Some(w), _) => out.workers = Some(w),
        }
        if self.read.as_ref().is_some_and(|r| !r.is_empty()) {
            ignore("read");
        }
        if self.writable.as_ref().is_some_and(|w| !w.is_empty()) {
            ignore("writable");
        }
        if let Some(env) = &self.env {
            let allowed = user.env.clone().unwrap_or_default();
            if env.iter().any(|n| !allowed.contains(n)) {
                ignore("env (beyond what the user allows)");
            }
            out.env = Some(
                env.iter()
                    .filter(|n| allowed.contains(n))
                    .cloned()
                    .collect(),
            );
        }
        if let Some(network) = &self.network {
            let allowed = user.network_uses();
            if network.iter().any(|n| !allowed.contains(n)) {
                ignore("network (beyond what the user allows)");
            }
            out.network = Some(
                network
                    .iter()
                    .copied()
                    .filter(|n| allowed.contains(n))
                    .collect(),
            );
        }
        // A limit may only be lowered.
        let limits = [
            (
                self.max_processes,
                user.max_processes.or(Some(DEFAULT_MAX_PROCESSES)),
                "max_processes",
            ),
            (self.max_memory_mb, user.max_memory_mb, "max_memory_mb"),
            (
                self.max_file_mb,
                user.max_file_mb.or(Some(DEFAULT_MAX_FILE_MB)),
                "max_file_mb",
            ),
        ];
        let [processes, memory, file] = limits.map(|(mine, theirs, name)| match (mine, theirs) {
            (Some(m), Some(t)) if m > t => {
                ignore(&format!("{name} = {m}"));
                None
            }
            (m, _) => m,
        });
        out.max_processes = processes;
        out.max_memory_mb = memory;
        out.max_file_mb = file;
        (out, notices)
    }
}

/// What agents' commands do where the kernel cannot confine them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxPolicy {
    /// run_command refuses to run anything.
    Refuse,
    /// run_command runs commands unconfined, after a warning.
    Warn,
}

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
    /// Overrides the fallback of the role's profile.
    pub fallback: Option<String>,
    /// An agent CLI (claude, codex, gemini, opencode, qwen or an `[agents.cli.<name>]`) that
    /// works this role's packets instead of our agents.
    pub agent: Option<String>,
    /// The MCP servers (from `.mcp.json` or `[mcp.servers]`) this role's agents may use;
    /// replaces the role file's `mcp` list.
    pub mcp: Option<Vec<String>>,
}

/// Default fix rounds of a packet whose scope check, validation or review fails.
pub const DEFAULT_FIX_ROUNDS: u32 = 2;

/// How many clean worktrees of integrated packets are parked when `[worktree] recycle` is not
/// set: a small pool makes a repository's later packets nearly free to start.
pub const DEFAULT_RECYCLE: usize = 2;

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

/// The `[worktree]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeConfig {
    /// Where packet worktrees are created; relative paths are relative to the repository top
    /// (default `<repo-parent>/.orchestra/<repo-name>`).
    pub root: Option<PathBuf>,
    /// A shell command run once in each new worktree (e.g. `npm ci`).
    pub setup: Option<String>,
    /// How many clean worktrees of integrated packets to keep for new packets (default 2;
    /// `0` turns recycling off).
    pub recycle: Option<usize>,
    /// Ignored paths, relative to a worktree's top (`target`), a parked worktree keeps as warm
    /// caches for the next packet (default none: every other ignored file is dropped). A
    /// repository's list can only narrow the user's.
    pub keep_ignored: Option<Vec<String>>,
    /// Check out only what each packet needs (cone mode): the directories of its declared
    /// files, the top-level files and `sparse_include` (default false).
    pub sparse: Option<bool>,
    /// Directories every sparse worktree gets besides its packet's (what builds and tests need).
    pub sparse_include: Option<Vec<String>>,
}

/// The `[run]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Longest a worker or validation command may run, in seconds (default 3600).
    pub timeout_secs: Option<u64>,
    /// Default cap on packets running at once (default: the plan's `max_parallel`, else 4).
    pub max_parallel: Option<usize>,
    /// How many times a packet whose scope check or validation fails goes back to its worker
    /// with the failure (default 2; 0 fails it at once).
    pub fix_rounds: Option<u32>,
    /// How many more times a worker runs after a failure that may pass on another try (a
    /// model outage, a stall, a timeout, a killed process; default 2).
    pub retries: Option<u32>,
    /// The first wait before such a retry, in milliseconds, doubling after each (default 5000).
    pub retry_delay_ms: Option<u64>,
    /// Keep the worktrees of integrated packets (default: removed after the merge, unsaved
    /// work saved first; their branches stay until `gc`).
    pub keep_worktrees: Option<bool>,
}

/// The `[start]` table: defaults of `git orchestra start` that its flags turn on.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartConfig {
    /// Run the clarification phase (default true; `--no-clarify` turns it off).
    pub clarify: Option<bool>,
    /// With `--merge`, document the integrated change afterwards (as `--docs`; default false).
    pub docs: Option<bool>,
    /// With `--merge`, test the integrated change afterwards (as `--tests`; default false).
    pub tests: Option<bool>,
    /// Seconds a model call waits before the terminal says so (default 15); later lines
    /// follow every twice as long.
    pub wait_line_secs: Option<u64>,
}

/// Returns the entries of `base` with those of `top` added over them.
fn merge<V>(top: BTreeMap<String, V>, mut base: BTreeMap<String, V>) -> BTreeMap<String, V> {
    base.extend(top);
    base
}

impl BudgetConfig {
    /// Returns `self` with every threshold it leaves unset taken from `base`.
    fn over(self, base: BudgetConfig) -> BudgetConfig {
        BudgetConfig {
            ask_at_cost: self.ask_at_cost.or(base.ask_at_cost),
            ask_at_tokens: self.ask_at_tokens.or(base.ask_at_tokens),
        }
    }
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
    /// argument) over `[run] timeout_secs` over [`orchestra_sys::exec::DEFAULT_TIMEOUT`].
    pub fn timeout(&self, secs: Option<u64>) -> std::time::Duration {
        secs.or(self.run.timeout_secs).map_or(
            orchestra_sys::exec::DEFAULT_TIMEOUT,
            std::time::Duration::from_secs,
        )
    }

    /// Returns where packet worktrees go: `dir` (a command-line argument, relative to `cwd`)
    /// over `[worktree] root`; `None` leaves the default beside the repository.
    pub fn worktree_root(&self, dir: Option<&Path>, cwd: &Path) -> Option<PathBuf> {
        dir.map(|p| cwd.join(p))
            .or_else(|| self.worktree.root.clone())
    }

    /// Returns the cap on packets running at once: `n` (a command-line argument) over
    /// `[run] max_parallel`; `None` leaves it to the plan.
    pub fn max_parallel(&self, n: Option<u16>) -> Option<usize> {
        n.map(usize::from).or(self.run.max_parallel)
    }

    /// Returns how many fix rounds a packet gets after a failed scope check or validation.
    pub fn fix_rounds(&self) -> u32 {
        self.run.fix_rounds.unwrap_or(DEFAULT_FIX_ROUNDS)
    }

    /// Returns how many more times a worker runs after a transient failure, and the first
    /// wait before it.
    pub fn retries(&self) -> (u32, std::time::Duration) {
        (
            self.run.retries.unwrap_or(2),
            std::time::Duration::from_millis(self.run.retry_delay_ms.unwrap_or(5000)),
        )
    }

    /// Returns how many worktrees of integrated packets are parked for new packets (`[worktree]
    /// recycle`, default [`DEFAULT_RECYCLE`]).
    pub fn recycle_worktrees(&self) -> usize {
        self.worktree.recycle.unwrap_or(DEFAULT_RECYCLE)
    }

    /// Returns the directories every packet's sparse worktree gets when worktrees are sparse
    /// (`[worktree] sparse`), or `None` for full checkouts.
    pub fn sparse_worktrees(&self) -> Option<Vec<String>> {
        self.worktree
            .sparse
            .unwrap_or(false)
            .then(|| self.worktree.sparse_include.clone().unwrap_or_default())
    }

    /// Returns true if and only if the worktrees of integrated packets are kept.
    pub fn keep_worktrees(&self) -> bool {
        self.run.keep_worktrees.unwrap_or(false)
    }

    /// Returns the price of `model` from `[prices]`, if it has one.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.prices.get(model).copied()
    }

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
            worktree: WorktreeConfig {
                root: self.worktree.root.or(base.worktree.root),
                setup: self.worktree.setup.or(base.worktree.setup),
                recycle: self.worktree.recycle.or(base.worktree.recycle),
                keep_ignored: self.worktree.keep_ignored.or(base.worktree.keep_ignored),
                sparse: self.worktree.sparse.or(base.worktree.sparse),
                sparse_include: self
                    .worktree
                    .sparse_include
                    .or(base.worktree.sparse_include),
            },
            run: RunConfig {
                timeout_secs: self.run.timeout_secs.or(base.run.timeout_secs),
                max_parallel: self.run.max_parallel.or(base.run.max_parallel),
                fix_rounds: self.run.fix_rounds.or(base.run.fix_rounds),
                keep_worktrees: self.run.keep_worktrees.or(base.run.keep_worktrees),
                retries: self.run.retries.or(base.run.retries),
                retry_delay_ms: self.run.retry_delay_ms.or(base.run.retry_delay_ms),
            },
            eval: EvalConfig {
                test: self.eval.test.or(base.eval.test),
            },
            budget: self.budget.over(base.budget),
            start: StartConfig {
                clarify: self.start.clarify.or(base.start.clarify),
                docs: self.start.docs.or(base.start.docs),
                tests: self.start.tests.or(base.start.tests),
                wait_line_secs: self.start.wait_line_secs.or(base.start.wait_line_secs),
            },
            // The user's profile of a name wins whole: where their keys go is theirs to say.
            profiles: merge(base.profiles, self.profiles),
            roles: merge(self.roles, base.roles),
            prices: merge(self.prices, base.prices),
            sandbox: SandboxConfig {
                if_unavailable: self.sandbox.if_unavailable.or(base.sandbox.if_unavailable),
                read: self.sandbox.read.or(base.sandbox.read),
                max_processes: self.sandbox.max_processes.or(base.sandbox.max_processes),
                max_memory_mb: self.sandbox.max_memory_mb.or(base.sandbox.max_memory_mb),
                max_file_mb: self.sandbox.max_file_mb.or(base.sandbox.max_file_mb),
                workers: self.sandbox.workers.or(base.sandbox.workers),
                network: self.sandbox.network.or(base.sandbox.network),
                writable: self.sandbox.writable.or(base.sandbox.writable),
                env: self.sandbox.env.or(base.sandbox.env),
            },
            notices: Vec::new(),
            trusted: false,
            mcp: McpConfig {
                servers: merge(self.mcp.servers, base.mcp.servers),
            },
            agents: AgentsConfig {
                consult_depth: self.agents.consult_depth.or(base.agents.consult_depth),
                consult_turns: self.agents.consult_turns.or(base.agents.consult_turns),
                explore_turns: self.agents.explore_turns.or(base.agents.explore_turns),
                subtask_depth: self.agents.subtask_depth.or(base.agents.subtask_depth),
                subtasks_per_packet: self
                    .agents
                    .subtasks_per_packet
                    .or(base.agents.subtasks_per_packet),
                cli: merge(self.agents.cli, base.agents.cli),
            },
            nav: NavConfig {
                lsp: LspConfig {
                    mode: self.nav.lsp.mode.or(base.nav.lsp.mode),
                    max_servers: self.nav.lsp.max_servers.or(base.nav.lsp.max_servers),
                    memory_mb: self.nav.lsp.memory_mb.or(base.nav.lsp.memory_mb),
                    startup_timeout: self
                        .nav
                        .lsp
                        .startup_timeout
                        .or(base.nav.lsp.startup_timeout),
                    request_timeout: self
                        .nav
                        .lsp
                        .request_timeout
                        .or(base.nav.lsp.request_timeout),
                    servers: merge(self.nav.lsp.servers, base.nav.lsp.servers),
                    sandbox: self.nav.lsp.sandbox.or(base.nav.lsp.sandbox),
                    network: self.nav.lsp.network.or(base.nav.lsp.network),
                },
            },
            notify: NotifyConfig {
                webhook: self.notify.webhook.or(base.notify.webhook),
            },
            executor: ExecutorConfig {
                kind: self.executor.kind.or(base.executor.kind),
                ssh: SshConfig {
                    hosts: self.executor.ssh.hosts.or(base.executor.ssh.hosts),
                    slots: self.executor.ssh.slots.or(base.executor.ssh.slots),
                    ssh_command: self
                        .executor
                        .ssh
                        .ssh_command
                        .or(base.executor.ssh.ssh_command),
                    remote_dir: self
                        .executor
                        .ssh
                        .remote_dir
                        .or(base.executor.ssh.remote_dir),
                },
                github_actions: {
                    let (mine, theirs) =
                        (self.executor.github_actions, base.executor.github_actions);
                    ActionsConfig {
                        workflow: mine.workflow.or(theirs.workflow),
                        git_ref: mine.git_ref.or(theirs.git_ref),
                        remote_url: mine.remote_url.or(theirs.remote_url),
                        poll_ms: mine.poll_ms.or(theirs.poll_ms),
                    }
                },
            },
        }
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
