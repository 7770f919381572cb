//! The `[sandbox]` table: how agents', workers', setup and validation commands are confined.

use std::path::Path;

use serde::Deserialize;

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

impl SandboxConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: SandboxConfig) -> SandboxConfig {
        SandboxConfig {
            if_unavailable: self.if_unavailable.or(base.if_unavailable),
            read: self.read.or(base.read),
            max_processes: self.max_processes.or(base.max_processes),
            max_memory_mb: self.max_memory_mb.or(base.max_memory_mb),
            max_file_mb: self.max_file_mb.or(base.max_file_mb),
            workers: self.workers.or(base.workers),
            network: self.network.or(base.network),
            writable: self.writable.or(base.writable),
            env: self.env.or(base.env),
        }
    }
}
