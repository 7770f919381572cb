//! `git orchestra resume`: continues an interrupted or crashed run.

use std::path::Path;

use clap::Args;
use git_orchestra::engine;
use git_orchestra::git::RepoInfo;

use super::CommandError;
use super::drive::drive;
use super::engine_error;

/// Continues a run after a crash or Ctrl-C: finished packets are kept, half-done ones restart
/// from their worktree's state.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run to resume; default: the newest unfinished run.
    run: Option<String>,
    /// Print only the final summary.
    #[arg(long, short)]
    quiet: bool,
    /// Print the final summary as JSON.
    #[arg(long)]
    json: bool,
}

/// Resumes the chosen run and drives it to the end.
pub fn cmd_resume(cwd: &Path, args: &ResumeArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let config = super::load_config(&repo)?;
    // Runs made by `start` continue their whole workflow, not only the engine's part.
    let start_run = match &args.run {
        Some(id) => git_orchestra::status::start_state(&repo.common_dir, id).map(|_| id.clone()),
        None => git_orchestra::status::latest_unfinished_start(&repo.common_dir),
    };
    if let Some(run) = start_run {
        return super::start::resume_start(&repo, &config, &run, args.quiet);
    }
    let run = match &args.run {
        Some(id) => id.clone(),
        None => engine::latest_unfinished(&repo).map_err(engine_error)?,
    };
    if !args.quiet && !args.json {
        eprintln!("resuming run {run}");
    }
    drive(&repo, &run, &config, args.quiet, args.json)
}
