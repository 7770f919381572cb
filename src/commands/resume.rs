//! `git orchestra resume`: continues an interrupted or crashed run.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::run::Restart;

use super::drive::drive;
use super::{CommandError, lifecycle_error, open_run};

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
    let run = open_run(&repo, args.run.as_deref())?;
    let unnamed = |e: CommandError| super::hint_unnamed(e, run.picked(), run.id());
    match run
        .resume(&config)
        .map_err(lifecycle_error)
        .map_err(unnamed)?
    {
        // Runs made by `start` continue their whole workflow, not only the engine's part.
        Restart::Workflow(req) => {
            super::start::drive_start(&repo, &config, *req, args.quiet).map_err(unnamed)
        }
        // The run's own "resuming run" progress line says it; a second one here said it twice.
        Restart::Engine => drive(&repo, run.id(), &config, args.quiet, args.json),
    }
}
