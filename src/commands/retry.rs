//! `git orchestra retry [<run>] [<packet>…]`: runs a finished run's failed or skipped packets
//! again, with their dependents, and integrates them as the run was before.

use std::path::Path;

use clap::Args;
use git_orchestra::engine;
use git_orchestra::git::RepoInfo;
use git_orchestra::merge;
use git_orchestra::store::{Event, Store};

use super::drive::drive;
use super::{CommandError, engine_error, pick_run};

/// Runs a finished run's failed or skipped packets again.
///
/// Each packet starts from the work its worktree and branch already hold, on its next attempt;
/// skipped packets that depend on it run again with it. With --note the workers get your words
/// with their task (our agents in their prompt, external workers in ORCHESTRA_FIXES_FILE).
/// A run that was merged before is merged again afterwards. A run made by `start` goes on
/// through its workflow: its agents work the packets, then it integrates and reports as it was
/// started to.
#[derive(Debug, Args)]
pub struct RetryArgs {
    /// The run (default: the newest run; see `git orchestra status`).
    run: Option<String>,
    /// The packets to retry (default: every failed or skipped packet).
    packets: Vec<String>,
    /// A note for the packets' workers, e.g. "the tests need the fixture in tests/data".
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
    /// Print only the final summary.
    #[arg(long, short)]
    quiet: bool,
    /// Print the final summary as JSON.
    #[arg(long)]
    json: bool,
}

/// Reopens the run's packets, drives them, and merges when the run was merged before.
pub fn cmd_retry(cwd: &Path, args: &RetryArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    // The run named, else the newest one `status` shows (a `start` run that stopped before
    // execution included): never an older run that happens to be retryable.
    let run = pick_run(&repo, args.run.as_deref())?;
    let unnamed = |e: CommandError| super::hint_unnamed(e, args.run.is_none(), &run);
    if git_orchestra::status::start_state(&repo.common_dir, &run).is_some() {
        // A `start` run goes on through its own workflow: its agents work the packets, then it
        // integrates, tests and reports as it was asked to.
        let reopened = git_orchestra::orchestrator::retry::reopen(
            &repo,
            &run,
            &args.packets,
            args.note.as_deref(),
        )
        .map_err(super::start::start_error)
        .map_err(unnamed)?;
        if !args.quiet && !args.json {
            if reopened.is_empty() {
                eprintln!("retrying run {run} from where it stopped");
            } else {
                eprintln!("retrying {} of run {run}", reopened.join(", "));
            }
        }
        return super::start::resume_start(&repo, &config, &run, args.quiet);
    }
    if was_merged(&repo, &run)? {
        // Integrated again as it was before, by the engine once the packets are final: the
        // request is journaled before the run reopens, so a resume after a crash integrates
        // too (a request left by a retry that refused stays unanswered until the next one).
        let sandboxes =
            git_orchestra::agent::sandbox::command_sandboxes(&repo.common_dir, &config.sandbox);
        let mut store = Store::open(&repo.common_dir).map_err(CommandError::internal)?;
        let before =
            merge::phase::last_request(&store, &run, &sandboxes).map_err(CommandError::internal)?;
        let opts = before.unwrap_or_else(|| merge::MergeOptions::from_config(&config, sandboxes));
        merge::phase::request(&mut store, &run, &opts).map_err(CommandError::internal)?;
    }
    let reopened = engine::reopen(&repo, &run, &args.packets, args.note.as_deref())
        .map_err(engine_error)
        .map_err(unnamed)?;
    if !args.quiet && !args.json {
        eprintln!("retrying {} of run {run}", reopened.join(", "));
    }
    drive(&repo, &run, &config, args.quiet, args.json)
}

/// Returns true if and only if the run was integrated before (`run --merge` or `merge`).
fn was_merged(repo: &RepoInfo, run: &str) -> Result<bool, CommandError> {
    let store = Store::open(&repo.common_dir).map_err(CommandError::internal)?;
    let started = store
        .events_of_kind(run, git_orchestra::store::EventKind::MergeStarted)
        .map_err(CommandError::internal)?;
    Ok(started
        .iter()
        .any(|e| matches!(e.event, Event::MergeStarted { .. })))
}
