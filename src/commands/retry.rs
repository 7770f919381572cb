//! `git orchestra retry [<run>] [<packet>…]`: runs a finished run's failed or skipped packets
//! again, with their dependents, and integrates them as the run was before.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::run::Restart;

use super::drive::drive;
use super::{CommandError, lifecycle_error, open_run};

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
    let run = open_run(&repo, args.run.as_deref())?;
    let unnamed = |e: CommandError| super::hint_unnamed(e, run.picked(), run.id());
    let retried = run
        .retry(&config, &args.packets, args.note.as_deref())
        .map_err(lifecycle_error)
        .map_err(unnamed)?;
    let id = run.id();
    match retried.restart {
        // A `start` run goes on through its own workflow: its agents work the packets, then
        // it integrates, tests and reports as it was asked to.
        Restart::Workflow(req) => {
            if !args.quiet && !args.json {
                if retried.packets.is_empty() {
                    eprintln!("retrying run {id} from where it stopped");
                } else {
                    eprintln!("retrying {} of run {id}", retried.packets.join(", "));
                }
            }
            super::start::drive_start(&repo, &config, *req, args.quiet)
        }
        Restart::Engine => {
            if !args.quiet && !args.json {
                eprintln!("retrying {} of run {id}", retried.packets.join(", "));
            }
            drive(&repo, id, &config, args.quiet, args.json)
        }
    }
}
