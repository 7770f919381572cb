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

pub use lock::{LockError, RunLock};
pub use process::kill_group;
pub use run_dir::RunDir;
pub use signal::install as install_signal_handlers;

/// Default longest time a worker or validation command may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);

/// Returns the directory holding the store and per-run files: `<common-dir>/orchestra`.
pub fn state_dir(common_dir: &Path) -> PathBuf {
    common_dir.join("orchestra")
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
