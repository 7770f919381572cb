//! The tables of a run's shape: `[worktree]`, `[run]` and `[start]`, and the settings read from them.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::RepoConfig;

/// Default fix rounds of a packet whose scope check, validation or review fails.
pub const DEFAULT_FIX_ROUNDS: u32 = 2;

/// How many clean worktrees of integrated packets are parked when `[worktree] recycle` is not
/// set: a small pool makes a repository's later packets nearly free to start.
pub const DEFAULT_RECYCLE: usize = 2;

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
    /// `0` turns recycling off). In a run that integrates its packets (`run --merge`) a
    /// succeeded packet's worktree is parked at once, the pool holding up to the run's
    /// `max_parallel` until the run ends.
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
    /// Default cap on workers running at once, packets and their candidates together (default:
    /// the plan's `max_parallel`, else 4).
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
    /// Which packets of the approved plan fan out to best-of-N candidates: `"auto"` (the
    /// packets the planner or the plan reviewer marked `risky`, `[best_of] n` candidates
    /// each) or a number of candidates (1 to 8) for every packet; unset, none does. A
    /// packet's own `attempts` always wins.
    #[serde(default)]
    pub best_of: Option<crate::plan::BestOfMode>,
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
}

impl WorktreeConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: WorktreeConfig) -> WorktreeConfig {
        WorktreeConfig {
            root: self.root.or(base.root),
            setup: self.setup.or(base.setup),
            recycle: self.recycle.or(base.recycle),
            keep_ignored: self.keep_ignored.or(base.keep_ignored),
            sparse: self.sparse.or(base.sparse),
            sparse_include: self.sparse_include.or(base.sparse_include),
        }
    }
}

impl RunConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: RunConfig) -> RunConfig {
        RunConfig {
            timeout_secs: self.timeout_secs.or(base.timeout_secs),
            max_parallel: self.max_parallel.or(base.max_parallel),
            fix_rounds: self.fix_rounds.or(base.fix_rounds),
            keep_worktrees: self.keep_worktrees.or(base.keep_worktrees),
            retries: self.retries.or(base.retries),
            retry_delay_ms: self.retry_delay_ms.or(base.retry_delay_ms),
        }
    }
}

impl StartConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: StartConfig) -> StartConfig {
        StartConfig {
            clarify: self.clarify.or(base.clarify),
            docs: self.docs.or(base.docs),
            tests: self.tests.or(base.tests),
            wait_line_secs: self.wait_line_secs.or(base.wait_line_secs),
            best_of: self.best_of.or(base.best_of),
        }
    }
}
