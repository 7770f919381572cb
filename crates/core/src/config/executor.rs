//! The `[executor]` table: where packets run (locally, over ssh, on GitHub Actions).

use serde::Deserialize;

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

impl ExecutorConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: ExecutorConfig) -> ExecutorConfig {
        ExecutorConfig {
            kind: self.kind.or(base.kind),
            ssh: self.ssh.over(base.ssh),
            github_actions: self.github_actions.over(base.github_actions),
        }
    }
}

impl SshConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    fn over(self, base: SshConfig) -> SshConfig {
        SshConfig {
            hosts: self.hosts.or(base.hosts),
            slots: self.slots.or(base.slots),
            ssh_command: self.ssh_command.or(base.ssh_command),
            remote_dir: self.remote_dir.or(base.remote_dir),
        }
    }
}

impl ActionsConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    fn over(self, base: ActionsConfig) -> ActionsConfig {
        ActionsConfig {
            workflow: self.workflow.or(base.workflow),
            git_ref: self.git_ref.or(base.git_ref),
            remote_url: self.remote_url.or(base.remote_url),
            poll_ms: self.poll_ms.or(base.poll_ms),
        }
    }
}
