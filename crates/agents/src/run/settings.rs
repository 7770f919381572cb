//! The settings that go with a run, read as one record: its worker command (the engine's
//! `runs` row), and the agent CLI and executor it was made with (the store's kept settings).
//!
//! Runs made before the store kept them have them in two loose files of their run directory
//! (`agent-cli`, `executor`); those are read, and moved forward into the store, the first time
//! the settings are asked for, so old runs resume as they were started.

use std::path::Path;

use orchestra_core::config::ExecutorKind;
use orchestra_core::store::{KeptSettings, Store};
use orchestra_git::git::RepoInfo;

use super::{LifecycleError, Run};

/// What a run was started with that a resume needs again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// The external worker command (`--worker-cmd`), if the engine's run has one.
    pub worker_cmd: Option<String>,
    /// The agent CLI working every packet (`--agent <name>`).
    pub agent_cli: Option<String>,
    /// Where the packets run (`--executor`), when it was kept.
    pub executor: Option<ExecutorKind>,
}

impl Run {
    /// Returns the settings kept with the run `id`, which need not exist yet as an engine run.
    pub fn settings_of(repo: &RepoInfo, id: &str) -> Result<Settings, LifecycleError> {
        let worker_cmd = Run::existing(repo, id)?.and_then(|r| r.worker_cmd);
        let kept = kept(&repo.common_dir, id)?;
        Ok(Settings {
            worker_cmd,
            agent_cli: kept.agent_cli,
            executor: kept.executor.as_deref().and_then(executor_kind),
        })
    }

    /// Keeps `--agent <name>` with the run `id`, so a resumed run keeps its CLI.
    pub fn keep_agent_cli(repo: &RepoInfo, id: &str, name: &str) -> Result<(), LifecycleError> {
        update(&repo.common_dir, id, |s| {
            s.agent_cli = Some(name.to_string())
        })
    }

    /// Keeps where the run `id`'s packets run, so resuming it does not depend on the
    /// configuration of that day.
    pub fn keep_executor(
        repo: &RepoInfo,
        id: &str,
        kind: ExecutorKind,
    ) -> Result<(), LifecycleError> {
        update(&repo.common_dir, id, |s| {
            s.executor = Some(kind.as_str().to_string())
        })
    }
}

fn executor_kind(name: &str) -> Option<ExecutorKind> {
    serde_json::from_value(serde_json::Value::String(name.trim().to_string())).ok()
}

/// Returns the settings kept with `run`: the store's record, else (a run made before the store
/// kept them) the loose files of its run directory, moved into the store.
fn kept(common_dir: &Path, run: &str) -> Result<KeptSettings, LifecycleError> {
    let store = Store::open_existing(common_dir)?;
    if let Some(kept) = store
        .as_ref()
        .map(|s| s.kept_settings(run))
        .transpose()?
        .flatten()
    {
        return Ok(kept);
    }
    let dir = orchestra_sys::exec::RunDir::new(common_dir, run);
    let read = |path: std::path::PathBuf| {
        fs_err::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let legacy = KeptSettings {
        agent_cli: read(dir.agent_cli_choice()),
        executor: read(dir.executor_choice()),
    };
    if let Some(store) = store
        && legacy != KeptSettings::default()
    {
        store.keep_settings(run, &legacy)?;
    }
    Ok(legacy)
}

/// Changes the settings kept with `run` by `change`.
fn update(
    common_dir: &Path,
    run: &str,
    change: impl FnOnce(&mut KeptSettings),
) -> Result<(), LifecycleError> {
    let mut settings = kept(common_dir, run)?;
    change(&mut settings);
    Store::open(common_dir)?.keep_settings(run, &settings)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_made_before_the_store_kept_its_settings_reads_them_from_its_loose_files() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path();
        Store::open(common).unwrap();
        let run_dir = orchestra_sys::exec::RunDir::new(common, "old");
        fs_err::create_dir_all(run_dir.path()).unwrap();
        fs_err::write(run_dir.agent_cli_choice(), "claude\n").unwrap();
        fs_err::write(run_dir.executor_choice(), "ssh").unwrap();
        let expected = KeptSettings {
            agent_cli: Some("claude".into()),
            executor: Some("ssh".into()),
        };
        assert_eq!(kept(common, "old").unwrap(), expected);
        // Moved forward: the store holds them now, the files no longer matter.
        fs_err::remove_dir_all(run_dir.path()).unwrap();
        assert_eq!(kept(common, "old").unwrap(), expected);
        assert_eq!(executor_kind("ssh"), Some(ExecutorKind::Ssh));
        assert_eq!(
            executor_kind("github-actions"),
            Some(ExecutorKind::GithubActions)
        );
    }

    #[test]
    fn keeping_one_setting_keeps_the_other() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path();
        update(common, "r", |s| s.agent_cli = Some("codex".into())).unwrap();
        update(common, "r", |s| s.executor = Some("local".into())).unwrap();
        let kept = kept(common, "r").unwrap();
        assert_eq!(kept.agent_cli.as_deref(), Some("codex"));
        assert_eq!(kept.executor.as_deref(), Some("local"));
    }
}
