//! Rewrites a commit message as an issue statement for an evaluation task
//! (`eval tasks --objective-from model`): the `init` role reads the code at the task's base and
//! states the problem the commit solves the way a user would report it, without the solution.
//!
//! The role reads a scratch checkout of the base, never the repository's own working tree:
//! that holds the solution and later commits, which a statement written after reading them
//! could give away.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use orchestra_core::config::RepoConfig;
use orchestra_core::gate::ScratchWorktree;
use orchestra_git::git::RepoInfo;

use super::models::RoleModels;

/// What the role is told beside its own instructions.
const GUIDANCE: &str = "Reply with the issue statement only: a title line, a blank line, then the body. No preamble, no code fences.";

/// Returns the commit message `message` rewritten by the `init` role as an issue statement
/// for the task that starts at `base`: what is wrong or missing, as its user would report it,
/// naming no solution. The role reads a scratch checkout of `base` (removed afterwards); its
/// transcript goes to `.git/orchestra/eval-objective.log`; its model turns to a scratch
/// journal removed afterwards.
pub fn issue_statement(
    repo: &RepoInfo,
    config: &RepoConfig,
    base: &str,
    message: &str,
    stop: &AtomicBool,
) -> Result<String, String> {
    let roles = crate::agent::Roles::load_with_trust(&repo.toplevel, config.trusted)
        .map_err(|e| e.to_string())?;
    let state = orchestra_sys::exec::state_dir(&repo.common_dir);
    let scratch = ScratchWorktree::create(repo, base, "eval-objective")
        .map_err(|e| format!("cannot check out the base {base}: {e}"))?;
    let journal_dir = state.join(format!("eval-objective-{}", std::process::id()));
    let answer = ask(
        roles,
        config,
        &journal_dir,
        scratch.path(),
        &state.join("eval-objective.log"),
        message,
        stop,
    );
    let _ = fs_err::remove_dir_all(&journal_dir);
    drop(scratch);
    answer
}

/// Asks the `init` role, reading `root`, for the issue statement of `message`.
fn ask(
    roles: crate::agent::Roles,
    config: &RepoConfig,
    journal_dir: &Path,
    root: &Path,
    transcript: &Path,
    message: &str,
    stop: &AtomicBool,
) -> Result<String, String> {
    let journal = super::StartJournal::open(journal_dir, "eval-objective")
        .map(|j| std::sync::Arc::new(std::sync::Mutex::new(j)))
        .map_err(|e| format!("cannot open a scratch journal: {e}"))?;
    let models = RoleModels::new(roles, config.clone(), journal);
    let prompt = format!(
        "Rewrite this commit message as the issue a user would have filed before the change: what is wrong or missing and how it shows, in the words of someone who has not seen the fix. Do not name the solution: no function bodies, no diff, no file or line to change, no wording taken from how the fix works. The repository you can read is as it was before the change.\n\nCommit message:\n\n{message}"
    );
    models
        .explore("init", GUIDANCE, &prompt, root, transcript, stop)
        .map(|s| s.trim().to_string())
        .map_err(|e| e.to_string())
}
