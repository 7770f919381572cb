//! Process-level primitives every layer shares: running a shell command under a timeout in its
//! own process group, the per-run lock, the stop flag set by SIGINT/SIGTERM, the wall clock and
//! where a run's files live.
//!
//! This module is a leaf: it uses nothing else of the crate, so the engine, the gates, the merge
//! coordinator, the forge and the orchestrator can all reach it without reaching into each other.

pub mod batch;
pub mod capture;
pub mod command_env;
pub mod denied;
mod lock;
pub mod process;
mod run_dir;
pub mod secret_env;
mod signal;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use lock::{LockError, RunLock, process_exists};
pub use process::{groups_of_run, kill_group};
pub use run_dir::RunDir;
pub use signal::install as install_signal_handlers;

/// Default longest time a worker or validation command may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);

/// Returns the directory holding the store and per-run files: `<common-dir>/orchestra`.
pub fn state_dir(common_dir: &Path) -> PathBuf {
    common_dir.join("orchestra")
}

/// Returns where throwaway checkouts (scratch worktrees, eval attempt repositories) go: beside
/// the repository like packet worktrees (`<repo-parent>/.orchestra/<repo-name>/<kind>`) when
/// the common git directory is a working tree's `.git`, so that no tool walking up from such a
/// checkout (pytest's rootdir search, Cargo's workspace search, Node's `node_modules` lookup, a
/// worker's `cd ..`) reaches the user's working tree or its `.git`; under the state directory
/// otherwise (a git directory kept apart from its working tree).
pub fn outside_dir(common_dir: &Path, kind: &str) -> PathBuf {
    match common_dir.file_name() {
        Some(name) if name == ".git" => match common_dir.parent() {
            Some(top) => crate::names::default_worktree_root(top).join(kind),
            None => state_dir(common_dir).join(kind.trim_start_matches('.')),
        },
        _ => state_dir(common_dir).join(kind.trim_start_matches('.')),
    }
}

/// Returns the directory of one run's files (logs, locks, reports) under the state directory;
/// [`RunDir`] names the files in it.
pub fn run_dir(common_dir: &Path, run: &str) -> PathBuf {
    state_dir(common_dir).join("runs").join(run)
}

/// Returns milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throwaway_checkouts_go_beside_a_working_tree_never_under_it() {
        let dir = outside_dir(Path::new("/src/app/.git"), ".scratch");
        assert_eq!(dir, Path::new("/src/.orchestra/app/.scratch"));
        assert!(!dir.starts_with("/src/app"));
    }

    #[test]
    fn a_git_directory_apart_from_its_tree_keeps_them_in_its_state_directory() {
        assert_eq!(
            outside_dir(Path::new("/srv/app.git"), ".evals"),
            Path::new("/srv/app.git/orchestra/evals")
        );
    }
}
