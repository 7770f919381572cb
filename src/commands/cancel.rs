//! `git orchestra cancel`: stops a run for good, saving its packets' unsaved work.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use git_orchestra::engine;
use git_orchestra::git::RepoInfo;

use super::CommandError;
use super::engine_error;
use super::gc::print_report;

/// Cancels a run: stops the process driving it, marks it cancelled, and removes its worktrees
/// after saving unsaved work to refs/orchestra/backup/<run>/<packet>.
#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The run to cancel; default: the newest unfinished run.
    run: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Cancels the run and prints what was cleaned up.
pub fn cmd_cancel(cwd: &Path, args: &CancelArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    // A `start` run is cancelled as a workflow first (its driver stops), then its packets.
    let start_run = match &args.run {
        Some(id) => git_orchestra::status::start_state(&repo.common_dir, id).map(|_| id.clone()),
        None => git_orchestra::status::latest_unfinished_start(&repo.common_dir),
    };
    if let Some(run) = &start_run
        && !super::pause::cancel_start(&repo, run)?
    {
        if !args.json {
            println!("cancelled run {run}");
        }
        return Ok(());
    }
    let run = match start_run.as_ref().or(args.run.as_ref()) {
        Some(id) => id.clone(),
        None => engine::latest_unfinished(&repo).map_err(engine_error)?,
    };
    let report = engine::cancel(&repo, &run, Duration::from_secs(15)).map_err(engine_error)?;
    if !args.json {
        println!("cancelled run {run}");
    }
    print_report(&report, args.json)
}
