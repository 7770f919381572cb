//! `git orchestra pause [<run>]`: stops a `start` run cleanly; `resume` continues it.

use std::path::Path;

use clap::Args;
use git_orchestra::git::RepoInfo;
use git_orchestra::run::{Run, RunRef};

use super::{CommandError, lifecycle_error};

/// Pauses a running `start` run: its agents stop, its work is kept, and `git orchestra
/// resume` continues it from the phase it was in.
#[derive(Debug, Args)]
pub struct PauseArgs {
    /// The run to pause (default: the newest run; see `git orchestra status`).
    run: Option<String>,
}

/// Journals the request and signals the process driving the run.
pub fn cmd_pause(cwd: &Path, args: &PauseArgs) -> Result<(), CommandError> {
    let repo = RepoInfo::discover(cwd)?;
    let run = open_start(&repo, args.run.as_deref(), "pauses")?;
    run.pause().map_err(lifecycle_error)?;
    let id = run.id();
    eprintln!("asked run {id} to pause; `git orchestra resume {id}` continues it");
    Ok(())
}

/// Opens `run`, or the newest run `git orchestra status` shows, checking it is a `start`
/// run: only those pause or have a report, and an older `start` run is never picked in the
/// newest one's place. `what` says what only a `start` run does, e.g. "pauses".
pub fn open_start(repo: &RepoInfo, run: Option<&str>, what: &str) -> Result<Run, CommandError> {
    Run::open_start(repo, RunRef::from_arg(run), what).map_err(|e| {
        let newest = match &e {
            git_orchestra::run::LifecycleError::NotStart { run, .. } => Some(run.clone()),
            _ => None,
        };
        let err = lifecycle_error(e);
        match newest {
            Some(newest) => super::hint_unnamed(err, true, &newest),
            None => err,
        }
    })
}
