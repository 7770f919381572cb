//! `git orchestra resume`: continues an interrupted or crashed run.

use std::path::Path;

use clap::Args;
use git_orchestra::engine;
use git_orchestra::git::RepoInfo;

use super::drive::drive;
use super::{CommandError, engine_error, pick_run};

/// Continues a run after a crash or Ctrl-C: finished packets are kept, half-done ones restart
/// from their worktree's state.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run to resume (default: the newest run; see `git orchestra status`).
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
    // The newest run `status` shows, never an older unfinished one: that one is named.
    let run = match &args.run {
        Some(id) => id.clone(),
        None => pick_run(&repo, None)?,
    };
    let unnamed = |e: CommandError| super::hint_unnamed(e, args.run.is_none(), &run);
    // Runs made by `start` continue their whole workflow, not only the engine's part.
    if git_orchestra::status::start_state(&repo.common_dir, &run).is_some() {
        return super::start::resume_start(&repo, &config, &run, args.quiet).map_err(unnamed);
    }
    if args.run.is_none() {
        engine::check_resumable(&repo, &run)
            .map_err(engine_error)
            .map_err(unnamed)?;
    }
    // The run's own "resuming run" progress line says it; a second one here said it twice.
    drive(&repo, &run, &config, args.quiet, args.json)
}
