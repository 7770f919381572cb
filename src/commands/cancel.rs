//! `git orchestra cancel`: stops a run for good, saving its packets' unsaved work.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;

use super::gc::print_report;
use super::{CommandError, lifecycle_error, open_run};

/// Cancels a run: stops the process driving it, marks it cancelled, and removes its worktrees
/// after saving unsaved work to refs/orchestra/backup/<run>/<packet>.
#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The run to cancel (default: the newest run; see `git orchestra status`).
    run: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Cancels the run and prints what was cleaned up.
pub fn cmd_cancel(cwd: &Path, args: &CancelArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    // The newest run `status` shows, never an older unfinished one: a finished newest run is
    // named and left alone (naming it cleans it up, as `gc` does).
    let run = open_run(&repo, args.run.as_deref())?;
    let cancelled = run
        .cancel()
        .map_err(lifecycle_error)
        .map_err(|e| super::hint_unnamed(e, run.picked(), run.id()))?;
    if !args.json {
        println!("cancelled run {}", run.id());
    }
    match &cancelled.cleaned {
        Some(report) => print_report(report, args.json),
        None => Ok(()),
    }
}
