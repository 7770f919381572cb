//! `git orchestra cancel`: stops a run for good, saving its packets' unsaved work.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use git_orchestra::engine;
use git_orchestra::git::RepoInfo;

use super::gc::print_report;
use super::{CommandError, engine_error, pick_run};

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
    let run = match &args.run {
        Some(id) => id.clone(),
        None => pick_run(&repo, None)?,
    };
    let unnamed = |e: CommandError| super::hint_unnamed(e, args.run.is_none(), &run);
    let start = git_orchestra::status::start_state(&repo.common_dir, &run);
    if args.run.is_none() {
        match &start {
            Some(s) if s.phase.is_final() => {
                return Err(unnamed(CommandError::user(format!(
                    "run `{run}` is {}; nothing to cancel",
                    s.phase
                ))));
            }
            Some(_) => {}
            None => engine::check_resumable(&repo, &run)
                .map_err(|e| match e {
                    engine::EngineError::NotResumable { run, state } => {
                        CommandError::user(format!("run `{run}` is {state}; nothing to cancel"))
                    }
                    other => engine_error(other),
                })
                .map_err(unnamed)?,
        }
    }
    // A `start` run is cancelled as a workflow first (its driver stops), then its packets.
    if start.is_some() && !super::pause::cancel_start(&repo, &run)? {
        if !args.json {
            println!("cancelled run {run}");
        }
        return Ok(());
    }
    let report = engine::cancel(&repo, &run, Duration::from_secs(15)).map_err(engine_error)?;
    if !args.json {
        println!("cancelled run {run}");
    }
    print_report(&report, args.json)
}
