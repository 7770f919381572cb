//! The offline demo: a small sample repository (from `fixtures/demo/repo`) and a scripted
//! model (from `fixtures/demo/model.json`), both embedded in the binary, so `git orchestra
//! demo` shows the whole `start` flow — clarification with assumptions, a plan revised after
//! review, parallel worktrees, a dependency, an overlap that ends in a merge conflict resolved
//! by its agent, integration with validation, and the report — with no key and no network.

pub mod mock;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::{Price, ProfileConfig, RepoConfig};
use crate::git::{Identity, commit};
use crate::orchestrator::{StartRequest, StartSettings};

pub use mock::{MockModel, Script, ScriptError, parse_scripts};

/// The demo's objective.
pub const OBJECTIVE: &str = "Add farewell() and a configurable punctuation to the greeter";

/// The sample repository's files.
pub const SAMPLE_FILES: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../fixtures/demo/repo/README.md"),
    ),
    (
        "greeter/__init__.py",
        include_str!("../../fixtures/demo/repo/greeter/__init__.py"),
    ),
    (
        "greeter/core.py",
        include_str!("../../fixtures/demo/repo/greeter/core.py"),
    ),
    (
        "tests/check.sh",
        include_str!("../../fixtures/demo/repo/tests/check.sh"),
    ),
];

/// The scripted model's conversations.
pub const MODEL_SCRIPT: &str = include_str!("../../fixtures/demo/model.json");

/// Why the demo could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("cannot create the sample repository in {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} exists and is not empty; pass a new directory")]
    NotEmpty { path: PathBuf },
    #[error("git failed while creating the sample repository: {0}")]
    Git(#[from] crate::git::GitError),
    #[error(transparent)]
    Script(#[from] ScriptError),
}

/// The identity the sample repository's first commit is made under.
pub const DEMO_IDENTITY: Identity = Identity::new("git-orchestra demo", "demo@localhost.invalid");

/// Creates the sample repository in `dir` (a new or empty directory) on branch `main`, with
/// one commit; returns its path.
pub fn create_sample(dir: &Path) -> Result<PathBuf, DemoError> {
    let io = |source| DemoError::Io {
        path: dir.to_path_buf(),
        source,
    };
    if dir.exists() && fs_err::read_dir(dir).map_err(io)?.next().is_some() {
        return Err(DemoError::NotEmpty {
            path: dir.to_path_buf(),
        });
    }
    for (path, text) in SAMPLE_FILES {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            fs_err::create_dir_all(parent).map_err(io)?;
        }
        fs_err::write(&file, text).map_err(io)?;
    }
    // The sample's history is the demo's own, not the engine's and not the user's.
    commit::init_with_files(dir, "main", "Sample greeter", &DEMO_IDENTITY)?;
    Ok(dir.to_path_buf())
}

/// Returns the repository configuration that points every role at the scripted model at
/// `url` (with a made-up price, so the report shows cost accounting).
pub fn config(url: &str) -> RepoConfig {
    let mut profiles = BTreeMap::new();
    profiles.insert(
        "default".to_string(),
        ProfileConfig {
            provider: "openai-compatible".into(),
            model: "scripted".into(),
            base_url: Some(url.to_string()),
            timeout_secs: Some(30),
            ..Default::default()
        },
    );
    let mut prices = BTreeMap::new();
    prices.insert(
        "scripted".to_string(),
        Price {
            input_per_mtok: 0.15,
            output_per_mtok: 0.60,
        },
    );
    RepoConfig {
        profiles,
        prices,
        ..Default::default()
    }
}

/// Returns the `start` request the demo makes: `--yes --merge`, clarification on.
pub fn request(worktree_root: &Path) -> StartRequest {
    StartRequest {
        objective: OBJECTIVE.to_string(),
        settings: StartSettings {
            yes: true,
            merge: true,
            clarify: true,
            worker_cmd: None,
            agent: None,
            max_parallel: Some(4),
            budget: Default::default(),
            docs: false,
            tests: false,
            publish: None,
            executor: None,
        },
        timeout: Duration::from_secs(120),
        worktree_root: Some(worktree_root.to_path_buf()),
        setup: None,
        target: None,
        crash_after_events: None,
        crash_after_steps: None,
        answer_wait: Duration::from_secs(1),
        fix_rounds: crate::config::DEFAULT_FIX_ROUNDS,
    }
}

/// Starts the scripted model with the embedded conversations.
pub fn serve() -> Result<MockModel, DemoError> {
    Ok(MockModel::start(parse_scripts(MODEL_SCRIPT)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_script_parses_and_names_every_phase() {
        let scripts = parse_scripts(MODEL_SCRIPT).unwrap();
        let names: Vec<&str> = scripts.iter().map(|s| s.name.as_str()).collect();
        for n in [
            "clarifier",
            "planner",
            "plan-review",
            "p1",
            "p2",
            "p3",
            "p4",
            "p3-resolve",
            "p3-review-reject",
            "p3-fix",
        ] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
    }
}
